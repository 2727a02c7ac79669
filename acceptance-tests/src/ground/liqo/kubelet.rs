//! The ground's kubelet for Liqo's own workloads (`liqo-ground kubelet --dir DIR`, one process for every
//! cluster of a ground): for each pod bound to a cluster's fake worker node whose container runs a Liqo binary
//! (see [`adapt::RUNNABLE`]), it starts that binary with the container's command line and environment, resolved
//! as a kubelet does, and a kubeconfig holding a token of the pod's ServiceAccount (TokenRequest, bound to the
//! pod), so Liqo works with exactly the rights its chart gives it. The process is stopped when the pod goes away.
//! When it exits, the pod's `restartPolicy` decides, as a kubelet's does: `Always` (Liqo's Deployments) restarts it
//! with back-off; `Never` (the chart's pre-delete hook Job, Liqo's uninstaller) and `OnFailure` after a clean exit
//! leave it finished, never started again for that pod, and once every container of the pod has finished the
//! kubelet writes the pod's terminal status (`Succeeded` or `Failed`, the containers' exit codes), which the Job
//! controller and `helm uninstall --wait` read. kwok leaves completing such pods to the kubelet (see `super::nodes`).
//!
//! Gateway pods get a network namespace of their own on the ground's wire (see [`wire`]), and the kubelet
//! serves their Services' node ports there; where the ground cannot make namespaces ([`Gateways::Simulated`]),
//! it does not run the gateways but reports their Connection as Liqo's wireguard container would once
//! connected.
//!
//! kwok marks the same pods Running; this kubelet only runs what they stand for, and for the containers whose
//! readiness probe it runs ([`adapt::PROBED`]) reports the pod Ready once the probe passes and not Ready when the
//! process exits (kwok starts such pods not Ready: see `super::nodes`). Its children die with it
//! (PR_SET_PDEATHSIG), so stopping the kubelet (as `ground down` does) stops every Liqo process and, with their
//! holders, the network namespaces.
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use futures::StreamExt;
use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, Secret, Service, ServiceAccount};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::config::Kubeconfig;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::Notify;

use super::adapt::{self, FixedPorts};
use super::pod_network;
use super::wire::{self, Gateways, Netns, Task, Wire};
use crate::ground::kubeconfig;
use crate::ground::process::{self, Lifetime, Spec, Supervised};

/// How soon a step that could not be done yet (a process to restart, a namespace not made) is tried again.
const POLL: Duration = Duration::from_millis(500);
/// With nothing to retry, the kubelet lists pods and Services again when a watch reports a change, a process it
/// runs exits, or this long has passed. Listing every POLL instead kept each API server of a ground busier than
/// anything else on it (a list of pods and one of Services twice a second, each written to the audit log), and a
/// test binary runs several grounds at once.
const RESYNC: Duration = Duration::from_secs(10);
const STOP_GRACE: Duration = Duration::from_secs(5);
/// A kubelet refreshes projected tokens; this one does not, so a ground kept up (`ground up`) for longer than this
/// needs a restart.
const TOKEN_SECONDS: i64 = 24 * 3600;
const MAX_BACKOFF: Duration = Duration::from_secs(20);
/// A probe's timeout (the kubelet's default `timeoutSeconds`). Probes are tried every [`POLL`] until one passes,
/// more often than a kubelet's default period (10 s), which only shortens the wait; once passed, the container
/// stays Ready until its process exits (no probing of a running process).
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// One cluster the kubelet serves.
pub struct KubeletCluster {
    pub name: String,
    /// Admin kubeconfig (the kubelet reads pods, ConfigMaps and Secrets and requests tokens).
    pub kubeconfig: PathBuf,
    pub node: String,
    pub ports: FixedPorts,
    /// The node's address on the wire (real gateways only), where its node ports are served.
    pub node_ip: Ipv4Addr,
    /// Gateway sandboxes of this cluster take addresses `wire::pod_ip(index, n)`.
    pub index: usize,
}

/// Serves every cluster until killed; returns only when a cluster cannot be served at all.
pub async fn run(clusters: Vec<KubeletCluster>, liqo_bin: PathBuf, dir: PathBuf, gateways: Gateways) -> Result<()> {
    let wire = match &gateways {
        Gateways::Real => {
            let node_ips: Vec<Ipv4Addr> = clusters.iter().map(|c| c.node_ip).collect();
            let log = dir.join("logs/wire.log");
            let wire = tokio::task::spawn_blocking(move || Wire::create(&node_ips, &log))
                .await
                .context("making the wire")?
                .context("making the wire between the clusters' nodes")?;
            Some(Arc::new(wire))
        }
        Gateways::Simulated { .. } => None,
    };
    eprintln!("[kubelet] {}", gateways.describe());
    let serving = clusters.into_iter().map(|cluster| {
        let (liqo_bin, dir, wire) = (liqo_bin.clone(), dir.clone(), wire.clone());
        async move {
            // serve returns when the cluster was made anew (Ground::recreate_cluster): serve the new one.
            loop {
                serve(&cluster, &liqo_bin, &dir, wire.clone())
                    .await
                    .with_context(|| format!("cluster {}", cluster.name))?;
                say(
                    &cluster.name,
                    "the cluster was made anew (new kubeconfig): its pods are gone; serving the new one",
                );
            }
        }
    });
    futures::future::try_join_all(serving).await.map(|_: Vec<()>| ())
}

/// A started container and when to restart it if it exits.
struct Running {
    process: Supervised,
    /// Its container ports that listen elsewhere on the host (see `adapt::ProcessPlan::ports`).
    ports: Vec<(u16, u16)>,
    /// Its readiness probe (host port, path), and whether it has passed since the process started.
    probe: Option<(u16, String)>,
    ready: bool,
    /// Runs in a gateway sandbox (network, mount and PID namespaces of its pod).
    sandboxed: bool,
    started: Instant,
    /// When it started, for the container's status once it has finished.
    started_at: OffsetDateTime,
    backoff: Duration,
    restart_at: Option<Instant>,
}

/// A container that ran to completion (see [`runs_to_completion`]); it is not started again for its pod.
struct Finished {
    exit_code: i32,
    started_at: OffsetDateTime,
    finished_at: OffsetDateTime,
}

