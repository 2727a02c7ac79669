//! What the acceptance tests read back after running a client: the state file, saved plans, plan output and
//! diagnostics, and polling for what Liqo or the simulator does asynchronously.
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams, PostParams};
use liqo_schema::liqo::ResourceSlice;
use serde_json::Value;

use crate::tf::{Plan, Run, Workdir};

/// Polls `check` every 200 ms until it returns `Some`, failing with `what` after `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<T>>>,
{
    until(timeout, Duration::from_millis(200), what, || {
        let looked = check();
        async move { Ok(looked.await?.into()) }
    })
    .await
}

/// What one look found: done, with a value, or not yet, with what was seen (for the error if it stays so).
pub enum Seen<T> {
    Done(T),
    NotYet(String),
}

/// `Some` is done; `None` is not yet, with nothing worth showing of what was seen.
impl<T> From<Option<T>> for Seen<T> {
    fn from(found: Option<T>) -> Self {
        found.map_or_else(|| Seen::NotYet(String::new()), Seen::Done)
    }
}

/// The error [`until`] and [`until_blocking`] fail with when time runs out: what was awaited, for how long, and
/// the last state seen. A caller to whom running out of time is no failure (a grace period before SIGKILL), or who
/// adds what is worth reading only then (a log's tail), tells it from a look's own error by
/// `err.is::<TimedOut>()`.
#[derive(Debug)]
pub struct TimedOut {
    pub what: String,
    pub timeout: Duration,
    pub last: String,
}

impl std::fmt::Display for TimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let TimedOut { what, timeout, last } = self;
        match last.is_empty() {
            true => write!(f, "{what} did not happen within {timeout:?}"),
            false => write!(f, "{what} did not happen within {timeout:?}; last seen: {last}"),
        }
    }
}

impl std::error::Error for TimedOut {}

/// Polls `look` every `every` until it is done, failing after `timeout` with [`TimedOut`] (`what` and the last
/// state seen); an error of `look` ends it at once. The one polling loop of the tests, with [`until_blocking`].
pub async fn until<T, F, Fut>(timeout: Duration, every: Duration, what: &str, mut look: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Seen<T>>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        match look().await? {
            Seen::Done(value) => return Ok(value),
            Seen::NotYet(last) if Instant::now() > deadline => {
                return Err(TimedOut { what: what.into(), timeout, last }.into());
            }
            Seen::NotYet(_) => tokio::time::sleep(every).await,
        }
    }
}

/// Looks at something every `every` for `period` and fails at the first look that is not as it must stay (`look`
/// errs, saying what it saw): the polling loop of "stays so", beside [`until`]'s "becomes so". Returns how many
/// looks passed (at least one).
pub async fn throughout<F, Fut>(period: Duration, every: Duration, what: &str, mut look: F) -> Result<usize>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    let end = Instant::now() + period;
    let mut looks = 0;
    loop {
        look().await.with_context(|| format!("{what} did not hold throughout {period:?} (look {})", looks + 1))?;
        looks += 1;
        if Instant::now() >= end {
            return Ok(looks);
        }
        tokio::time::sleep(every).await;
    }
}

/// [`until`] for code that is not async (a `#[test]`, a blocking task): sleeps the thread between looks.
pub fn until_blocking<T, F>(timeout: Duration, every: Duration, what: &str, mut look: F) -> Result<T>
where
    F: FnMut() -> Result<Seen<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        match look()? {
            Seen::Done(value) => return Ok(value),
            Seen::NotYet(last) if Instant::now() > deadline => {
                return Err(TimedOut { what: what.into(), timeout, last }.into());
            }
            Seen::NotYet(_) => std::thread::sleep(every),
        }
    }
}

/// The node's `Ready` condition is `True`.
pub fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The pod's `Ready` condition is `True`.
pub fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Node `name` exists on the cluster and is Ready.
pub async fn node_ready_on(client: &kube::Client, name: &str) -> Result<bool> {
    Ok(Api::<Node>::all(client.clone()).get_opt(name).await?.is_some_and(|n| node_ready(&n)))
}

/// Liqo keeps a peering up on `consumer`: a virtual node is Ready and a ResourceSlice is Accepted (Authentication
/// and Resources; Liqo's crd-replicator used the identity Secret to replicate it), each within two minutes.
pub async fn peering_up(consumer: &kube::Client, what: &str) -> Result<()> {
    let nodes: Api<Node> = Api::all(consumer.clone());
    eventually(Duration::from_secs(120), &format!("{what}: a Ready virtual node"), || async {
        let virtual_nodes = nodes.list(&ListParams::default().labels("liqo.io/type=virtual-node")).await?;
        let ready = virtual_nodes.items.iter().any(node_ready);
        Ok(ready.then_some(()))
    })
    .await?;
    let slices: Api<ResourceSlice> = Api::all(consumer.clone());
    eventually(Duration::from_secs(120), &format!("{what}: the ResourceSlice Accepted"), || async {
        let accepted = slices
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .any(|s| s.status.as_ref().is_some_and(|status| status.is_accepted()));
        Ok(accepted.then_some(()))
    })
    .await
}

/// One managed resource instance (`type.name`) of the state file, read from the file so that no command prints
/// sensitive values such as a kubeconfig. `None` when the state does not hold it.
pub fn instance(work: &Workdir, address: &str) -> Result<Option<Value>> {
    let path = work.path().join("terraform.tfstate");
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?)?;
    let (kind, name) = address.split_once('.').context("address")?;
    Ok(state["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["type"] == kind && r["name"] == name && r["mode"] == "managed")
        .map(|r| r["instances"][0].clone()))
}

