//! What stands in for a cluster's nodes: kube-scheduler (real), kwok (fakes one worker Node, keeps it Ready with
//! its Lease, and reports the pods bound to it Running with an IP) and the Node object itself.
//!
//! kwok runs its default stages (`sigs.k8s.io/kwok/kustomize/stage/...` in its Go module, which its binary embeds)
//! but for two changes ([`kwok_stage_files`]):
//! * its pod-complete stage, which marks every Running pod a Job owns `Succeeded` as if its containers had exited
//!   0, leaves alone the pods whose container the ground's kubelet runs (Liqo's uninstaller, the chart's
//!   pre-delete hook): the kubelet runs those to completion and reports how they ended;
//! * its pod-ready stage, which starts a pod Running and Ready at once, starts the pods whose readiness probe the
//!   kubelet runs ([`adapt::PROBED`]: Liqo's webhook and controller-manager) Running but not Ready: the kubelet
//!   reports them Ready once the probe passes. Reported Ready at once, Liqo's webhook passed for serving while
//!   its process was still starting (seen in CI: 43 s on a loaded machine), so `helm_release` returned and the
//!   peering's first object met a webhook that did not answer.
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams};
use kube::runtime::wait::await_condition;
use kube::{Api, Client};
use serde_json::json;

use super::super::process::{self, Lifetime, Spec, Supervised};
use super::adapt;

/// kwok manages only Nodes with this annotation, so the virtual kubelets' Nodes stay theirs.
const KWOK_ANNOTATION: (&str, &str) = ("kwok.x-k8s.io/node", "fake");
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// A kubelet's default (`--node-lease-duration-seconds`); kwok renews the Lease every quarter of it.
const LEASE_DURATION: Duration = Duration::from_secs(40);

/// Name of a cluster's fake worker node.
pub fn worker_name(cluster: &str) -> String {
    format!("{cluster}-worker")
}

pub struct NodeAgents<'a> {
    pub cluster: &'a str,
    pub kube_scheduler: &'a Path,
    pub scheduler_kubeconfig: &'a Path,
    pub kwok: &'a Path,
    /// Admin kubeconfig: kwok plays every kubelet at once, so no single node identity fits it.
    pub admin_kubeconfig: &'a Path,
    /// Pod IPs kwok hands out (inside the cluster's pod CIDR, as a CNI would).
    pub pod_ip_range: &'a str,
    /// The Node's InternalIP: where a gateway Service's node port is reached, so Liqo publishes it as the
    /// gateway server's endpoint.
    pub node_ip: std::net::Ipv4Addr,
    pub work_dir: &'a Path,
    pub logs: &'a Path,
}