/// A gateway pod's network namespace on the wire.
struct Sandbox {
    netns: Netns,
    address: Ipv4Addr,
    namespace: String,
    labels: BTreeMap<String, String>,
    _api_server: Task,
}

/// Serves one cluster until its kubeconfig changes (the cluster was made anew), then stops what it ran there.
async fn serve(cluster: &KubeletCluster, liqo_bin: &Path, dir: &Path, wire: Option<Arc<Wire>>) -> Result<()> {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let kubeconfig_version = modified(&cluster.kubeconfig);
    let client = kubeconfig::client(&cluster.kubeconfig).await?;
    let (server, ca_data) = server_and_ca(&cluster.kubeconfig)?;
    let api_port = server
        .rsplit_once(':')
        .and_then(|(_, port)| port.trim_end_matches('/').parse::<u16>().ok())
        .with_context(|| format!("no port in the API server URL {server}"))?;
    let pods: Api<Pod> = Api::all(client.clone());
    let on_node = ListParams::default().fields(&format!("spec.nodeName={}", cluster.node));
    let mut running: HashMap<String, Running> = HashMap::new();
    let mut sandboxes: HashMap<String, Sandbox> = HashMap::new();
    let mut node_ports: HashMap<u16, (SocketAddrV4, Task)> = HashMap::new();
    // Gateway pods whose Connection the kubelet reported (simulated gateways), by UID.
    let mut played: HashSet<String> = HashSet::new();
    // Containers that ran to completion, by `<pod UID>/<container>`, and the pods whose terminal status the kubelet
    // wrote, by UID; both kept for as long as the pod is listed.
    let mut finished: HashMap<String, Finished> = HashMap::new();
    let mut reported: HashSet<String> = HashSet::new();
    let host_ports = pod_network::HostPorts::default();
    let _pod_network = pod_network::serve(
        client.clone(),
        cluster.node.clone(),
        pod_network::socket(&dir.join(&cluster.name)),
        host_ports.clone(),
    )?;
    say(&cluster.name, &format!("serving Liqo's pods on node {}", cluster.node));
    let changed = Arc::new(Notify::new());
    let _watches = (
        notify_on_change(
            pods.clone(),
            watcher::Config::default().fields(&format!("spec.nodeName={}", cluster.node)),
            &changed,
        ),
        notify_on_change(Api::<Service>::all(client.clone()), watcher::Config::default(), &changed),
    );
    loop {
        if modified(&cluster.kubeconfig) != kubeconfig_version {
            let mut stopped: Vec<Supervised> = running.into_values().map(|r| r.process).collect();
            tokio::task::spawn_blocking(move || process::stop_owned(&mut stopped, Duration::ZERO))
                .await
                .context("stopping the processes of a cluster made anew")?;
            return Ok(());
        }
        // Set by every step that could not be done yet: the next pass comes after POLL, not at the next change.
        let mut retry_soon = false;
        let listed = match pods.list(&on_node).await {
            Ok(list) => list.items,
            Err(err) => {
                say(&cluster.name, &format!("listing pods failed (retrying): {err}"));
                tokio::time::sleep(POLL).await;
                continue;
            }
        };
        let mut wanted: HashMap<String, (&Pod, &Container, String)> = HashMap::new();
        for pod in &listed {
            // A pod in a terminal phase never runs again, whoever finished it (a kubelet started anew, too).
            let terminal =
                matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some(PHASE_SUCCEEDED | PHASE_FAILED));
            let ready_to_run = pod.metadata.deletion_timestamp.is_none()
                && !terminal
                && pod.status.as_ref().and_then(|s| s.pod_ip.as_ref()).is_some();
            let Some(uid) = pod.metadata.uid.as_ref().filter(|_| ready_to_run) else { continue };
            let containers = pod.spec.iter().flat_map(|s| s.containers.iter());
            for container in containers {
                let Some(binary) = adapt::runnable(container) else { continue };
                if adapt::GATEWAY.contains(&binary.as_str()) && wire.is_none() {
                    if binary == "wireguard" && !played.contains(uid) {
                        match simulate_gateway(&client, container).await {
                            Ok(()) => _ = played.insert(uid.clone()),
                            Err(err) => {
                                retry_soon = true;
                                say(&cluster.name, &format!("cannot play {} yet: {err:#}", pod_name(pod)));
                            }
                        }
                    }
                    continue;
                }
                wanted.insert(format!("{uid}/{}", container.name), (pod, container, binary));
            }
        }

        let gone: Vec<String> = running.keys().filter(|key| !wanted.contains_key(*key)).cloned().collect();
        for key in gone {
            if let Some(mut stopped) = running.remove(&key) {
                say(&cluster.name, &format!("stopping {} (its pod is gone)", stopped.process.record().name));
                // A sandboxed container's `unshare` ignores SIGTERM (see adapt::in_sandbox): no grace to wait out.
                let grace = if stopped.sandboxed { Duration::ZERO } else { STOP_GRACE };
                tokio::task::spawn_blocking(move || {
                    process::stop_owned(std::slice::from_mut(&mut stopped.process), grace)
                })
                .await
                .context("stopping a process")?;
            }
        }
        // A pod's namespace goes once its processes have stopped.
        let pods_wanted: HashSet<&str> = wanted.keys().filter_map(|key| key.split('/').next()).collect();
        sandboxes.retain(|uid, _| pods_wanted.contains(uid.as_str()));
        // Labels change while a pod runs (Liqo's gateway marks the active replica), and Services select by them.
        for pod in &listed {
            if let Some(sandbox) = pod.metadata.uid.as_ref().and_then(|uid| sandboxes.get_mut(uid)) {
                sandbox.labels = pod.metadata.labels.clone().unwrap_or_default();
            }
        }
        let listed_uids: HashSet<&str> = listed.iter().filter_map(|p| p.metadata.uid.as_deref()).collect();
        played.retain(|uid| listed_uids.contains(uid.as_str()));
        finished.retain(|key, _| key.split('/').next().is_some_and(|uid| listed_uids.contains(uid)));
        reported.retain(|uid| listed_uids.contains(uid.as_str()));

        for (key, (pod, container, binary)) in wanted {
            if finished.contains_key(&key) {
                continue;
            }
            if let Some(status) = running.get_mut(&key).and_then(|entry| entry.process.exited())
                && runs_to_completion(pod, status)
            {
                let Some(ended) = running.remove(&key) else { continue };
                say(
                    &cluster.name,
                    &format!(
                        "{} exited ({status}); not restarted (restartPolicy {}); log: {}",
                        ended.process.record().name,
                        restart_policy(pod),
                        ended.process.record().log.display()
                    ),
                );
                let (started_at, finished_at) = (ended.started_at, OffsetDateTime::now_utc());
                finished.insert(key, Finished { exit_code: exit_code(status), started_at, finished_at });
                continue;
            }
            let restart_backoff = match running.get_mut(&key) {
                None => None,
                Some(entry) => {
                    if let Some(status) = entry.process.exited() {
                        let now = Instant::now();
                        let restart_at = *entry.restart_at.get_or_insert_with(|| {
                            // A process that ran for a while starts over with a short back-off.
                            if entry.started.elapsed() > MAX_BACKOFF * 3 {
                                entry.backoff = Duration::from_secs(1);
                            }
                            say(
                                &cluster.name,
                                &format!(
                                    "{} exited ({status}); restarting in {:?}; log: {}",
                                    entry.process.record().name,
                                    entry.backoff,
                                    entry.process.record().log.display()
                                ),
                            );
                            now + entry.backoff
                        });
                        if now < restart_at {
                            retry_soon = true;
                            continue;
                        }
                        Some((entry.backoff * 2).min(MAX_BACKOFF))
                    } else {
                        continue;
                    }
                }
            };
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            if let Some(wire) = wire.as_ref().filter(|_| adapt::GATEWAY.contains(&binary.as_str()))
                && !sandboxes.contains_key(&uid)
            {
                // The lowest address no running gateway pod holds: pods come and go for as long as the ground runs.
                let taken: HashSet<Ipv4Addr> = sandboxes.values().map(|s| s.address).collect();
                let Some(address) = (1..=254).map(|n| wire::pod_ip(cluster.index, n)).find(|a| !taken.contains(a))
                else {
                    say(&cluster.name, &format!("no address left on the wire for {}", pod_name(pod)));
                    retry_soon = true;
                    continue;
                };
                match make_sandbox(wire, pod, address, api_port, dir).await {
                    Ok(sandbox) => {
                        say(&cluster.name, &format!("network namespace of {} at {address}", pod_name(pod)));
                        sandboxes.insert(uid.clone(), sandbox);
                    }
                    Err(err) => {
                        say(&cluster.name, &format!("cannot make the network of {} yet: {err:#}", pod_name(pod)));
                        retry_soon = true;
                        continue;
                    }
                }
            }
            let launch = Launch {
                cluster,
                client: &client,
                server: &server,
                ca_data: &ca_data,
                liqo_bin,
                dir,
                netns: sandboxes.get(&uid).map(|s| s.netns.path()),
            };
            match launch.start(pod, container, &binary).await {
                Ok((process, ports)) => {
                    say(&cluster.name, &format!("started {} (pid {})", process.record().name, process.record().pid));
                    let backoff = restart_backoff.unwrap_or(Duration::from_secs(1));
                    let sandboxed = sandboxes.contains_key(&uid);
                    let (started, started_at) = (Instant::now(), OffsetDateTime::now_utc());
                    let probe = adapt::readiness(container).and_then(|probe| {
                        let host = ports.iter().find(|(port, _)| *port == probe.port).map(|(_, host)| *host)?;
                        Some((host, probe.path))
                    });
                    running.insert(
                        key,
                        Running {
                            process,
                            ports,
                            probe,
                            ready: false,
                            sandboxed,
                            started,
                            started_at,
                            backoff,
                            restart_at: None,
                        },
                    );
                }
                Err(err) => {
                    retry_soon = true;
                    say(&cluster.name, &format!("cannot start {binary} yet (retrying): {err:#}"));
                }
            }
        }
        *host_ports.lock().expect("host ports") = host_ports_of(&running);
        for entry in running.values_mut() {
            if entry.process.exited().is_some() {
                entry.ready = false;
            } else if let Some((port, path)) = entry.probe.as_ref().filter(|_| !entry.ready) {
                entry.ready = probe(*port, path).await;
                retry_soon |= !entry.ready;
            }
        }
        for pod in &listed {
            let Some(uid) = pod.metadata.uid.as_deref() else { continue };
            let prefix = format!("{uid}/");
            let probed: HashMap<&str, bool> = running
                .iter()
                .filter(|(_, entry)| entry.probe.is_some())
                .filter_map(|(key, entry)| Some((key.strip_prefix(&prefix)?, entry.ready)))
                .collect();
            let Some(patch) = readiness_patch(pod, &probed) else { continue };
            let ready = patch["status"]["conditions"][0]["status"] == "True";
            match report(&client, pod, patch).await {
                Ok(()) => {
                    say(&cluster.name, &format!("{} {}", pod_name(pod), if ready { "Ready" } else { "not Ready" }))
                }
                Err(err) => {
                    retry_soon = true;
                    say(&cluster.name, &format!("cannot report the readiness of {} yet: {err:#}", pod_name(pod)));
                }
            }
        }
        for pod in &listed {
            let Some(uid) = pod.metadata.uid.as_deref().filter(|uid| !reported.contains(*uid)) else { continue };
            let Some(status) = terminal_status(pod, &finished) else { continue };
            let phase = status["status"]["phase"].as_str().unwrap_or_default().to_owned();
            match report(&client, pod, status).await {
                Ok(()) => {
                    say(&cluster.name, &format!("{} finished: phase {phase}", pod_name(pod)));
                    reported.insert(uid.to_owned());
                }
                Err(err) => {
                    retry_soon = true;
                    say(&cluster.name, &format!("cannot report the end of {} yet (retrying): {err:#}", pod_name(pod)));
                }
            }
        }
        if let Some(wire) = &wire
            && let Err(err) = serve_node_ports(&client, wire, cluster.node_ip, &sandboxes, &mut node_ports).await
        {
            retry_soon = true;
            say(&cluster.name, &format!("serving node ports failed (retrying): {err:#}"));
        }
        if retry_soon {
            tokio::time::sleep(POLL).await;
        } else {
            until_change(&changed, &mut running).await;
        }
    }
}

