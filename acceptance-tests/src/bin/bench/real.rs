//! The parts on the real-Liqo ground ([`Ground::start`]: Liqo v1.2.0's own controllers, webhook, IPAM,
//! virtual kubelet and gateways; real WireGuard gateways when the bench may make network namespaces):
//! - `real-peering`: the comparison of `peering.rs` (provider vs. `kubernetes_manifest`) on that ground;
//! - `real-status`: status flip → apply returns, where the flip is the GatewayServer `status.endpoint` that
//!   Liqo's own controller writes (its audit-log entry, µs);
//! - `real-pod`: `terraform apply` start → a pod Running on the virtual node, the pod created by the bench
//!   right after the apply returns;
//! - `real-liqoctl`: the same peering made by `liqoctl` and by this provider (`liqoctl.rs`).
use std::pin::pin;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use futures::TryStreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::{Api, Resource};
use liqo_acceptance::ground::{Ground, MILAN, ROME};
use liqo_acceptance::tf::Workdir;
use liqo_acceptance::{observe, offloaded_pod};
use liqo_schema::liqo::GatewayServer;
use serde::de::DeserializeOwned;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::oneshot;

use super::peering::{self, Comparison, OFFLOAD_NAMESPACE};
use super::rss::RssRecorder;
use super::{Args, Report, apply_complete, gateway_config, hook_at, median, secs, status_percentiles};

/// The parts of this file, as `--skip` names them.
pub const PARTS: [&str; 4] = ["real-peering", "real-status", "real-pod", "real-liqoctl"];
const SERVER: &str = "liqo_gateway.server[0]";
const POD: &str = "bench";

/// Starts the real-Liqo ground and runs the parts not skipped; a failed part is added to `failed`.
pub async fn parts(
    args: &Args,
    recorder: &RssRecorder,
    other: Option<Comparison<'_>>,
    report: &mut Report,
    failed: &mut Vec<String>,
) {
    let ground = match Ground::start(&[MILAN, ROME]).await {
        Ok(ground) => ground,
        Err(e) => {
            failed.push(format!("real-Liqo ground: {e:#}"));
            return;
        }
    };
    report.add(
        "real ground",
        format!("startup (2 clusters, Liqo {}, gateways {:?})", ground.real_liqo().unwrap_or("?"), ground.gateways()),
        secs(ground.startup_time()),
        "",
        None,
    );
    if args.runs("real-peering")
        && let Err(e) = peering::full_peering(args, &ground, recorder, other, peering::REAL, report).await
    {
        failed.push(format!("real-peering: {e:#}"));
    }
    if args.runs("real-status")
        && let Err(e) = status_latency(args, &ground, report).await
    {
        failed.push(format!("real-status: {e:#}"));
    }
    if args.runs("real-pod")
        && let Err(e) = pod_running(args, &ground, report).await
    {
        failed.push(format!("real-pod: {e:#}"));
    }
    if args.runs("real-liqoctl")
        && let Err(e) = super::liqoctl::versus_liqoctl(args, &ground, report).await
    {
        failed.push(format!("real-liqoctl: {e:#}"));
    }
}

/// An object as a watch delivered it, with the instant the bench received it.
struct Seen<K> {
    at: OffsetDateTime,
    object: K,
}

/// A watch recording every added or modified object in the background, until [`Recording::finish`].
struct Recording<K> {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<Vec<Seen<K>>>>,
}

impl<K> Recording<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    /// Watches `api` from its current resource version (nothing before this call is seen).
    async fn start(api: &Api<K>) -> Result<Recording<K>> {
        let version = api
            .list_metadata(&ListParams::default().limit(1))
            .await
            .context("listing before the watch")?
            .metadata
            .resource_version
            .context("the list has no resourceVersion")?;
        // The API server ends a watch after its timeout; 290 s (its maximum) outlasts every apply here.
        let stream = api.watch(&WatchParams::default().timeout(290), &version).await.context("starting the watch")?;
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut stream = pin!(stream);
            let mut seen = Vec::new();
            loop {
                tokio::select! {
                    _ = &mut stopped => return Ok(seen),
                    event = stream.try_next() => match event.context("watching")? {
                        Some(WatchEvent::Added(object) | WatchEvent::Modified(object)) => {
                            seen.push(Seen { at: OffsetDateTime::now_utc(), object })
                        }
                        Some(WatchEvent::Error(status)) => bail!("the watch failed: {status:?}"),
                        Some(WatchEvent::Deleted(_) | WatchEvent::Bookmark(_)) => {}
                        None => bail!("the API server ended the watch before the bench stopped it"),
                    },
                }
            }
        });
        Ok(Recording { stop, task })
    }

    async fn finish(self) -> Result<Vec<Seen<K>>> {
        let _ = self.stop.send(());
        self.task.await.context("the watch task")?
    }
}