/// Starts kwok, creates the worker Node, waits until it is Ready and schedulable, then starts kube-scheduler.
pub async fn start(
    agents: &NodeAgents<'_>,
    client: &Client,
    lifetime: Lifetime,
    started: &Mutex<Vec<Supervised>>,
) -> Result<()> {
    let name = agents.cluster;
    let scheduler = Spec {
        name: format!("{name}/kube-scheduler"),
        program: agents.kube_scheduler.to_path_buf(),
        args: vec![
            format!("--kubeconfig={}", agents.scheduler_kubeconfig.display()),
            "--leader-elect=false".into(),
            // No health/metrics endpoint: nothing probes it, and it would need one more free port.
            "--secure-port=0".into(),
        ],
        env: Vec::new(),
        log: agents.logs.join(format!("{name}-kube-scheduler.log")),
    };
    let kwok_home = agents.work_dir.join("kwok");
    std::fs::create_dir_all(&kwok_home).with_context(|| format!("creating {}", kwok_home.display()))?;
    let (kwok_bin, home) = (agents.kwok.to_path_buf(), kwok_home.clone());
    let stages = tokio::task::spawn_blocking(move || kwok_stage_files(&kwok_bin, &home))
        .await
        .context("reading kwok's stages")?
        .with_context(|| format!("cluster {name}: kwok's stages"))?;
    let kwok = Spec {
        name: format!("{name}/kwok"),
        program: agents.kwok.to_path_buf(),
        args: vec![
            format!("--kubeconfig={}", agents.admin_kubeconfig.display()),
            "--manage-all-nodes=false".into(),
            format!("--manage-nodes-with-annotation-selector={}={}", KWOK_ANNOTATION.0, KWOK_ANNOTATION.1),
            format!("--cidr={}", agents.pod_ip_range),
            format!("--node-ip={}", agents.node_ip),
            // A kubelet's Lease, renewed every 10 s. Without this flag kwok 0.7.0 writes no Lease and heartbeats the
            // Node's status only every ~10 min, so kube-controller-manager's node-lifecycle controller declares the
            // Node Unknown 50 s after start and marks every pod on it NotReady (kwok then sets the Node Ready again,
            // never the pods): Liqo's ForeignCluster then reports the virtual kubelet's VirtualNode not ready.
            format!("--node-lease-duration-seconds={}", LEASE_DURATION.as_secs()),
        ]
        .into_iter()
        .chain(stages.iter().map(|file| format!("--config={}", file.display())))
        .collect(),
        // kwok reads its configuration from ~/.kwok; the ground's own directory, not the user's.
        env: vec![("HOME".into(), kwok_home.display().to_string())],
        log: agents.logs.join(format!("{name}-kwok.log")),
    };
    started.lock().expect("process list").push(process::spawn(&kwok, lifetime)?);

    let worker = worker_name(name);
    let node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": worker,
            "annotations": {KWOK_ANNOTATION.0: KWOK_ANNOTATION.1},
            "labels": {
                "kubernetes.io/hostname": worker,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
            },
        },
        // What the provider cluster offers its consumers: Liqo computes a ResourceSlice's resources from the
        // allocatable capacity of the cluster's (non-virtual) nodes.
        "status": {
            "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
            "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
        },
    });
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .patch(&worker, &PatchParams::apply("liqo-ground").force(), &Patch::Apply(&node))
        .await
        .with_context(|| format!("creating the fake worker Node {worker} in cluster {name}"))?;
    // The status sub-resource is separate: capacity set on create is dropped by the API server.
    nodes
        .patch_status(&worker, &PatchParams::apply("liqo-ground").force(), &Patch::Apply(&node))
        .await
        .with_context(|| format!("setting the capacity of Node {worker} in cluster {name}"))?;

    let schedulable = await_condition(nodes, &worker, |node: Option<&Node>| {
        let Some(node) = node else { return false };
        let ready = crate::observe::node_ready(node);
        let tainted = node.spec.as_ref().and_then(|s| s.taints.as_ref()).is_some_and(|t| !t.is_empty());
        ready && !tainted
    });
    match tokio::time::timeout(READY_TIMEOUT, schedulable).await {
        Ok(result) => result.map(|_| ()).with_context(|| format!("watching Node {worker} in cluster {name}"))?,
        Err(_) => bail!(
            "the fake worker Node {worker} of cluster {name} was not Ready and untainted within {READY_TIMEOUT:?}: kwok \
             marks it Ready, then kube-controller-manager's node-lifecycle controller removes the not-ready taint; \
             see {name}-kwok.log and {name}-kube-controller-manager.log in the ground's logs"
        ),
    };
    // Without its Lease the Node would pass for Ready now and go Unknown 50 s later, under a running test.
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    match tokio::time::timeout(READY_TIMEOUT, await_condition(leases, &worker, |lease: Option<&Lease>| lease.is_some()))
        .await
    {
        Ok(result) => {
            result.map(|_| ()).with_context(|| format!("watching the Lease of Node {worker} in cluster {name}"))?
        }
        Err(_) => bail!(
            "kwok wrote no Lease for the fake worker Node {worker} of cluster {name} within {READY_TIMEOUT:?}; see \
             {name}-kwok.log in the ground's logs"
        ),
    }
    // The scheduler starts only now, once kwok manages the Node, so every binding comes after kwok follows the
    // Node's pods. Seen in a ground start that timed out (milan's audit log): kwok listed milan-worker's pods (none
    // yet) and patched the Node's status, the scheduler bound Liqo's five pods 18 to 41 ms later, and kwok never
    // marked them Running nor listed them again, so the ground's kubelet never started Liqo there and the start
    // failed after 120 s waiting for the webhook.
    started.lock().expect("process list").push(process::spawn(&scheduler, lifetime)?);
    Ok(())
}

/// kwok's stage that completes the pods of Jobs.
/// Waits until kwok has renewed the Lease of cluster `cluster`'s worker Node after `since` (an API server's return):
/// from then on kube-controller-manager's node-lifecycle controller sees the node alive.
pub async fn leases_renewed_since(client: &Client, cluster: &str, since: k8s_openapi::jiff::Timestamp) -> Result<()> {
    use crate::observe::{Seen, until};
    let worker = worker_name(cluster);
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let what = format!("the Lease of Node {worker} renewed after cluster {cluster}'s API server came back");
    // kwok renews it every quarter of its duration.
    until(LEASE_DURATION, Duration::from_millis(500), &what, || async {
        let renewed = leases.get_opt(&worker).await?.and_then(|l| l.spec?.renew_time).map(|t| t.0);
        Ok(match renewed {
            Some(at) if at > since => Seen::Done(()),
            other => Seen::NotYet(format!("last renewed {other:?}")),
        })
    })
    .await
}