const PHASE_SUCCEEDED: &str = "Succeeded";
const PHASE_FAILED: &str = "Failed";

/// The pod's `restartPolicy` (`Always` when unset, the API server's default).
fn restart_policy(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()).unwrap_or("Always")
}

/// Whether a container of `pod` that exited with `status` stays finished rather than restarted: a kubelet restarts
/// it under `Always`, under `OnFailure` only after a non-zero exit, never under `Never`.
fn runs_to_completion(pod: &Pod, status: ExitStatus) -> bool {
    match restart_policy(pod) {
        "Never" => true,
        "OnFailure" => status.success(),
        _ => false,
    }
}

/// The exit code a kubelet reports: the process's, or 128 + the signal that killed it.
fn exit_code(status: ExitStatus) -> i32 {
    status.code().or_else(|| status.signal().map(|signal| 128 + signal)).unwrap_or(-1)
}

/// A Kubernetes timestamp (RFC 3339, whole seconds, as the API server keeps them).
fn timestamp(at: OffsetDateTime) -> String {
    let at = at.replace_nanosecond(0).unwrap_or(at);
    at.format(&Rfc3339).unwrap_or_default()
}

/// The status a kubelet writes for `pod` once all its containers have terminated, when every container the ground
/// runs has finished (else `None`): phase `Succeeded` when every container exited 0, else `Failed`
/// (`getPhase` in the kubelet); each container `terminated` with its exit code and reason `Completed` or
/// `Error`; conditions Ready and ContainersReady `False`, reason `PodCompleted` or `PodFailed` (the kubelet's
/// `generate*ConditionForTerminalPhase`). Containers the ground does not run count as exited 0 when the pod
/// ends, as kwok's pod-complete stage (which no longer applies to such pods) would report them.
fn terminal_status(pod: &Pod, finished: &HashMap<String, Finished>) -> Option<serde_json::Value> {
    let uid = pod.metadata.uid.as_deref()?;
    let containers = &pod.spec.as_ref()?.containers;
    let ended = |container: &Container| finished.get(&format!("{uid}/{}", container.name));
    let run: Vec<&Container> = containers.iter().filter(|c| adapt::runnable(c).is_some()).collect();
    if run.is_empty() || !run.iter().all(|c| ended(c).is_some()) {
        return None;
    }
    let now = OffsetDateTime::now_utc();
    let restarts = |name: &str| {
        pod.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|statuses| statuses.iter().find(|s| s.name == name))
            .map_or(0, |s| s.restart_count)
    };
    let mut failed = false;
    let statuses: Vec<serde_json::Value> = containers
        .iter()
        .map(|container| {
            let (exit_code, started_at, finished_at) =
                ended(container).map_or((0, now, now), |f| (f.exit_code, f.started_at, f.finished_at));
            failed |= exit_code != 0;
            serde_json::json!({
                "name": container.name,
                "image": container.image,
                "ready": false,
                "started": false,
                "restartCount": restarts(&container.name),
                "state": {"terminated": {
                    "exitCode": exit_code,
                    "reason": if exit_code == 0 { "Completed" } else { "Error" },
                    "startedAt": timestamp(started_at),
                    "finishedAt": timestamp(finished_at),
                }},
            })
        })
        .collect();
    let (phase, reason) = if failed { (PHASE_FAILED, "PodFailed") } else { (PHASE_SUCCEEDED, "PodCompleted") };
    let condition = |type_: &str| serde_json::json!({"type": type_, "status": "False", "reason": reason, "lastTransitionTime": timestamp(now)});
    Some(serde_json::json!({
        // The API server refuses the patch if the pod was replaced by one of the same name since (the kubelet's
        // status manager sends its UID the same way).
        "metadata": {"uid": uid},
        "status": {
            "phase": phase,
            "conditions": [condition("Ready"), condition("ContainersReady")],
            "containerStatuses": statuses,
        },
    }))
}