/// Real status-wait latency. Each run applies one `liqo_gateway` server on milan (`-json`) while the bench
/// watches the tenant namespace's GatewayServers. The flip is the status write of Liqo's GatewayServer controller
/// that first gave it a ready `status.endpoint`: the watch tells which object version came just before it, and
/// the controller writes status with `Update`, which carries that version, so the audit entry of that write is
/// the last successful status update with that `objectRef.resourceVersion` (earlier ones changed nothing); its
/// `stageTimestamp` (µs, when the API server answered) is the flip instant. End: `apply_complete` of the gateway
/// in Terraform's `-json` output (µs). Same machine clock.
async fn status_latency(args: &Args, ground: &Ground, report: &mut Report) -> Result<()> {
    let work = Workdir::new(args.cli, &gateway_config(ground)).await?;
    work.apply_with(&["-var", "on=false"]).await?;
    let namespace = format!("liqo-tenant-{ROME}");
    let api: Api<GatewayServer> = Api::namespaced(ground.client(MILAN).await?, &namespace);
    let audit_log = ground.audit_log(MILAN);
    let (mut latencies, mut waited, mut delivered, mut after_flip) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for run in 0..args.status_runs {
        let recording = Recording::start(&api).await?;
        let applied = work.apply_with(&["-json", "-var", "on=true"]).await;
        let seen = recording.finish().await?;
        let applied = applied?;
        let complete = apply_complete(&applied.stdout, SERVER)
            .with_context(|| format!("run {run}: no apply_complete for {SERVER} in the -json output"))?;
        let started = hook_at(&applied.stdout, "apply_start", SERVER)
            .with_context(|| format!("run {run}: no apply_start for {SERVER} in the -json output"))?;
        let (name, prior, received) = version_before_flip(&seen).with_context(|| {
            format!(
                "run {run}: the watch of {namespace}'s GatewayServers saw no ready status.endpoint after its creation"
            )
        })?;
        let flip = status_write(&audit_log, "gatewayservers", &namespace, &name, &prior).await?;
        latencies.push(millis(complete - flip));
        waited.push(millis(flip - started));
        delivered.push(millis(received - flip));
        if run < 3 {
            let text = std::fs::read_to_string(&audit_log)?;
            after_flip.push(format!("run {run}: {}", requests_between(&text, flip, complete).join(", ")));
        }
        work.apply_with(&["-var", "on=false"]).await?;
    }
    work.destroy().await?;

    let mut sorted = latencies.clone();
    sorted.sort_unstable_by(f64::total_cmp);
    status_percentiles(report, "real status wait", &sorted);
    waited.sort_unstable_by(f64::total_cmp);
    report.notes.push(format!(
        "real status-wait samples (ms, sorted): {}; flip = stageTimestamp of the audit entry of Liqo's status \
         Update that gave the GatewayServer a ready status.endpoint, end = `apply_complete` (-json). The provider \
         had been waiting for (flip − `apply_start` of the gateway, ms, sorted): {}",
        list(&sorted),
        list(&waited)
    ));
    delivered.sort_unstable_by(f64::total_cmp);
    report.notes.push(format!(
        "real status wait, the flip's version as the bench's own watch of the GatewayServers received it (ms after \
         the flip, sorted): {} — the API server's delivery of the watch event, which the provider's watch waits for \
         as well",
        list(&delivered)
    ));
    report.notes.push(format!(
        "real status wait, the provider's requests received by milan's API server between the flip and \
         `apply_complete` of the first runs (ms after the flip, ms the API server took): {}",
        after_flip.join("; ")
    ));
    Ok(())
}