const POD_COMPLETE: &str = "pod-complete.yaml";
/// kwok's stage that starts a pod (IP, phase Running, conditions Ready), and the ground's variant of it for the
/// pods the kubelet probes.
const POD_READY: &str = "pod-ready.yaml";
const POD_STARTED: &str = "pod-started.yaml";

/// kwok selector key (a jq query): the base name of the command of each container that declares an HTTP readiness
/// probe.
const PROBED_COMMANDS: &str =
    ".spec.containers[] | select(.readinessProbe.httpGet) | .command[0] | strings | split(\"/\") | last";

/// The `--config` files of kwok's stages: its default pod stages, each file as its Go module holds it but two,
/// which the ground writes into `home`:
/// * pod-complete with one more selector expression: no container of the pod runs a binary the kubelet runs
///   ([`adapt::RUNNABLE`], by the base name of its command, as the kubelet picks them);
/// * pod-ready with one more selector expression: no container with an HTTP readiness probe runs a binary the
///   kubelet probes ([`adapt::PROBED`]); and beside it pod-started, the same stage for exactly those pods, whose
///   status says Ready `False` (reason `ContainersNotReady`) and each container not ready, as a kubelet reports a
///   started pod whose readiness probe has not passed yet.
///
/// Why files at all: kwok has no flag to change one stage. It takes Stage documents from `--config`, grouped by
/// the kind they act on (`pkg/kwok/cmd/root.go`, kwok v0.7.0): any Pod stage given replaces all of its default Pod
/// stages, and its default Node stages stay only while no Node stage is given. So every default Pod stage is
/// given — from kwok's own files in its module (`kustomize/stage/pod/fast/`, what its binary embeds as its
/// defaults), not copies — and no Node stage, which keeps kwok's default Node stages (initialize, heartbeat) as
/// they were. The module is that of the kwok binary the ground runs (`$bin/kwok` links to `kwok-<version>`).
///
/// Why the expression reads the base name: kwok's selector keys are jq queries, and `NotIn` matches when none of
/// the query's values is listed; a container without a command yields no value (`strings` drops the null), and a
/// query that fails yields none either, so every other Job's pod completes as before.
fn kwok_stage_files(kwok: &Path, home: &Path) -> Result<Vec<PathBuf>> {
    let stages = default_pod_stages(kwok)?;
    let kustomization = stages.join("kustomization.yaml");
    let listed: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(&kustomization).with_context(|| format!("reading {}", kustomization.display()))?,
    )
    .with_context(|| format!("parsing {}", kustomization.display()))?;
    let resources: Vec<&str> =
        listed["resources"].as_sequence().into_iter().flatten().filter_map(|r| r.as_str()).collect();
    for needed in [POD_COMPLETE, POD_READY] {
        if !resources.contains(&needed) {
            bail!("{} lists no {needed}: kwok's default pod stages changed; see nodes.rs", kustomization.display());
        }
    }
    let mut files = Vec::new();
    for resource in resources {
        let file = stages.join(resource);
        let read = || -> Result<serde_yaml::Value> {
            serde_yaml::from_str(
                &std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?,
            )
            .with_context(|| format!("parsing {}", file.display()))
        };
        let write = |name: &str, stage: &serde_yaml::Value| -> Result<PathBuf> {
            let written = home.join(name);
            std::fs::write(&written, serde_yaml::to_string(stage)?)
                .with_context(|| format!("writing {}", written.display()))?;
            Ok(written)
        };
        match resource {
            POD_COMPLETE => {
                let mut stage = read()?;
                select(
                    &mut stage,
                    ".spec.containers[].command[0] | strings | split(\"/\") | last",
                    "NotIn",
                    &adapt::RUNNABLE,
                )
                .with_context(|| file.display().to_string())?;
                files.push(write(POD_COMPLETE, &stage)?);
            }
            POD_READY => {
                let mut stage = read()?;
                let mut started = stage.clone();
                select(&mut stage, PROBED_COMMANDS, "NotIn", &adapt::PROBED)
                    .with_context(|| file.display().to_string())?;
                files.push(write(POD_READY, &stage)?);
                select(&mut started, PROBED_COMMANDS, "In", &adapt::PROBED)
                    .with_context(|| file.display().to_string())?;
                started["metadata"]["name"] = "pod-started".into();
                let template = started["spec"]["next"]["statusTemplate"]
                    .as_str()
                    .with_context(|| format!("{} has no spec.next.statusTemplate", file.display()))?;
                started["spec"]["next"]["statusTemplate"] = not_ready(template)
                    .with_context(|| format!("{}: kwok's pod-ready stage changed; see nodes.rs", file.display()))?
                    .into();
                files.push(write(POD_STARTED, &started)?);
            }
            _ => files.push(file),
        }
    }
    Ok(files)
}