/// Writes `patch` ([`terminal_status`], [`readiness_patch`]) to the pod's status as a kubelet does (strategic
/// merge: the conditions merge by type, the container statuses are replaced).
async fn report(client: &Client, pod: &Pod, patch: serde_json::Value) -> Result<()> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    Api::<Pod>::namespaced(client.clone(), namespace)
        .patch_status(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .with_context(|| format!("writing the status of pod {namespace}/{name}"))?;
    Ok(())
}

/// Where the containers in `running` listen on the host, by pod UID (what the pod network reads).
fn host_ports_of(running: &HashMap<String, Running>) -> HashMap<String, HashMap<u16, u16>> {
    let mut by_pod: HashMap<String, HashMap<u16, u16>> = HashMap::new();
    for (key, entry) in running.iter().filter(|(_, entry)| !entry.ports.is_empty()) {
        let uid = key.split('/').next().unwrap_or_default().to_owned();
        by_pod.entry(uid).or_default().extend(entry.ports.iter().copied());
    }
    by_pod
}

/// Whether an HTTP GET of `path` on loopback port `port` answers 2xx or 3xx within [`PROBE_TIMEOUT`] (a kubelet's
/// `httpGet` probe).
async fn probe(port: u16, path: &str) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let get = async {
        let mut stream = tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port)).await.ok()?;
        let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        // "HTTP/1.x NNN"
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).await.ok()?;
        let code: u16 = std::str::from_utf8(&head[9..]).ok()?.parse().ok()?;
        Some((200..400).contains(&code))
    };
    matches!(tokio::time::timeout(PROBE_TIMEOUT, get).await, Ok(Some(true)))
}

