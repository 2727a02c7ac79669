//! Waits for a verdict on what is live: one named object, or every object a label selector matches. A verdict
//! function sees the objects present now (kube-runtime's reflector store keeps that picture up to date from a
//! watcher that re-establishes a dropped watch with backoff) and says done, not yet (and what it sees), or
//! failed. Conditions compose like kube-runtime's `await_condition` conditions; kube-runtime's own `Condition`s
//! (e.g. `conditions::is_deleted(uid)`) become verdicts through [`on`].
use super::{OpError, describe_api};
use crate::protocol::{Ctx, log};
use futures::StreamExt;
use kube::Resource;
use kube::api::Api;
use kube::runtime::wait::Condition;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::time::{Duration, Instant};

/// A wait's verdict on the objects seen so far.
pub enum Verdict<T> {
    /// Done; the wait returns this value.
    Ready(T),
    /// Not yet; the text says what is seen now (it ends up in the timeout error).
    Pending(String),
    /// Liqo reported a failure: stop waiting. `hint` is the next step for the user.
    Failed { reason: String, hint: String },
}

/// A kube-runtime [`Condition`] as a verdict: ready once it holds, otherwise pending with what `seen` says of
/// the object (the timeout error quotes it).
pub fn on<K>(condition: impl Condition<K>, seen: impl Fn(Option<&K>) -> String) -> impl Fn(Option<&K>) -> Verdict<()> {
    move |o| if condition.matches_object(o) { Verdict::Ready(()) } else { Verdict::Pending(seen(o)) }
}

/// What a wait is about: the object (for messages) and how to watch it.
pub struct WaitTarget {
    pub object: String,
    pub waiting_for: String,
    pub config: watcher::Config,
}

impl WaitTarget {
    /// One object by name.
    pub fn named<K: Resource<DynamicType = ()>>(
        api: &Api<K>,
        name: &str,
        waiting_for: impl Into<String>,
    ) -> WaitTarget {
        WaitTarget {
            object: describe_api(api, name),
            waiting_for: waiting_for.into(),
            config: watcher::Config::default().fields(&format!("metadata.name={name}")),
        }
    }
    /// All objects with a label selector (e.g. the Connection of a peer, found by label as Liqo does).
    pub fn labelled<K: Resource<DynamicType = ()>>(
        api: &Api<K>,
        selector: &str,
        waiting_for: impl Into<String>,
    ) -> WaitTarget {
        let scope = api.namespace().map(|ns| format!(" in namespace {ns}")).unwrap_or_default();
        WaitTarget {
            object: format!("{} labelled {selector}{scope}", K::kind(&())),
            waiting_for: waiting_for.into(),
            config: watcher::Config::default().labels(selector),
        }
    }
}

/// Watches the target until `verdict` says Ready or Failed, the timeout passes, or the user cancels. The verdict
/// sees every matching object currently present, in name order (an empty slice when none exists yet), once the
/// watcher's initial listing is complete and after every change.
pub async fn wait_until<K, T>(
    ctx: &Ctx,
    api: &Api<K>,
    target: WaitTarget,
    timeout: Duration,
    verdict: impl Fn(&[K]) -> Verdict<T>,
) -> Result<T, OpError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let start = Instant::now();
    let (store, writer) = reflector::store();
    let mut stream = reflector(writer, watcher(api.clone(), target.config.clone()).default_backoff()).boxed();
    let mut last_seen = String::from("no matching object yet");
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    loop {
        let event = tokio::select! {
            _ = ctx.cancel.cancelled() => {
                return Err(OpError::Cancelled { object: target.object, waiting_for: target.waiting_for });
            }
            _ = &mut deadline => None,
            e = stream.next() => e,
        };
        match event {
            None => {
                return Err(OpError::Timeout {
                    object: target.object,
                    waiting_for: target.waiting_for,
                    last_seen,
                    after: start.elapsed(),
                });
            }
            // Transient watch errors: the watcher retries with backoff; the store keeps the last known objects.
            Some(Err(_)) => continue,
            // The store swaps in a fresh listing only at InitDone; judge complete pictures only.
            Some(Ok(watcher::Event::Init | watcher::Event::InitApply(_))) => continue,
            Some(Ok(watcher::Event::InitDone | watcher::Event::Apply(_) | watcher::Event::Delete(_))) => {}
        }
        let mut objects: Vec<K> = store.state().iter().map(|o| K::clone(o)).collect();
        objects.sort_by(|a, b| a.meta().name.cmp(&b.meta().name));
        let judged = verdict(&objects);
        // When each change reached the provider and what it made of it (`TF_LOG_PROVIDER=trace`): the time from
        // Liqo's status write to the end of a wait is the sum of the watch's delivery and this judgement.
        if log::enabled(log::Level::Trace) {
            let outcome = match &judged {
                Verdict::Ready(_) => "ready",
                Verdict::Pending(_) => "pending",
                Verdict::Failed { .. } => "failed",
            };
            let elapsed = format!("{:.1}", start.elapsed().as_secs_f64() * 1000.0);
            let versions: Vec<&str> = objects.iter().filter_map(|o| o.meta().resource_version.as_deref()).collect();
            log::trace(
                "wait: watch event judged",
                &[
                    ("object", &target.object),
                    ("verdict", outcome),
                    ("elapsed_ms", &elapsed),
                    ("resource_versions", &versions.join(",")),
                ],
            );
        }
        match judged {
            Verdict::Ready(v) => return Ok(v),
            Verdict::Pending(now) => last_seen = now,
            Verdict::Failed { reason, hint } => {
                return Err(OpError::Failed { object: target.object, reason, hint });
            }
        }
    }
}

/// Waits on one named object; the verdict sees `None` while it does not exist.
pub async fn wait_for<K, T>(
    ctx: &Ctx,
    api: &Api<K>,
    name: &str,
    waiting_for: &str,
    timeout: Duration,
    verdict: impl Fn(Option<&K>) -> Verdict<T>,
) -> Result<T, OpError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let target = WaitTarget::named(api, name, waiting_for);
    wait_until(ctx, api, target, timeout, |objs: &[K]| verdict(objs.first())).await
}