/// Where the time after the flip goes: the provider's requests (user `admin` of `tf::provider_config`, which the
/// ground's kubelet shares only for pods) to the GatewayServers and Connections received between `from` and `to`,
/// as `<verb> <resource> at +ms (took ms)`: after the watch event the provider lists the Connections once.
fn requests_between(audit: &str, from: OffsetDateTime, to: OffsetDateTime) -> Vec<String> {
    let at = |e: &serde_json::Value, key: &str| OffsetDateTime::parse(e[key].as_str()?, &Rfc3339).ok();
    audit
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| {
            e["stage"] == "ResponseComplete"
                && e["verb"] != "watch"
                && e["user"]["username"] == "admin"
                && ["gatewayservers", "connections"].iter().any(|r| e["objectRef"]["resource"] == *r)
        })
        .filter_map(|e| {
            let (received, answered) = (at(&e, "requestReceivedTimestamp")?, at(&e, "stageTimestamp")?);
            (received >= from && received <= to).then(|| {
                format!(
                    "{} {} at +{:.1} (took {:.1})",
                    e["verb"].as_str().unwrap_or("?"),
                    e["objectRef"]["resource"].as_str().unwrap_or("?"),
                    millis(received - from),
                    millis(answered - received)
                )
            })
        })
        .collect()
}

/// The GatewayServer's name, the resource version it had just before the first version the watch saw with a
/// ready `status.endpoint` (the version Liqo's status `Update` carried), and when the watch received that first
/// ready version.
fn version_before_flip(seen: &[Seen<GatewayServer>]) -> Option<(String, String, OffsetDateTime)> {
    let ready = |s: &Seen<GatewayServer>| {
        s.object.status.as_ref().and_then(|status| status.endpoint.as_ref()).is_some_and(|e| e.is_ready())
    };
    let flip = seen.iter().position(ready)?;
    let before = &seen[flip.checked_sub(1)?].object;
    Some((before.metadata.name.clone()?, before.metadata.resource_version.clone()?, seen[flip].at))
}

/// `stageTimestamp` of the successful status `update` of `resource` `namespace/name` that carried resource
/// version `prior` and wrote the next one, from the API server's audit log (waits up to 5 s for an entry).
async fn status_write(
    log: &std::path::Path,
    resource: &str,
    namespace: &str,
    name: &str,
    prior: &str,
) -> Result<OffsetDateTime> {
    let what = format!(
        "{}: a successful status update of {resource} {namespace}/{name} from resourceVersion {prior}",
        log.display()
    );
    observe::until(Duration::from_secs(5), Duration::from_millis(100), &what, || async {
        let text = std::fs::read_to_string(log).with_context(|| format!("reading {}", log.display()))?;
        Ok(find_status_write(&text, resource, namespace, name, prior).into())
    })
    .await
}

fn find_status_write(audit: &str, resource: &str, namespace: &str, name: &str, prior: &str) -> Option<OffsetDateTime> {
    // The last one: Liqo's controllers also send status updates that change nothing, which the API server answers
    // without writing (the object keeps its version), so several successful updates can carry `prior`; only the
    // last of them wrote the new version.
    audit
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|e| {
            let object = &e["objectRef"];
            let code = e["responseStatus"]["code"].as_u64().unwrap_or(0);
            let is_it = e["stage"] == "ResponseComplete"
                && e["verb"] == "update"
                && (200..300).contains(&code)
                && object["resource"] == resource
                && object["subresource"] == "status"
                && object["namespace"] == namespace
                && object["name"] == name
                && object["resourceVersion"] == prior;
            is_it.then(|| OffsetDateTime::parse(e["stageTimestamp"].as_str()?, &Rfc3339).ok()).flatten()
        })
        .next_back()
}