/// The status patch that makes `pod`'s readiness what its `probed` containers (name → probe passed) say, when it
/// differs from what the pod shows (else `None`): the pod is Ready when every probed container is (the containers
/// the kubelet does not probe count as ready, as kwok reports them). Conditions Ready and ContainersReady (reason
/// `ContainersNotReady` when not), and each probed container's `ready`.
fn readiness_patch(pod: &Pod, probed: &HashMap<&str, bool>) -> Option<serde_json::Value> {
    let uid = pod.metadata.uid.as_deref()?;
    if probed.is_empty() {
        return None;
    }
    let ready = probed.values().all(|ready| *ready);
    if crate::observe::pod_ready(pod) == ready {
        return None;
    }
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.clone()).unwrap_or_default();
    let statuses: Vec<serde_json::Value> = statuses
        .into_iter()
        .map(|mut status| {
            status.ready = probed.get(status.name.as_str()).copied().unwrap_or(status.ready);
            serde_json::to_value(status).unwrap_or_default()
        })
        .collect();
    let now = timestamp(OffsetDateTime::now_utc());
    let reason = (!ready).then_some("ContainersNotReady");
    let status = if ready { "True" } else { "False" };
    let condition =
        |type_: &str| serde_json::json!({"type": type_, "status": status, "reason": reason, "lastTransitionTime": now});
    Some(serde_json::json!({
        "metadata": {"uid": uid},
        "status": {"conditions": [condition("Ready"), condition("ContainersReady")], "containerStatuses": statuses},
    }))
}

/// Returns when `changed` is notified, a process in `running` has exited, or [`RESYNC`] has passed.
async fn until_change(changed: &Notify, running: &mut HashMap<String, Running>) {
    let resync = Instant::now() + RESYNC;
    while Instant::now() < resync {
        if tokio::time::timeout(POLL, changed.notified()).await.is_ok() {
            return;
        }
        if running.values_mut().any(|r| r.process.exited().is_some()) {
            return;
        }
    }
}

/// Watches `api` and notifies `changed` on every event (an error too: the next list says what is wrong). The
/// watch stops when the returned task is dropped. Backing off between failed watches: without it the watcher
/// retried at once, so a kubelet whose API server was killed (connections refused) spun on reconnects for as long
/// as it was down; the loop lists again every RESYNC whatever the watch does.
fn notify_on_change<K>(api: Api<K>, config: watcher::Config, changed: &Arc<Notify>) -> Task
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let changed = changed.clone();
    Task(tokio::spawn(async move {
        let mut events = std::pin::pin!(watcher(api, config).default_backoff());
        while events.next().await.is_some() {
            changed.notify_one();
        }
    }))
}

fn pod_name(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

/// A new network namespace for a gateway pod, plugged into the wire at `address`, with the cluster's API server
/// bridged in.
async fn make_sandbox(wire: &Arc<Wire>, pod: &Pod, address: Ipv4Addr, api_port: u16, dir: &Path) -> Result<Sandbox> {
    let (name, wire) = (pod_name(pod), wire.clone());
    let log = dir.join("logs/wire.log");
    let netns = tokio::task::spawn_blocking(move || -> Result<Netns> {
        let netns = Netns::create(&name, &log)?;
        wire.plug(&netns, address)?;
        Ok(netns)
    })
    .await
    .context("making a network namespace")??;
    let api_server = wire::bridge_api_server(&netns, api_port)?;
    Ok(Sandbox {
        netns,
        address,
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        labels: pod.metadata.labels.clone().unwrap_or_default(),
        _api_server: api_server,
    })
}

/// kube-proxy's part for the gateways: every UDP node port of a NodePort Service whose selector picks a gateway
/// pod the kubelet runs is served on the node's wire address and forwarded to that pod.
async fn serve_node_ports(
    client: &Client,
    wire: &Wire,
    node_ip: Ipv4Addr,
    sandboxes: &HashMap<String, Sandbox>,
    node_ports: &mut HashMap<u16, (SocketAddrV4, Task)>,
) -> Result<()> {
    let services =
        Api::<Service>::all(client.clone()).list(&ListParams::default()).await.context("listing Services")?;
    let mut wanted: HashMap<u16, SocketAddrV4> = HashMap::new();
    for service in &services.items {
        let Some(spec) = service.spec.as_ref().filter(|s| s.type_.as_deref() == Some("NodePort")) else { continue };
        let Some(selector) = spec.selector.as_ref().filter(|s| !s.is_empty()) else { continue };
        let namespace = service.metadata.namespace.as_deref().unwrap_or_default();
        let Some(sandbox) = sandboxes
            .values()
            .find(|s| s.namespace == namespace && selector.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
        else {
            continue;
        };
        for port in spec.ports.iter().flatten().filter(|p| p.protocol.as_deref() == Some("UDP")) {
            let Some(node_port) = port.node_port.and_then(|p| u16::try_from(p).ok()) else { continue };
            let target = match &port.target_port {
                Some(IntOrString::Int(target)) => *target,
                _ => port.port,
            };
            wanted.insert(node_port, SocketAddrV4::new(sandbox.address, u16::try_from(target)?));
        }
    }
    node_ports.retain(|port, (target, _)| wanted.get(port) == Some(target));
    for (port, target) in wanted {
        if let Entry::Vacant(free) = node_ports.entry(port) {
            free.insert((target, wire::node_port(wire, node_ip, port, target)?));
        }
    }
    Ok(())
}

/// What Liqo's wireguard container does for the Connection (`EnsureConnection`), plus the `Connected` its gateway
/// reports once the tunnel is up, for grounds that cannot run them: Connection `gw-<gateway>`, owned by the
/// GatewayServer or GatewayClient.
async fn simulate_gateway(client: &Client, container: &Container) -> Result<()> {
    let args: Vec<String> = container.args.clone().unwrap_or_default();
    let arg = |name: &str| adapt::flag(&args, name).with_context(|| format!("the wireguard container has no {name}"));
    let (gateway, namespace, remote, uid) =
        (arg("--name")?, arg("--namespace")?, arg("--remote-cluster-id")?, arg("--gateway-uid")?);
    let server = arg("--mode")? == "server";
    let (owner, kind, type_) = if server {
        ("GatewayServer", "WgGatewayServer", "Server")
    } else {
        ("GatewayClient", "WgGatewayClient", "Client")
    };
    let name = format!("gw-{gateway}");
    let api_version = "networking.liqo.io/v1beta1";
    let connection = serde_json::json!({
        "apiVersion": api_version,
        "kind": "Connection",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"liqo.io/remote-cluster-id": remote},
            "ownerReferences": [{"apiVersion": api_version, "kind": owner, "name": gateway, "uid": uid}],
        },
        "spec": {
            "type": type_,
            "gatewayRef": {"apiVersion": api_version, "kind": kind, "name": gateway, "namespace": namespace, "uid": uid},
        },
    });
    let api: Api<liqo_schema::liqo::networking::Connection> = Api::namespaced(client.clone(), &namespace);
    let params = PatchParams::apply("liqo-ground-kubelet").force();
    api.patch(&name, &params, &Patch::Apply(&connection))
        .await
        .with_context(|| format!("applying Connection {namespace}/{name}"))?;
    let status = serde_json::json!({
        "apiVersion": api_version,
        "kind": "Connection",
        "status": {"value": liqo_schema::liqo::networking::CONNECTION_CONNECTED},
    });
    api.patch_status(&name, &params, &Patch::Apply(&status))
        .await
        .with_context(|| format!("setting the status of Connection {namespace}/{name}"))?;
    Ok(())
}