/// Adds the selector expression `key operator values` to a kwok stage.
fn select(stage: &mut serde_yaml::Value, key: &str, operator: &str, values: &[&str]) -> Result<()> {
    let expressions = stage["spec"]["selector"]["matchExpressions"]
        .as_sequence_mut()
        .context("the stage has no spec.selector.matchExpressions")?;
    expressions.push(serde_yaml::to_value(serde_json::json!({"key": key, "operator": operator, "values": values}))?);
    Ok(())
}

/// kwok's pod-ready status template with conditions Ready and ContainersReady `False` (reason
/// `ContainersNotReady`) and the containers not ready (its `containerStatuses` range, the first `ready: true`);
/// an error when the template does not read as this expects.
fn not_ready(template: &str) -> Result<String> {
    let lines: Vec<&str> = template.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    let (mut conditions, mut containers) = (0, 0);
    for (k, line) in lines.iter().enumerate() {
        let next = lines.get(k + 1).map(|l| l.trim());
        let indent = &line[..line.len() - line.trim_start().len()];
        if line.trim() == "status: \"True\"" && matches!(next, Some("type: Ready" | "type: ContainersReady")) {
            out.push(format!("{indent}status: \"False\""));
            out.push(format!("{indent}reason: ContainersNotReady"));
            conditions += 1;
        } else if line.trim() == "ready: true" && containers == 0 {
            out.push(format!("{indent}ready: false"));
            containers += 1;
        } else {
            out.push((*line).to_owned());
        }
    }
    if (conditions, containers) != (2, 1) {
        bail!("expected conditions Ready and ContainersReady and a container `ready: true` in its status template");
    }
    Ok(out.join("\n") + "\n")
}

/// `kustomize/stage/pod/fast` in the Go module of the kwok build `kwok` links to (once per process and version:
/// `go mod download` finds it in Go's module cache, where building kwok put it).
fn default_pod_stages(kwok: &Path) -> Result<PathBuf> {
    static MODULES: Mutex<Option<HashMap<String, PathBuf>>> = Mutex::new(None);
    let target =
        std::fs::read_link(kwok).with_context(|| format!("{} is not a link to a kwok build", kwok.display()))?;
    let version = target
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.strip_prefix("kwok-"))
        .with_context(|| format!("{} links to {}, not kwok-<version>", kwok.display(), target.display()))?
        .to_owned();
    let mut modules = MODULES.lock().expect("kwok module directories");
    let modules = modules.get_or_insert_with(HashMap::new);
    let module = match modules.get(&version) {
        Some(module) => module.clone(),
        None => {
            let module = crate::ground::upstream::go_module_dir("sigs.k8s.io/kwok", &version)?;
            modules.insert(version, module.clone());
            module
        }
    };
    Ok(module.join("kustomize/stage/pod/fast"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout of kwok v0.7.0's pod-ready template, shortened.
    const POD_READY_TEMPLATE: &str = r#"{{ $now := Now }}

conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: ContainersReady

containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  ready: true
{{ end }}

initContainerStatuses:
{{ range .spec.initContainers }}
- image: {{ .image | Quote }}
  ready: true
{{ end }}
phase: Running
"#;

    #[test]
    fn a_probed_pod_starts_not_ready() -> Result<()> {
        let started: serde_yaml::Value = serde_yaml::from_str(&not_ready(POD_READY_TEMPLATE)?.replace("{{", "#"))?;
        let conditions = started["conditions"].as_sequence().expect("conditions");
        let status = |type_: &str| conditions.iter().find(|c| c["type"] == type_).map(|c| c["status"].clone());
        assert_eq!(status("Initialized"), Some("True".into()));
        assert_eq!(status("Ready"), Some("False".into()));
        assert_eq!(status("ContainersReady"), Some("False".into()));
        assert_eq!(conditions[1]["reason"], "ContainersNotReady");
        let text = not_ready(POD_READY_TEMPLATE)?;
        let container = text.split("containerStatuses:").nth(1).expect("containerStatuses");
        assert!(container.contains("ready: false"), "{text}");
        // Init containers have ended; they stay ready.
        assert!(text.split("initContainerStatuses:").nth(1).expect("init").contains("ready: true"), "{text}");
        Ok(())
    }

    #[test]
    fn a_template_of_another_shape_is_refused() {
        let err = not_ready("conditions:\n- status: \"True\"\n  type: Initialized\n").unwrap_err();
        assert!(err.to_string().contains("expected conditions Ready and ContainersReady"), "{err}");
    }
}