/// The attributes of one resource instance in the state file; an error when it is not there.
pub fn attributes(work: &Workdir, address: &str) -> Result<Value> {
    Ok(instance(work, address)?.with_context(|| format!("{address} is not in the state"))?["attributes"].clone())
}

/// The saved plan [`planned_change`] reads and [`apply_planned`] applies.
const SAVED_PLAN: &str = "change.tfplan";

/// The change planned for `address` (from a saved plan, as JSON: `actions`, `before`, `after`). The plan stays
/// saved for [`apply_planned`].
pub async fn planned_change(work: &Workdir, address: &str) -> Result<Value> {
    let mut changes = planned_changes(work, &[address]).await?;
    Ok(changes.remove(0))
}

/// [`planned_change`] of each of `addresses`, in their order, from one plan.
pub async fn planned_changes(work: &Workdir, addresses: &[&str]) -> Result<Vec<Value>> {
    let out = format!("-out={SAVED_PLAN}");
    let plan = work.run(&["plan", &out, "-input=false", "-no-color"]).await?;
    ensure!(plan.success(), "{plan}");
    let show = work.run(&["show", "-json", "-no-color", SAVED_PLAN]).await?;
    ensure!(show.success(), "{show}");
    let doc: Value = serde_json::from_str(&show.stdout)?;
    let changes = doc["resource_changes"].as_array().cloned().unwrap_or_default();
    addresses
        .iter()
        .map(|address| {
            changes
                .iter()
                .find(|c| c["address"] == *address)
                .map(|c| c["change"].clone())
                .with_context(|| format!("the plan has no change for {address}"))
        })
        .collect()
}

/// Applies the plan [`planned_change`] saved: what the test inspected is what Terraform does, as a user's
/// `plan -out` then `apply PLAN`, without a second refresh and plan of every resource.
pub async fn apply_planned(work: &Workdir) -> Result<Run> {
    work.apply_with(&[SAVED_PLAN]).await
}

/// What the plan command printed.
pub fn plan_text(plan: &Plan) -> &str {
    &plan.run().stdout
}

/// The plan's `Plan: …` line, or `no changes`.
pub fn summary(plan: &Plan) -> &str {
    plan_text(plan).lines().find(|l| l.starts_with("Plan:")).unwrap_or("no changes")
}

/// Creates the namespace `name` (plain, no labels).
pub async fn create_namespace(client: &kube::Client, name: &str) -> Result<()> {
    let namespace =
        Namespace { metadata: ObjectMeta { name: Some(name.into()), ..Default::default() }, ..Default::default() };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .with_context(|| format!("creating Namespace {name}"))?;
    Ok(())
}

/// Diagnostics as one line of text: Terraform frames and wraps them, which must not split a phrase.
pub fn flat(text: &str) -> String {
    text.replace('│', " ").split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn until_returns_what_is_done_and_fails_with_the_last_state_seen() {
        let mut looks = 0;
        let found = until(Duration::from_secs(5), Duration::from_millis(1), "the third look", || {
            looks += 1;
            let seen = if looks == 3 { Seen::Done(looks) } else { Seen::NotYet(format!("look {looks}")) };
            async move { Ok(seen) }
        })
        .await
        .unwrap();
        assert_eq!(found, 3);

        let mut looks = 0;
        let err = until(Duration::from_millis(30), Duration::from_millis(5), "a thing", || {
            looks += 1;
            let seen = Seen::<()>::NotYet(format!("look {looks}"));
            async move { Ok(seen) }
        })
        .await
        .unwrap_err();
        let timed_out = err.downcast_ref::<TimedOut>().expect("running out of time is a TimedOut");
        assert_eq!(timed_out.last, format!("look {looks}"), "the error shows the last look");
        assert_eq!(err.to_string(), format!("a thing did not happen within 30ms; last seen: look {looks}"));
    }

    #[tokio::test]
    async fn throughout_looks_for_the_whole_period_and_fails_at_the_first_look_that_does_not_hold() {
        let looks = throughout(Duration::from_millis(50), Duration::from_millis(5), "steady", || async { Ok(()) })
            .await
            .unwrap();
        assert!(looks >= 5, "looked {looks} times in 50 ms");

        let mut count = 0;
        let err = throughout(Duration::from_secs(5), Duration::from_millis(1), "steady", || {
            count += 1;
            let now = count;
            async move { if now == 3 { anyhow::bail!("it moved") } else { Ok(()) } }
        })
        .await
        .unwrap_err();
        assert_eq!(count, 3, "no look after the one that failed");
        assert_eq!(format!("{err:#}"), "steady did not hold throughout 5s (look 3): it moved");
    }

    #[test]
    fn until_blocking_ends_at_a_looks_error_and_says_when_nothing_was_seen() {
        let err = until_blocking(Duration::from_secs(5), Duration::from_millis(1), "never", || -> Result<Seen<()>> {
            anyhow::bail!("the look failed")
        })
        .unwrap_err();
        assert!(!err.is::<TimedOut>(), "{err}");
        assert_eq!(err.to_string(), "the look failed");

        let err =
            until_blocking(Duration::ZERO, Duration::from_millis(1), "nothing", || Ok(None::<()>.into())).unwrap_err();
        assert!(err.is::<TimedOut>(), "{err}");
        assert_eq!(err.to_string(), "nothing did not happen within 0ns");
    }
}