/// The build of the Liqo release a container's image names (`ghcr.io/liqotech/webhook:v1.1.2` → the
/// `liqo-v1.1.2` directory beside `installed`, the build the ground installed), so that while a chart upgrade rolls,
/// old and new pods each run their own release, and a virtual kubelet keeps the image its VirtualNode was given.
/// An image without a tag runs the installed build.
fn release_dir(installed: &Path, image: Option<&str>) -> Result<PathBuf> {
    let Some(tag) = image.and_then(liqo_schema::liqo::image_tag) else { return Ok(installed.to_owned()) };
    let dir = installed.with_file_name(format!("liqo-{tag}"));
    if !dir.is_dir() {
        return Err(anyhow!(
            "image {} names Liqo {tag}, which is not built in {}; `acceptance-tests/scripts/build-liqo.sh {tag}` builds it",
            image.unwrap_or_default(),
            dir.display()
        ));
    }
    Ok(dir)
}

fn say(cluster: &str, message: &str) {
    eprintln!("[kubelet] {cluster}: {message}");
}

/// The API server URL and CA (base64, as in the kubeconfig) of the admin kubeconfig's current context.
fn server_and_ca(path: &Path) -> Result<(String, String)> {
    let config = Kubeconfig::read_from(path).with_context(|| format!("reading {}", path.display()))?;
    let cluster = config
        .clusters
        .first()
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| anyhow!("{} names no cluster", path.display()))?;
    let ca = cluster.certificate_authority_data.clone().ok_or_else(|| anyhow!("{} has no CA data", path.display()))?;
    Ok((cluster.server.clone().unwrap_or_default(), ca))
}

struct Launch<'a> {
    cluster: &'a KubeletCluster,
    client: &'a Client,
    server: &'a str,
    ca_data: &'a str,
    liqo_bin: &'a Path,
    dir: &'a Path,
    /// The pod's network namespace, for gateway pods on a real wire.
    netns: Option<&'a Path>,
}

