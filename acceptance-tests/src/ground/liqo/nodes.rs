//! What stands in for a cluster's nodes: kube-scheduler (real), kwok (fakes one worker Node, keeps it Ready with
//! its Lease, and reports the pods bound to it Running with an IP) and the Node object itself.
use std::path::Path;
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
        ],
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