/// `terraform apply` start → a pod Running on the virtual node. Each run applies `examples/modules/peering` with
/// one offloaded namespace (the configuration of `real-peering`), then the bench creates a pod there right after
/// the apply returns (`offloaded_pod::run`, which also checks its ShadowPod and remote copy on milan); a watch
/// of the namespace's pods gives the instants the pod was created and first seen Running on its node. Then
/// destroy.
async fn pod_running(args: &Args, ground: &Ground, report: &mut Report) -> Result<()> {
    let work = Workdir::new(args.cli, &peering::offload_config(ground)).await?;
    let (consumer, provider) = (ground.client(ROME).await?, ground.client(MILAN).await?);
    let pods: Api<Pod> = Api::namespaced(consumer.clone(), OFFLOAD_NAMESPACE);
    let (mut totals, mut applies, mut to_running) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..args.peering_runs {
        let began = OffsetDateTime::now_utc();
        work.apply().await.with_context(|| format!("run {run}: apply"))?;
        let applied = OffsetDateTime::now_utc();
        let recording = Recording::start(&pods).await?;
        let pod = offloaded_pod::run(&consumer, &provider, OFFLOAD_NAMESPACE, POD).await;
        let seen = recording.finish().await?;
        let pod = pod.with_context(|| format!("run {run}: the offloaded pod"))?;
        ensure!(pod.shadow_pod, "run {run}: milan holds no ShadowPod for the offloaded pod: {pod}");
        let created = seen.first().context("the watch saw no pod")?.at;
        let running = seen
            .iter()
            .find(|s| {
                s.object.spec.as_ref().and_then(|spec| spec.node_name.as_deref()) == Some(pod.node.as_str())
                    && s.object.status.as_ref().and_then(|status| status.phase.as_deref()) == Some("Running")
            })
            .with_context(|| format!("run {run}: the watch never saw the pod Running on {}", pod.node))?
            .at;
        totals.push(duration(running - began));
        applies.push(duration(applied - began));
        to_running.push(duration(running - created));
        work.destroy().await.with_context(|| format!("run {run}: destroy"))?;
    }
    let n = totals.len();
    report.add(
        "real pod",
        format!("apply start → pod Running on the virtual node, median of {n}"),
        secs(median(&totals)),
        "",
        None,
    );
    report.add("real pod", "of which the apply (start → exit), median", secs(median(&applies)), "", None);
    report.add(
        "real pod",
        "of which pod created → Running on the virtual node, median",
        secs(median(&to_running)),
        "",
        None,
    );
    report.notes.push(format!(
        "real pod runs (s): apply start → Running {}; apply {}; pod created → Running {} (pod created by the bench \
         right after the apply returned; created/Running = when the bench's watch received the event)",
        super::list_secs(&totals),
        super::list_secs(&applies),
        super::list_secs(&to_running)
    ));
    Ok(())
}

fn millis(d: time::Duration) -> f64 {
    d.as_seconds_f64() * 1000.0
}

fn duration(d: time::Duration) -> Duration {
    d.try_into().unwrap_or_default()
}

fn list(values: &[f64]) -> String {
    values.iter().map(|v| format!("{v:.1}")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_status_update_that_carried_the_prior_version() {
        let entry = |verb: &str, sub: &str, rv: &str, code: u16, at: &str| {
            format!(
                r#"{{"stage":"ResponseComplete","verb":"{verb}","objectRef":{{"resource":"gatewayservers","namespace":"liqo-tenant-rome","name":"rome","resourceVersion":"{rv}","subresource":"{sub}"}},"responseStatus":{{"code":{code}}},"stageTimestamp":"{at}"}}"#
            )
        };
        let audit = [
            entry("update", "status", "41", 200, "2026-11-24T10:00:00.100000Z"),
            entry("update", "", "42", 200, "2026-11-24T10:00:00.200000Z"),
            // A status update that changed nothing: answered 200 without a write, so it carried 42 as well.
            entry("update", "status", "42", 200, "2026-11-24T10:00:00.250000Z"),
            entry("update", "status", "42", 409, "2026-11-24T10:00:00.300000Z"),
            entry("update", "status", "42", 200, "2026-11-24T10:00:00.412345Z"),
        ]
        .join("\n");
        let at = find_status_write(&audit, "gatewayservers", "liqo-tenant-rome", "rome", "42").expect("found");
        assert_eq!(at.microsecond(), 412_345);
        assert!(find_status_write(&audit, "gatewayservers", "liqo-tenant-rome", "rome", "43").is_none());
    }

    #[test]
    fn lists_the_provider_requests_received_after_the_flip() {
        let entry = |verb: &str, resource: &str, received: &str, answered: &str| {
            format!(
                r#"{{"stage":"ResponseComplete","verb":"{verb}","user":{{"username":"admin"}},"objectRef":{{"resource":"{resource}"}},"requestReceivedTimestamp":"2026-11-24T10:00:{received}Z","stageTimestamp":"2026-11-24T10:00:{answered}Z"}}"#
            )
        };
        let audit = [
            entry("list", "connections", "00.050000", "00.051000"),
            entry("patch", "pods", "00.150000", "00.160000"),
            entry("watch", "gatewayservers", "00.150000", "00.400000"),
            entry("list", "connections", "00.260000", "00.263500"),
        ]
        .join("\n");
        let t = |s: &str| OffsetDateTime::parse(&format!("2026-11-24T10:00:{s}Z"), &Rfc3339).unwrap();
        assert_eq!(requests_between(&audit, t("00.100000"), t("00.300000")), ["list connections at +160.0 (took 3.5)"]);
    }
}