impl Launch<'_> {
    /// Starts the container's process; returns it and its container ports that listen elsewhere on the host.
    async fn start(&self, pod: &Pod, container: &Container, binary: &str) -> Result<(Supervised, Vec<(u16, u16)>)> {
        let release = release_dir(self.liqo_bin, container.image.as_deref())?;
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let pod_name = pod.metadata.name.clone().unwrap_or_default();
        let pod_dir = self.dir.join("pods").join(&self.cluster.name).join(format!("{namespace}_{pod_name}"));
        std::fs::create_dir_all(&pod_dir).with_context(|| format!("creating {}", pod_dir.display()))?;

        let env = self.container_env(pod, container, &namespace).await?;
        let args: Vec<String> = container
            .command
            .iter()
            .flatten()
            .skip(1)
            .chain(container.args.iter().flatten())
            .map(|arg| expand(arg, &env))
            .collect();
        let kubeconfig = pod_dir.join("kubeconfig");
        let token = self.token(pod, &namespace).await?;
        let rendered = serde_yaml::to_string(&serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": self.cluster.name, "cluster": {
                "server": self.server,
                "certificate-authority-data": self.ca_data,
            }}],
            "users": [{"name": "pod", "user": {"token": token}}],
            "contexts": [{"name": self.cluster.name, "context": {"cluster": self.cluster.name, "user": "pod"}}],
            "current-context": self.cluster.name,
        }))?;
        std::fs::write(&kubeconfig, rendered).with_context(|| format!("writing {}", kubeconfig.display()))?;

        let plan =
            adapt::adapt_process(binary, container, args, self.cluster.ports, &pod_dir, self.client, pod).await?;
        let mut all_env: Vec<(String, String)> = env.into_iter().collect();
        all_env.extend(plan.env);
        // Where a pod finds its cluster: the kubelet mounts a token; Liqo's binaries also read KUBECONFIG.
        all_env.push(("KUBECONFIG".into(), kubeconfig.display().to_string()));
        let mut volumes = plan.private_dirs;
        for (mount_path, volume) in adapt::empty_dirs(pod, container, self.netns.is_some()) {
            let dir = pod_dir.join("volumes").join(&volume);
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            volumes.push((dir, mount_path));
        }
        let (program, args) = match self.netns {
            Some(netns) => {
                let root = pod_dir.join(format!("{}-root", container.name));
                std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
                let image = release.join(format!("{binary}-image"));
                let image = image.is_dir().then_some(image.as_path());
                adapt::in_sandbox(&release.join(binary), plan.args, netns, &root, image, &volumes)
            }
            None => adapt::with_volumes(&release.join(binary), plan.args, &volumes),
        };
        let spec = Spec {
            name: format!("{}/{namespace}/{pod_name}/{}", self.cluster.name, container.name),
            program,
            args,
            env: all_env,
            log: self.dir.join("logs").join(format!("{}-{pod_name}-{}.log", self.cluster.name, container.name)),
        };
        Ok((process::spawn(&spec, Lifetime::Attached)?, plan.ports))
    }

    /// The container's environment as the kubelet resolves it (values, field references, ConfigMap and Secret
    /// keys), without the in-cluster service variables: the processes use their kubeconfig.
    async fn container_env(
        &self,
        pod: &Pod,
        container: &Container,
        namespace: &str,
    ) -> Result<BTreeMap<String, String>> {
        let mut env = BTreeMap::new();
        for var in container.env.iter().flatten() {
            let value = if let Some(value) = &var.value {
                Some(expand(value, &env))
            } else if let Some(from) = &var.value_from {
                if let Some(field) = &from.field_ref {
                    Some(field_value(pod, &field.field_path)?)
                } else if let Some(key) = &from.config_map_key_ref {
                    let map = Api::<ConfigMap>::namespaced(self.client.clone(), namespace)
                        .get_opt(&key.name)
                        .await
                        .with_context(|| format!("reading ConfigMap {namespace}/{}", key.name))?;
                    let value = map.and_then(|m| m.data).and_then(|d| d.get(&key.key).cloned());
                    if value.is_none() && !key.optional.unwrap_or(false) {
                        anyhow::bail!("env {}: ConfigMap {namespace}/{} has no key {}", var.name, key.name, key.key);
                    }
                    value
                } else if let Some(key) = &from.secret_key_ref {
                    let secret = Api::<Secret>::namespaced(self.client.clone(), namespace)
                        .get_opt(&key.name)
                        .await
                        .with_context(|| format!("reading Secret {namespace}/{}", key.name))?;
                    let value = secret
                        .and_then(|s| s.data)
                        .and_then(|d| d.get(&key.key).map(|v| String::from_utf8_lossy(&v.0).into_owned()));
                    if value.is_none() && !key.optional.unwrap_or(false) {
                        anyhow::bail!("env {}: Secret {namespace}/{} has no key {}", var.name, key.name, key.key);
                    }
                    value
                } else {
                    anyhow::bail!(
                        "env {}: only values, fieldRef, configMapKeyRef and secretKeyRef are supported",
                        var.name
                    )
                }
            } else {
                Some(String::new())
            };
            if let Some(value) = value {
                env.insert(var.name.clone(), value);
            }
        }
        Ok(env)
    }

    /// A token of the pod's ServiceAccount, bound to the pod (invalid once the pod is deleted), as the kubelet
    /// projects it.
    async fn token(&self, pod: &Pod, namespace: &str) -> Result<String> {
        let account = pod.spec.as_ref().and_then(|s| s.service_account_name.clone()).unwrap_or("default".into());
        let request = TokenRequest {
            spec: TokenRequestSpec {
                audiences: Vec::new(),
                expiration_seconds: Some(TOKEN_SECONDS),
                bound_object_ref: Some(BoundObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Pod".into()),
                    name: pod.metadata.name.clone(),
                    uid: pod.metadata.uid.clone(),
                }),
            },
            ..Default::default()
        };
        let answer = Api::<ServiceAccount>::namespaced(self.client.clone(), namespace)
            .create_token_request(&account, &PostParams::default(), &request)
            .await
            .with_context(|| format!("requesting a token for ServiceAccount {namespace}/{account}"))?;
        answer.status.map(|s| s.token).ok_or_else(|| anyhow!("the TokenRequest for {namespace}/{account} has no token"))
    }
}

fn field_value(pod: &Pod, path: &str) -> Result<String> {
    let status = pod.status.as_ref();
    let spec = pod.spec.as_ref();
    let value = match path {
        "metadata.name" => pod.metadata.name.clone(),
        "metadata.namespace" => pod.metadata.namespace.clone(),
        "metadata.uid" => pod.metadata.uid.clone(),
        "spec.nodeName" => spec.and_then(|s| s.node_name.clone()),
        "spec.serviceAccountName" => spec.and_then(|s| s.service_account_name.clone()),
        "status.podIP" => status.and_then(|s| s.pod_ip.clone()),
        "status.hostIP" => status.and_then(|s| s.host_ip.clone()),
        other => anyhow::bail!("fieldRef {other} is not supported by the ground's kubelet"),
    };
    Ok(value.unwrap_or_default())
}

/// Kubernetes' `$(VAR)` expansion: defined variables are replaced, `$$` is a literal `$`, anything else stays.
fn expand(text: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(k) = rest.find('$') {
        out.push_str(&rest[..k]);
        let after = &rest[k + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
            && let Some(value) = env.get(&inner[..end])
        {
            out.push_str(value);
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started_pod(ready: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "liqo-webhook-x", "namespace": "liqo", "uid": "u2"},
            "spec": {"containers": [{"name": "webhook", "image": "ghcr.io/liqotech/webhook:v1.2.0"}, {"name": "other"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": ready}], "containerStatuses": [
                {"name": "webhook", "image": "", "imageID": "", "ready": ready == "True", "restartCount": 0},
                {"name": "other", "image": "", "imageID": "", "ready": true, "restartCount": 0},
            ]},
        }))
        .expect("a pod")
    }

    #[test]
    fn a_probed_pod_turns_ready_with_its_probe_and_back_when_it_stops() {
        let passed = HashMap::from([("webhook", true)]);
        let patch = readiness_patch(&started_pod("False"), &passed).expect("a change");
        assert_eq!(patch["metadata"]["uid"], "u2");
        let conditions = &patch["status"]["conditions"];
        assert_eq!((&conditions[0]["type"], &conditions[0]["status"]), (&"Ready".into(), &"True".into()));
        assert_eq!((&conditions[1]["type"], &conditions[1]["status"]), (&"ContainersReady".into(), &"True".into()));
        assert!(conditions[0]["reason"].is_null(), "{patch}");
        let statuses = &patch["status"]["containerStatuses"];
        assert_eq!((statuses[0]["ready"].as_bool(), statuses[1]["ready"].as_bool()), (Some(true), Some(true)));
        // Nothing to write while the pod shows what the probe says.
        assert_eq!(readiness_patch(&started_pod("True"), &passed), None);
        assert_eq!(readiness_patch(&started_pod("False"), &HashMap::from([("webhook", false)])), None);
        assert_eq!(readiness_patch(&started_pod("True"), &HashMap::new()), None, "no probed container");
        // Its process exited: not Ready; the container the kubelet does not probe keeps what kwok reported.
        let patch = readiness_patch(&started_pod("True"), &HashMap::from([("webhook", false)])).expect("a change");
        assert_eq!(patch["status"]["conditions"][0]["status"], "False");
        assert_eq!(patch["status"]["conditions"][0]["reason"], "ContainersNotReady");
        let statuses = &patch["status"]["containerStatuses"];
        assert_eq!((statuses[0]["ready"].as_bool(), statuses[1]["ready"].as_bool()), (Some(false), Some(true)));
    }

    #[tokio::test]
    async fn a_probe_passes_on_2xx_and_3xx_only() -> Result<()> {
        let serve = |answer: &'static str| async move {
            let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
            let port = listener.local_addr()?.port();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                while let Ok((mut stream, _)) = listener.accept().await {
                    let mut request = [0u8; 512];
                    let _ = stream.read(&mut request).await;
                    let _ = stream.write_all(answer.as_bytes()).await;
                }
            });
            anyhow::Ok(port)
        };
        assert!(probe(serve("HTTP/1.1 200 OK\r\n\r\nok").await?, "/readyz").await);
        assert!(probe(serve("HTTP/1.0 302 Found\r\n\r\n").await?, "/readyz").await);
        assert!(!probe(serve("HTTP/1.1 500 Internal Server Error\r\n\r\n").await?, "/readyz").await);
        assert!(!probe(serve("garbage").await?, "/readyz").await);
        // Nothing listening.
        let closed = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?.local_addr()?.port();
        assert!(!probe(closed, "/readyz").await);
        Ok(())
    }

    #[test]
    fn expansion_follows_kubernetes() {
        let env = BTreeMap::from([("A".to_owned(), "x".to_owned())]);
        assert_eq!(expand("--id=$(A)", &env), "--id=x");
        assert_eq!(expand("$(B)-$$(A)-$", &env), "$(B)-$(A)-$");
    }

    fn job_pod(restart_policy: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "liqo-pre-delete-x", "namespace": "liqo", "uid": "u1"},
            "spec": {"restartPolicy": restart_policy, "containers": [
                {"name": "pre-delete-job", "image": "ghcr.io/liqotech/uninstaller:v1.2.0", "command": ["/usr/bin/uninstaller"]},
                {"name": "sidecar", "image": "envoy"},
            ]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "pre-delete-job", "image": "", "imageID": "", "ready": true, "restartCount": 2}]},
        }))
        .expect("a pod")
    }

    #[test]
    fn restart_policy_decides_what_runs_to_completion() {
        let (ok, failed) = (ExitStatus::from_raw(0), ExitStatus::from_raw(1 << 8));
        assert!(runs_to_completion(&job_pod("Never"), ok) && runs_to_completion(&job_pod("Never"), failed));
        assert!(runs_to_completion(&job_pod("OnFailure"), ok) && !runs_to_completion(&job_pod("OnFailure"), failed));
        assert!(!runs_to_completion(&job_pod("Always"), ok) && !runs_to_completion(&job_pod("Always"), failed));
        assert_eq!(exit_code(failed), 1);
        assert_eq!(exit_code(ExitStatus::from_raw(9)), 137, "SIGKILL");
    }

    #[test]
    fn a_finished_pod_reports_as_a_kubelet_does() {
        let pod = job_pod("Never");
        let mut finished = HashMap::new();
        assert!(terminal_status(&pod, &finished).is_none(), "nothing has run yet");
        let at = OffsetDateTime::UNIX_EPOCH;
        finished.insert("u1/pre-delete-job".to_owned(), Finished { exit_code: 0, started_at: at, finished_at: at });
        let status = terminal_status(&pod, &finished).expect("finished");
        assert_eq!(status["metadata"]["uid"], "u1");
        assert_eq!(status["status"]["phase"], "Succeeded");
        let ready = &status["status"]["conditions"][0];
        assert_eq!(
            (&ready["type"], &ready["status"], &ready["reason"]),
            (&"Ready".into(), &"False".into(), &"PodCompleted".into())
        );
        let ran = &status["status"]["containerStatuses"][0];
        assert_eq!(ran["restartCount"], 2);
        assert_eq!(ran["state"]["terminated"]["reason"], "Completed");
        assert_eq!(ran["state"]["terminated"]["startedAt"], "1970-01-01T00:00:00Z");
        // The container the ground does not run ends with the pod, as kwok's pod-complete would end it.
        assert_eq!(status["status"]["containerStatuses"][1]["state"]["terminated"]["exitCode"], 0);

        finished.insert("u1/pre-delete-job".to_owned(), Finished { exit_code: 1, started_at: at, finished_at: at });
        let status = terminal_status(&pod, &finished).expect("finished");
        assert_eq!(status["status"]["phase"], "Failed");
        assert_eq!(status["status"]["conditions"][1]["reason"], "PodFailed");
        assert_eq!(status["status"]["containerStatuses"][0]["state"]["terminated"]["reason"], "Error");
    }

    #[test]
    fn each_container_runs_the_release_its_image_names() -> Result<()> {
        let bin = tempfile::tempdir()?;
        let installed = bin.path().join("liqo-v1.2.0");
        std::fs::create_dir_all(&installed)?;
        std::fs::create_dir_all(bin.path().join("liqo-v1.1.2"))?;
        let old = release_dir(&installed, Some("ghcr.io/liqotech/liqo-controller-manager:v1.1.2"))?;
        assert_eq!(old, bin.path().join("liqo-v1.1.2"));
        assert_eq!(release_dir(&installed, Some("localhost:5000/liqo/webhook:v1.2.0@sha256:ab"))?, installed);
        assert_eq!(release_dir(&installed, Some("localhost:5000/webhook"))?, installed);
        assert_eq!(release_dir(&installed, None)?, installed);
        let missing = release_dir(&installed, Some("ghcr.io/liqotech/ipam:v1.0.3")).unwrap_err().to_string();
        assert!(
            missing.contains("Liqo v1.0.3, which is not built") && missing.contains("build-liqo.sh v1.0.3"),
            "{missing}"
        );
        Ok(())
    }
}
