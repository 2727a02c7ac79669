//! The provider's whole peering on real Liqo with real gateways (`Ground::shared`): liqo_generate and
//! liqo_gateway on both clusters, liqo_tenant and liqo_peer; Liqo's own gateway and wireguard binaries build a
//! userspace WireGuard tunnel between network namespaces of the ground, and their Connection makes the apply
//! finish and the virtual node Ready.
//!
//! The tests share one ground (milan and rome) and run one at a time (`SERIAL`): each builds and destroys the
//! same peering; `overlapping_pod_cidrs_are_remapped_and_reported` starts a ground of its own, whose clusters share
//! one pod CIDR. Where the ground cannot make network namespaces (not root), it simulates the gateways and says
//! so; the assertions about the gateways' processes and the tunnel's latency then fail, as they should.
//!
//! Run: `cargo test -p liqo-acceptance --test real_fabric`.
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Node, Pod, Secret};
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams};
use liqo_acceptance::chain::full_chain;
use liqo_acceptance::ground::{Options, PodCidrs};
use liqo_acceptance::http_proxy::ConnectProxy;
use liqo_acceptance::inventory;
use liqo_acceptance::observe::{eventually, flat};
use liqo_acceptance::offloaded_pod::{remote_namespace, shadow_pods};
use liqo_acceptance::tf::{Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME};
use liqo_schema::liqo::labels;
use liqo_schema::liqo::networking::{CONNECTION_CONNECTED, Connection};
use liqo_schema::liqo::{Configuration, ForeignCluster, GatewayServer, Quota, ResourceSlice, Tenant};
use rustix::process::{Pid, Signal};

/// The tests build the same peering on the one shared ground.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const MILAN_NS: &str = "liqo-tenant-rome";
const ROME_NS: &str = "liqo-tenant-milan";
const RESOURCES: &str = r#"{ cpu = "2", memory = "4Gi", pods = "50" }"#;

fn ground() -> &'static Ground {
    let ground = Ground::shared();
    if let Some(gateways) = ground.gateways() {
        eprintln!("[real_fabric] {}", gateways.describe());
    }
    ground
}

/// The Connection of the gateway in `namespace` of `cluster`, if Liqo's gateway has made it.
async fn connection(ground: &Ground, cluster: &str, namespace: &str) -> Result<Option<Connection>> {
    let api: Api<Connection> = Api::namespaced(ground.client(cluster).await?, namespace);
    Ok(api.list(&ListParams::default()).await?.items.into_iter().next())
}

async fn virtual_node_ready(ground: &Ground) -> Result<bool> {
    let nodes: Api<Node> = Api::all(ground.client(ROME).await?);
    let virtual_nodes = nodes.list(&ListParams::default().labels("liqo.io/type=virtual-node")).await?;
    Ok(virtual_nodes.items.iter().any(liqo_acceptance::observe::node_ready))
}

/// Destroys and checks that no Liqo object and no gateway process is left.
async fn destroy_leaves_nothing(ground: &Ground, work: &Workdir, what: &str) -> Result<()> {
    work.destroy().await.with_context(|| format!("{what}: destroy"))?;
    inventory::nothing_left(ground, &[MILAN, ROME]).await.with_context(|| format!("{what}: destroy"))?;
    eventually(Duration::from_secs(30), "the gateway processes to stop after destroy", || async {
        let running: usize = [MILAN, ROME]
            .iter()
            .flat_map(|c| ["gateway", "wireguard"].map(|b| ground.liqo_processes(c, b).len()))
            .sum();
        Ok((running == 0).then_some(()))
    })
    .await
    .with_context(|| format!("{what}: destroy"))
}

/// The peering of the contract's example, built by the provider on real Liqo: the client's apply returns once
/// Liqo's gateways report `Connected` on both clusters, with the latency their pings measured through the tunnel;
/// the virtual node is Ready (Liqo keeps it NotReady until then); the re-plan is empty; destroy leaves nothing.
#[tokio::test(flavor = "multi_thread")]
async fn provider_peering_connects_over_a_real_tunnel() -> Result<()> {
    let _serial = SERIAL.lock().await;
    let ground = ground();
    for cli in Cli::available() {
        let what = format!("the full peering on real Liqo with {}", cli.name());
        let work = Workdir::new(cli, &full_chain(ground, RESOURCES)).await?;
        let apply = work.apply().await.with_context(|| format!("{what}: apply"))?;
        eprintln!("[real_fabric] {what}: apply took {:.1}s", apply.duration.as_secs_f64());
        for (cluster, namespace) in [(MILAN, MILAN_NS), (ROME, ROME_NS)] {
            for binary in ["gateway", "wireguard"] {
                let running = ground.liqo_processes(cluster, binary);
                ensure!(running.len() == 1, "{what}: {cluster} runs {} {binary} processes, not one", running.len());
            }
            // The Connection is Connected for good: the gateway's pings keep measuring the tunnel.
            let status = eventually(Duration::from_secs(30), "a measured latency", || async {
                let status = connection(ground, cluster, namespace).await?.and_then(|c| c.status);
                Ok(status.filter(|s| s.latency.as_ref().is_some_and(|l| l.value.is_some())))
            })
            .await
            .with_context(|| format!("{what}: the Connection on {cluster}"))?;
            ensure!(
                status.value.as_deref() == Some(CONNECTION_CONNECTED),
                "{what}: the Connection on {cluster} is {:?}",
                status.value
            );
            eprintln!(
                "[real_fabric] {what}: {cluster} Connected, latency {}",
                status.latency.and_then(|l| l.value).unwrap_or_default()
            );
        }
        ensure!(virtual_node_ready(ground).await?, "{what}: the virtual node on {ROME} is not Ready");
        let plan = work.plan().await?;
        ensure!(plan.is_empty(), "{what}: the plan after apply is not empty:\n{}", plan.run().stdout);
        peerings_read_as_liqo_wrote(ground, &work, &what).await?;
        destroy_leaves_nothing(ground, &work, &what).await?;
    }
    Ok(())
}

/// Two clusters with the same pod CIDR, as two kind clusters have (10.244.0.0/16): each cluster's Liqo gives the
/// peer's pod CIDR another range, the tunnel connects and the virtual node is Ready. Both liqo_gateway resources'
/// `remapped_pod_cidrs` and `remapped_external_cidr`, and liqo_peering's on both sides, are what Liqo wrote in the
/// Configuration's `status.remote`; the remapped pod CIDR is not the peer's own; the re-plan is empty.
/// (The ground's pods are kwok's, with no network behind their addresses: no packet to a remapped address is
/// sent.)
#[tokio::test(flavor = "multi_thread")]
async fn overlapping_pod_cidrs_are_remapped_and_reported() -> Result<()> {
    let options = Options { pod_cidrs: PodCidrs::Same, ..Options::default() };
    let ground = Ground::start_with(&[MILAN, ROME], options).await?;
    let pod_cidr = ground.cluster(MILAN).pod_cidr.clone();
    ensure!(ground.cluster(ROME).pod_cidr == pod_cidr, "the ground's clusters were given different pod CIDRs");
    for cli in Cli::available() {
        let what = format!("overlapping pod CIDRs ({pod_cidr} on both clusters) with {}", cli.name());
        let config = format!("{}\n{}", full_chain(&ground, RESOURCES), include_str!("real_fabric/remapped.tf"));
        let work = Workdir::new(cli, &config).await?;
        work.apply().await.with_context(|| format!("{what}: apply"))?;
        ensure!(virtual_node_ready(&ground).await?, "{what}: the virtual node on {ROME} is not Ready");
        let remapped = &work.output_json().await?["remapped"]["value"];
        for (cluster, namespace, peer, gateway, peering) in
            [(MILAN, MILAN_NS, ROME, "server", "on_milan"), (ROME, ROME_NS, MILAN, "client", "on_rome")]
        {
            let configurations: Api<Configuration> = Api::namespaced(ground.client(cluster).await?, namespace);
            let written = configurations.get(peer).await?.remapped();
            let pods = written.pods();
            eprintln!(
                "[real_fabric] {what}: {cluster} sees {peer}'s pods at {pods:?}, external {:?}",
                written.first_external()
            );
            ensure!(
                !pods.is_empty() && !pods.contains(&pod_cidr),
                "{what}: Liqo on {cluster} did not remap {peer}'s pod CIDR {pod_cidr}: status.remote.cidr.pod is {pods:?}"
            );
            let want = serde_json::json!({ "pods": pods, "external": written.first_external() });
            for (source, got) in [
                (format!("liqo_gateway.{gateway}"), &remapped[gateway]),
                (format!("liqo_peering {peering}"), &remapped[peering]),
            ] {
                ensure!(
                    *got == want,
                    "{what}: {source} reports {got}, Liqo wrote {want} in Configuration {namespace}/{peer}"
                );
            }
        }
        let plan = work.plan().await?;
        ensure!(plan.is_empty(), "{what}: the plan after apply is not empty:\n{}", plan.run().stdout);
        destroy_leaves_nothing(&ground, &work, &what).await?;
    }
    Ok(())
}

/// `liqo_peering` on both sides of the working peering, as Liqo's ForeignCluster controller reports it: milan a
/// Provider for rome and rome a Consumer for milan, authentication Healthy, the network connection Established
/// and rome's offloading Healthy. (Liqo also checks the gateway Deployments' ready replicas, which the ground's
/// kwok does not report, so `healthy` stays false here.) Rome's identity for milan is the declarative one (a
/// control-plane Secret, no Identity resource): the API server URL and tenant namespaces are exactly what Liqo
/// wrote in the ForeignCluster, null where it wrote nothing.
async fn peerings_read_as_liqo_wrote(ground: &Ground, work: &Workdir, what: &str) -> Result<()> {
    work.write("peerings.tf", include_str!("real_fabric/peerings.tf"))?;
    work.apply().await.with_context(|| format!("{what}: reading liqo_peering"))?;
    let outputs = work.output_json().await?;
    for (side, role) in [("on_rome", "Provider"), ("on_milan", "Consumer")] {
        let peering = &outputs["peerings"]["value"][side];
        ensure!(peering["role"] == role, "{what}: liqo_peering {side} has role {}, not {role}", peering["role"]);
        ensure!(
            peering["authentication"]["status"] == "Healthy",
            "{what}: liqo_peering {side}: authentication is {}",
            peering["authentication"]
        );
        let established = peering["networking"]["conditions"].as_array().is_some_and(|conditions| {
            conditions.iter().any(|c| c["type"] == "NetworkConnectionStatus" && c["status"] == "Established")
        });
        ensure!(established, "{what}: liqo_peering {side}: no established connection in {}", peering["networking"]);
    }
    let offloading = &outputs["peerings"]["value"]["on_rome"]["offloading"];
    ensure!(offloading["status"] == "Healthy", "{what}: liqo_peering on_rome: offloading is {offloading}");
    let on_rome = &outputs["peerings"]["value"]["on_rome"];
    let fc: Api<ForeignCluster> = Api::all(ground.client(ROME).await?);
    let status = fc.get(MILAN).await?.status.context("rome's ForeignCluster milan has no status")?;
    let namespaces = status.tenant_namespace.unwrap_or_default();
    for (field, written) in [
        ("api_server_url", status.api_server_url),
        ("tenant_namespace_local", namespaces.local),
        ("tenant_namespace_remote", namespaces.remote),
    ] {
        ensure!(
            on_rome[field] == serde_json::to_value(&written)?,
            "{what}: liqo_peering on rome reports {field} = {}, Liqo wrote {written:?}",
            on_rome[field]
        );
    }
    work.write("peerings.tf", "")?;
    Ok(())
}

/// The client (rome) is given a public key that is not milan's: the real WireGuard handshake fails, Liqo's gateway
/// on rome reports the Connection in `Error`, and the apply fails naming the Connection and the likely causes
/// instead of waiting for ever. Destroy still leaves nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_remote_public_key_fails_the_apply_with_the_real_connection_error() -> Result<()> {
    let _serial = SERIAL.lock().await;
    let ground = ground();
    for cli in Cli::available() {
        let what = format!("a wrong public key on real Liqo with {}", cli.name());
        let work = Workdir::new(cli, &full_chain(ground, RESOURCES)).await?;
        work.write("stranger_key.tf", include_str!("real_fabric/stranger_key.tf"))?;
        work.write("stranger_key_override.tf", include_str!("real_fabric/stranger_key_override.tf"))?;
        work.write_vars(&serde_json::json!({ "stranger_public_key": liqo_acceptance::chain::stranger_public_key() }))?;
        let failed = work.apply_fails().await.with_context(|| format!("{what}: apply"))?;
        eprintln!("[real_fabric] {what}: the apply failed after {:.1}s", failed.duration.as_secs_f64());
        // The fault is real: rome's own wireguard ran and Liqo's gateway judged the tunnel.
        ensure!(ground.liqo_processes(ROME, "wireguard").len() == 1, "{what}: rome's wireguard is not running");
        let status = connection(ground, ROME, ROME_NS).await?.and_then(|c| c.status).and_then(|s| s.value);
        ensure!(
            status.as_deref() == Some(liqo_schema::liqo::networking::CONNECTION_ERROR),
            "{what}: rome's Connection is {status:?}, not Error"
        );
        let stderr = flat(&failed.stderr);
        let connection_named = format!("Connection {ROME_NS}/");
        for needle in [connection_named.as_str(), "status.value has been Error", "Key mismatch"] {
            ensure!(stderr.contains(needle), "{what}: the failure does not mention {needle:?}:\n{}", failed.stderr);
        }
        destroy_leaves_nothing(ground, &work, &what).await?;
    }
    Ok(())
}

fn kill(pid: u32) -> Result<()> {
    let pid = i32::try_from(pid).ok().and_then(Pid::from_raw).context("a process ID")?;
    rustix::process::kill_process(pid, Signal::KILL).context("killing a Liqo process")
}

/// Waits for the first process of `binary` on `cluster` and kills it (SIGKILL, a crash), returning its PID.
async fn kill_first(ground: &Ground, cluster: &str, binary: &str) -> Result<u32> {
    let pid = first_process(ground, cluster, binary).await?;
    kill(pid)?;
    Ok(pid)
}

/// The first `binary` process of `cluster` (waiting for one to start).
async fn first_process(ground: &Ground, cluster: &str, binary: &str) -> Result<u32> {
    eventually(Duration::from_secs(120), &format!("a {binary} process on {cluster}"), || async {
        Ok(ground.liqo_processes(cluster, binary).first().map(|(pid, _)| *pid))
    })
    .await
}

/// rome's gateway process is killed as soon as it starts, before it can report the tunnel: the apply keeps
/// waiting, the ground's kubelet restarts the process (as a kubelet restarts a crashed container), and the apply
/// succeeds once the new gateway reports `Connected`.
#[tokio::test(flavor = "multi_thread")]
async fn the_apply_survives_a_gateway_killed_before_it_connected() -> Result<()> {
    let _serial = SERIAL.lock().await;
    let ground = ground();
    for cli in Cli::available() {
        let what = format!("rome's gateway killed mid-apply with {}", cli.name());
        let work = Workdir::new(cli, &full_chain(ground, RESOURCES)).await?;
        let apply = work.run(&["apply", "-auto-approve", "-input=false", "-no-color"]);
        let crash = async {
            let pid = first_process(ground, ROME, "gateway").await?;
            // What the Connection said the moment before the kill.
            let status = connection(ground, ROME, ROME_NS).await?.and_then(|c| c.status).and_then(|s| s.value);
            kill(pid)?;
            anyhow::Ok((pid, status))
        };
        let (applied, crashed) = tokio::join!(apply, crash);
        let (applied, (killed, status_at_kill)) = (applied?, crashed?);
        ensure!(applied.success(), "{what}: the apply failed:\n{applied}");
        // The fault happened before the tunnel was reported: the apply had to wait for the restarted gateway.
        ensure!(
            status_at_kill.as_deref() != Some(CONNECTION_CONNECTED),
            "{what}: the gateway was killed only after it reported Connected"
        );
        let now: Vec<u32> = ground.liqo_processes(ROME, "gateway").into_iter().map(|(pid, _)| pid).collect();
        ensure!(now.len() == 1 && now[0] != killed, "{what}: gateway processes {now:?} after killing {killed}");
        let status = connection(ground, ROME, ROME_NS).await?.and_then(|c| c.status).and_then(|s| s.value);
        ensure!(status.as_deref() == Some(CONNECTION_CONNECTED), "{what}: rome's Connection is {status:?}");
        eprintln!("[real_fabric] {what}: applied in {:.1}s with a restarted gateway", applied.duration.as_secs_f64());
        destroy_leaves_nothing(ground, &work, &what).await?;
    }
    Ok(())
}

/// milan's liqo-controller-manager crashes as the apply starts (before any tunnel exists): the provider's objects
/// wait for Liqo, the kubelet restarts it, and the apply completes.
#[tokio::test(flavor = "multi_thread")]
async fn the_apply_completes_after_the_controller_manager_restarts() -> Result<()> {
    let _serial = SERIAL.lock().await;
    let ground = ground();
    for cli in Cli::available() {
        let what = format!("milan's liqo-controller-manager killed mid-apply with {}", cli.name());
        let work = Workdir::new(cli, &full_chain(ground, RESOURCES)).await?;
        // Killed as the apply starts: the provider's objects reach a milan whose Liqo is down, and the apply can
        // finish only after the kubelet has restarted it (on an idle machine the whole apply takes a few seconds,
        // too short to aim a kill between two of its steps).
        let killed = kill_first(ground, MILAN, "liqo-controller-manager").await?;
        let apply = work.run(&["apply", "-auto-approve", "-input=false", "-no-color"]);
        let crash = async {
            let peered = connection(ground, ROME, ROME_NS).await?.is_some();
            anyhow::Ok((killed, peered))
        };
        let (applied, crashed) = tokio::join!(apply, crash);
        let (applied, (killed, connected_before)) = (applied?, crashed?);
        ensure!(applied.success(), "{what}: the apply failed:\n{applied}");
        ensure!(!connected_before, "{what}: the controller-manager was killed only after the gateways were up");
        let now: Vec<u32> =
            ground.liqo_processes(MILAN, "liqo-controller-manager").into_iter().map(|(pid, _)| pid).collect();
        ensure!(
            now.len() == 1 && now[0] != killed,
            "{what}: controller-manager processes {now:?} after killing {killed}"
        );
        ensure!(virtual_node_ready(ground).await?, "{what}: the virtual node on {ROME} is not Ready");
        eprintln!("[real_fabric] {what}: applied in {:.1}s across the restart", applied.duration.as_secs_f64());
        destroy_leaves_nothing(ground, &work, &what).await?;
    }
    Ok(())
}

/// rome consumes milan through two ResourceSlices, `milan` and `milan-b`, each with its virtual node. liqo_tenant's
/// `cordoned_resource_slices = ["milan-b"]` cordons the second as `liqoctl cordon resourceslice` does: Liqo marks its
/// Quota cordoned and not the other's; a new pod bound to virtual node `milan-b` is refused by milan's webhook (the
/// virtual kubelet's FailedReflection event quotes "user is cordoned", and no ShadowPod appears), while one bound to
/// `milan` runs on milan. The re-plan is empty; an out-of-band uncordon shows as drift and the next apply cordons
/// again; an empty set uncordons, and a new pod on `milan-b` then runs. Destroy leaves nothing.
#[tokio::test(flavor = "multi_thread")]
async fn one_cordoned_slice_refuses_new_pods_while_the_other_serves() -> Result<()> {
    let _serial = SERIAL.lock().await;
    let ground = ground();
    for cli in Cli::available() {
        let what = format!("one ResourceSlice cordoned on real Liqo with {}", cli.name());
        let work = Workdir::new(cli, &full_chain(ground, RESOURCES)).await?;
        work.write("second_slice.tf", include_str!("real_fabric/second_slice.tf"))?;
        work.apply().await.with_context(|| format!("{what}: apply of two slices"))?;
        work.write("cordon_override.tf", CORDON_B)?;
        work.apply().await.with_context(|| format!("{what}: apply of the cordon"))?;
        let (milan, rome) = (ground.client(MILAN).await?, ground.client(ROME).await?);
        let quotas: Api<Quota> = Api::namespaced(milan.clone(), MILAN_NS);
        let cordoned: Vec<(String, bool)> = quotas
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .filter_map(|q| {
                let slice = q.metadata.owner_references.iter().flatten().find(|o| o.kind == "ResourceSlice")?;
                Some((slice.name.clone(), q.spec.cordoned.unwrap_or(false)))
            })
            .collect();
        ensure!(
            cordoned.contains(&("milan-b".into(), true)) && cordoned.contains(&("milan".into(), false)),
            "{what}: Liqo's Quotas on milan are (slice, cordoned) {cordoned:?}, not milan-b alone cordoned"
        );
        let remote_ns = remote_namespace(&rome, SLICES_NS).await?;
        let refused = pod_on(&rome, "on-b", "milan-b").await?;
        let event =
            eventually(Duration::from_secs(60), "the virtual kubelet's FailedReflection event for on-b", || async {
                let events: Api<Event> = Api::namespaced(rome.clone(), SLICES_NS);
                let listed = events.list(&ListParams::default().fields("involvedObject.name=on-b")).await?.items;
                Ok(listed.into_iter().filter_map(|e| e.message).find(|m| m.contains("user is cordoned")))
            })
            .await
            .with_context(|| format!("{what}: a pod on the cordoned slice's virtual node"))?;
        eprintln!("[real_fabric] {what}: pod {} refused: {event}", refused);
        // Liqo 1.2.0 enforces the cordon on the provider only: the consumer's virtual node stays schedulable and the
        // refused pod stays Pending there (the docs say so).
        let node = Api::<Node>::all(rome.clone()).get("milan-b").await?;
        ensure!(
            !node.spec.and_then(|s| s.unschedulable).unwrap_or(false),
            "{what}: virtual node milan-b is unschedulable: Liqo now cordons the node too, update the docs"
        );
        let phase = Api::<Pod>::namespaced(rome.clone(), SLICES_NS).get("on-b").await?.status.and_then(|s| s.phase);
        ensure!(phase.as_deref() == Some("Pending"), "{what}: the refused pod on-b is {phase:?}, not Pending");
        ensure!(
            shadow_pods(milan.clone(), &remote_ns).get_opt("on-b").await?.is_none(),
            "{what}: milan has a ShadowPod for on-b although its slice is cordoned"
        );
        running_on_milan(&rome, &milan, &remote_ns, "on-a", "milan")
            .await
            .with_context(|| format!("{what}: the other slice"))?;
        let plan = work.plan().await?;
        ensure!(plan.is_empty(), "{what}: the plan after the cordon is not empty:\n{}", plan.run().stdout);

        // Uncordoned out of band (`liqoctl uncordon resourceslice`): drift.
        let slices: Api<ResourceSlice> = Api::namespaced(milan.clone(), MILAN_NS);
        let patch = serde_json::json!({"metadata": {"annotations": {"liqo.io/cordon": null}}});
        slices.patch("milan-b", &PatchParams::default(), &Patch::Merge(patch)).await?;
        let plan = work.plan().await?;
        ensure!(
            plan.run().stdout.contains("cordoned_resource_slices"),
            "{what}: an out-of-band uncordon is not shown as drift:\n{}",
            plan.run().stdout
        );
        work.apply().await.with_context(|| format!("{what}: apply repairing the cordon"))?;
        let (cordon, _) = slices.get("milan-b").await?.cordons();
        ensure!(cordon, "{what}: the apply after the out-of-band uncordon did not cordon milan-b again");

        work.write("cordon_override.tf", UNCORDON)?;
        work.apply().await.with_context(|| format!("{what}: apply of the uncordon"))?;
        running_on_milan(&rome, &milan, &remote_ns, "on-b-again", "milan-b")
            .await
            .with_context(|| format!("{what}: the uncordoned slice"))?;
        destroy_leaves_nothing(ground, &work, &what).await?;
    }
    Ok(())
}

/// Where offloaded pods land, chosen on a liqo_virtual_node (tests/real_fabric/placement.tf), whose Node carries its
/// annotation: its taint keeps a pod that does not tolerate it off the node (Pending, the scheduler's reason naming
/// the taint) while a tolerating pod is scheduled there, and that pod's copy on milan carries the node's selector,
/// RuntimeClass, toleration and node affinity (Liqo's offloading patch), lacks the pod's label and annotation the
/// node does not reflect (and keeps the others), and runs; its virtual kubelet is made from the VkOptionsTemplate it
/// names (the template's extra annotation on the Deployment) and offers the node's default storage class (its
/// arguments; the Node's label). The re-plan is empty; the taint taken away in place, the waiting
/// pod is scheduled and runs. Destroy leaves nothing.
#[tokio::test(flavor = "multi_thread")]
async fn virtual_node_placement_reaches_the_pods_and_taints_keep_others_off() -> Result<()> {
    let _serial = SERIAL.lock().await;
    let ground = ground();
    let templates = vk_options_templates(&ground.client(ROME).await?);
    gpu_template(&templates).await?;
    for cli in Cli::available() {
        let what = format!("a virtual node's placement on real Liqo with {}", cli.name());
        let work = Workdir::new(cli, &full_chain(ground, RESOURCES)).await?;
        work.write("placement.tf", include_str!("real_fabric/placement.tf"))?;
        // The consumer's Liqo reaches milan through a proxy: the Tenant's, and both slices' control-plane identity.
        let proxy = ConnectProxy::start().await?;
        let proxied = |resource: &str| format!("resource {resource} {{\n  proxy_url = \"{}\"\n}}\n", proxy.url());
        let overrides =
            ["\"liqo_tenant\" \"rome\"", "\"liqo_peer\" \"rome_to_milan\"", "\"liqo_peer\" \"rome_to_milan_gpu\""];
        work.write("proxy_override.tf", &overrides.map(proxied).concat())?;
        work.apply().await.with_context(|| format!("{what}: apply"))?;
        let plan = work.plan().await?;
        ensure!(plan.is_empty(), "{what}: the plan after the apply is not empty:\n{}", plan.run().stdout);
        let (milan, rome) = (ground.client(MILAN).await?, ground.client(ROME).await?);
        let remote_ns = remote_namespace(&rome, PLACEMENT_NS).await?;
        let nodes: Api<Node> = Api::all(rome.clone());
        eventually(Duration::from_secs(60), "virtual node milan-gpu with its annotation", || async {
            let node = nodes.get("milan-gpu").await?;
            let annotations = node.metadata.annotations.unwrap_or_default();
            Ok((annotations.get("example.com/owner").map(String::as_str) == Some("gpu-team")).then_some(()))
        })
        .await
        .with_context(|| format!("{what}: the virtual node's annotations"))?;
        // The virtual kubelet made from the VkOptionsTemplate the node names (its extra annotation).
        let deployments: Api<Deployment> = Api::all(rome.clone());
        let vk = deployments.list(&ListParams::default().fields("metadata.name=vk-milan-gpu")).await?.items;
        let annotation = vk.first().and_then(|d| d.metadata.annotations.as_ref()?.get("example.com/template").cloned());
        ensure!(
            annotation.as_deref() == Some("gpu"),
            "{what}: the virtual kubelet of milan-gpu is not made from VkOptionsTemplate liqo/gpu (its Deployment: \
             {:?})",
            vk.first().map(|d| &d.metadata)
        );
        // The storage classes, where Liqo shows them: the virtual kubelet maps Liqo's class to the default one, and
        // the Node says storage is available.
        let args = vk
            .first()
            .and_then(|d| d.spec.as_ref()?.template.spec.as_ref()?.containers.first()?.args.clone())
            .unwrap_or_default();
        ensure!(
            args.iter().any(|a| a == "--enable-storage")
                && args.iter().any(|a| a == "--remote-real-storage-class-name=fast"),
            "{what}: the virtual kubelet of milan-gpu does not offer storage class fast: {args:?}"
        );
        let node_labels = nodes.get("milan-gpu").await?.metadata.labels.unwrap_or_default();
        ensure!(
            node_labels.get("storage.liqo.io/available").map(String::as_str) == Some("true"),
            "{what}: node milan-gpu does not say storage is available: {node_labels:?}"
        );
        // The RuntimeClass the virtual node gives the copies, as milan's admin would have it.
        let runtime_classes: Api<RuntimeClass> = Api::all(milan.clone());
        let gvisor = serde_json::json!({"metadata": {"name": "gvisor"}, "handler": "runsc"});
        runtime_classes.create(&PostParams::default(), &serde_json::from_value(gvisor)?).await?;

        // Both pods select the GPU node by its label; only one tolerates its taint.
        let gpu_toleration = serde_json::json!([{"key": "example.com/gpu", "operator": "Exists"}]);
        placed_pod(&rome, "tolerating", gpu_toleration).await?;
        placed_pod(&rome, "intolerant", serde_json::json!([])).await?;
        let pods: Api<Pod> = Api::namespaced(rome.clone(), PLACEMENT_NS);
        let reason = eventually(Duration::from_secs(60), "the scheduler's reason for pod intolerant", || async {
            let pod = pods.get("intolerant").await?;
            let unscheduled = pod.status.and_then(|s| s.conditions).unwrap_or_default().into_iter().find(|c| {
                c.type_ == "PodScheduled" && c.status == "False" && c.reason.as_deref() == Some("Unschedulable")
            });
            Ok(unscheduled.and_then(|c| c.message))
        })
        .await
        .with_context(|| format!("{what}: a pod that does not tolerate the node's taint"))?;
        ensure!(reason.contains("untolerated taint"), "{what}: pod intolerant is unschedulable for: {reason}");
        let remote: Api<Pod> = Api::namespaced(milan.clone(), &remote_ns);
        let copy = eventually(Duration::from_secs(90), "pod tolerating to run on milan", || async {
            let copy = remote.get_opt("tolerating").await?;
            let running = copy.as_ref().and_then(|p| p.status.as_ref()?.phase.as_deref()) == Some("Running");
            Ok(copy.filter(|_| running))
        })
        .await
        .with_context(|| format!("{what}: a pod that tolerates the taint"))?;
        let spec = copy.spec.unwrap_or_default();
        let selector = spec.node_selector.unwrap_or_default();
        ensure!(
            selector.get("kubernetes.io/os").map(String::as_str) == Some("linux"),
            "{what}: the copy of pod tolerating on milan has the node selector {selector:?}, without the virtual \
             node's kubernetes.io/os=linux"
        );
        let tolerations = spec.tolerations.unwrap_or_default();
        ensure!(
            tolerations.iter().any(|t| t.key.as_deref() == Some("example.com/dedicated")
                && t.value.as_deref() == Some("liqo")
                && t.effect.as_deref() == Some("NoSchedule")),
            "{what}: the copy of pod tolerating on milan lacks the virtual node's toleration: {tolerations:?}"
        );
        ensure!(
            spec.runtime_class_name.as_deref() == Some("gvisor"),
            "{what}: the copy of pod tolerating on milan has the RuntimeClass {:?}, not the virtual node's gvisor",
            spec.runtime_class_name
        );
        let node_affinity = spec.affinity.as_ref().and_then(|a| a.node_affinity.clone()).unwrap_or_default();
        let required = node_affinity.required_during_scheduling_ignored_during_execution.map(|r| r.node_selector_terms);
        let required_exprs =
            required.unwrap_or_default().into_iter().flat_map(|t| t.match_expressions.unwrap_or_default());
        ensure!(
            required_exprs.into_iter().any(|e| e.key == "kubernetes.io/os"
                && e.operator == "In"
                && e.values.as_deref() == Some(&["linux".to_string()][..])),
            "{what}: the copy of pod tolerating on milan lacks the virtual node's required node affinity: {:?}",
            spec.affinity
        );
        let preferred = node_affinity.preferred_during_scheduling_ignored_during_execution.unwrap_or_default();
        ensure!(
            preferred.iter().any(|p| p.weight == 50
                && p.preference.match_expressions.iter().flatten().any(|e| e.key == "example.com/pool")),
            "{what}: the copy of pod tolerating on milan lacks the virtual node's preferred node affinity: {:?}",
            spec.affinity
        );
        let (labels, annotations) =
            (copy.metadata.labels.unwrap_or_default(), copy.metadata.annotations.unwrap_or_default());
        ensure!(
            labels.contains_key("example.com/team") && !labels.contains_key("example.com/internal"),
            "{what}: the copy of pod tolerating on milan must have label example.com/team and not \
             example.com/internal (labels_not_reflected): {labels:?}"
        );
        ensure!(
            annotations.contains_key("example.com/contact") && !annotations.contains_key("example.com/audit"),
            "{what}: the copy of pod tolerating on milan must have annotation example.com/contact and not \
             example.com/audit (annotations_not_reflected): {annotations:?}"
        );
        let node = spec.node_name.unwrap_or_default();
        eprintln!("[real_fabric] {what}: pod tolerating runs on milan's {node}; intolerant waits: {reason}");
        proxied_peering(&milan, &rome, &proxy).await.with_context(|| format!("{what}: the proxy"))?;

        // The taint taken away in place: the waiting pod is scheduled on the GPU node and runs on milan.
        work.write("placement_override.tf", UNTAINTED)?;
        let apply = work.apply().await.with_context(|| format!("{what}: apply without the taint"))?;
        ensure!(apply.stdout.contains("0 added, 1 changed, 0 destroyed"), "{what}: not in place:\n{}", apply.stdout);
        eventually(Duration::from_secs(90), "pod intolerant to run on milan once the taint is gone", || async {
            let phase = remote.get_opt("intolerant").await?.and_then(|p| p.status).and_then(|s| s.phase);
            Ok(phase.filter(|p| p == "Running"))
        })
        .await
        .with_context(|| format!("{what}: the taint taken away"))?;
        destroy_leaves_nothing(ground, &work, &what).await?;
        runtime_classes.delete("gvisor", &Default::default()).await?;
    }
    templates.delete("gpu", &Default::default()).await?;
    Ok(())
}

/// The peering of the placement test went through `proxy`: the Tenant names it (liqo_tenant `proxy_url`), the
/// control-plane identity's kubeconfig (liqo_peer `proxy_url`) and the kubeconfigs Liqo issued for the virtual
/// kubelets of both slices name it (Liqo passes the Tenant's on), and the proxy connected clients to milan's API
/// server, refusing none.
async fn proxied_peering(milan: &kube::Client, rome: &kube::Client, proxy: &ConnectProxy) -> Result<()> {
    let url = proxy.url();
    let tenants: Api<Tenant> = Api::all(milan.clone());
    let tenant = tenants.list(&ListParams::default()).await?.items.into_iter().next().context("no Tenant on milan")?;
    ensure!(
        tenant.spec.proxy_url.as_deref() == Some(url.as_str()),
        "the Tenant's proxyURL is {:?}",
        tenant.spec.proxy_url
    );
    let secrets: Api<Secret> = Api::all(rome.clone());
    let identities = secrets.list(&ListParams::default().labels(labels::IDENTITY_TYPE)).await?.items;
    let proxied: Vec<String> = identities
        .iter()
        .filter(|s| {
            let kubeconfig = s.data.as_ref().and_then(|d| d.get(labels::KUBECONFIG_KEY));
            kubeconfig.is_some_and(|k| {
                let text = String::from_utf8_lossy(&k.0);
                text.contains("proxy-url") && text.contains(&url)
            })
        })
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    ensure!(
        proxied.len() >= 3,
        "rome's identity kubeconfigs naming the proxy: {proxied:?} (of {:?}); expected the control plane's and both slices'",
        identities.iter().filter_map(|s| s.metadata.name.as_deref()).collect::<Vec<_>>()
    );
    let seen = proxy.seen();
    ensure!(
        !seen.is_empty() && seen.iter().all(|c| c.connected),
        "the proxy's CONNECTs: {seen:?} (expected some, all connected)"
    );
    eprintln!("[real_fabric] the proxy connected {} tunnels; identities naming it: {proxied:?}", seen.len());
    Ok(())
}

/// The namespace tests/real_fabric/placement.tf offloads.
const PLACEMENT_NS: &str = "placement";
const UNTAINTED: &str = "resource \"liqo_virtual_node\" \"gpu\" {\n  taints = []\n}\n";

/// Creates pod `name` in the offloaded namespace of placement.tf, selecting the GPU virtual node by its label, with
/// `tolerations`.
async fn placed_pod(consumer: &kube::Client, name: &str, tolerations: serde_json::Value) -> Result<()> {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        // Labelled and annotated with a key the virtual node keeps to the consumer and one it reflects.
        "metadata": {
            "name": name,
            "namespace": PLACEMENT_NS,
            "labels": {"example.com/internal": "yes", "example.com/team": "gpu"},
            "annotations": {"example.com/audit": "yes", "example.com/contact": "gpu-team"},
        },
        "spec": {
            "nodeSelector": {"example.com/accelerator": "gpu"},
            "tolerations": tolerations,
            "containers": [{"name": name, "image": "nginx"}],
        },
    }))?;
    Api::<Pod>::namespaced(consumer.clone(), PLACEMENT_NS).create(&PostParams::default(), &pod).await?;
    Ok(())
}

/// The override files of `one_cordoned_slice_refuses_new_pods_while_the_other_serves` (Terraform merges them into
/// the full chain's liqo_tenant).
const CORDON_B: &str = "resource \"liqo_tenant\" \"rome\" {\n  cordoned_resource_slices = [\"milan-b\"]\n}\n";
const UNCORDON: &str = "resource \"liqo_tenant\" \"rome\" {\n  cordoned_resource_slices = []\n}\n";
/// The namespace tests/real_fabric/second_slice.tf offloads to both slices.
const SLICES_NS: &str = "slice-cordon";

fn vk_options_templates(client: &kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("offloading.liqo.io", "v1beta1", "VkOptionsTemplate"),
        "vkoptionstemplates",
    );
    Api::namespaced_with(client.clone(), "liqo", &resource)
}

/// rome's VkOptionsTemplate `liqo/gpu` (tests/real_fabric/placement.tf's `vk_options_template`), as an administrator
/// makes one: Liqo's default template with an extra annotation of the virtual kubelet's Deployment.
async fn gpu_template(templates: &Api<DynamicObject>) -> Result<()> {
    if templates.get_opt("gpu").await?.is_some() {
        return Ok(());
    }
    let mut gpu = templates.get("virtual-kubelet-default").await.context("Liqo's default VkOptionsTemplate")?;
    gpu.metadata =
        kube::api::ObjectMeta { name: Some("gpu".into()), namespace: Some("liqo".into()), ..Default::default() };
    gpu.data["spec"]["extraAnnotations"] = serde_json::json!({"example.com/template": "gpu"});
    templates.create(&PostParams::default(), &gpu).await.context("creating VkOptionsTemplate liqo/gpu")?;
    Ok(())
}

/// Creates pod `name` in the offloaded namespace, bound to `node` (a virtual node); returns its name.
async fn pod_on(consumer: &kube::Client, name: &str, node: &str) -> Result<String> {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": SLICES_NS},
        "spec": {"nodeName": node, "containers": [{"name": name, "image": "nginx"}]},
    }))?;
    Api::<Pod>::namespaced(consumer.clone(), SLICES_NS).create(&PostParams::default(), &pod).await?;
    Ok(name.to_owned())
}

/// A pod bound to virtual node `node` runs: its ShadowPod and remote pod exist on milan, the remote pod Running.
async fn running_on_milan(
    consumer: &kube::Client,
    provider: &kube::Client,
    remote_ns: &str,
    name: &str,
    node: &str,
) -> Result<()> {
    pod_on(consumer, name, node).await?;
    let remote: Api<Pod> = Api::namespaced(provider.clone(), remote_ns);
    eventually(Duration::from_secs(90), &format!("pod {name} on {node} to run on milan"), || async {
        let phase = remote.get_opt(name).await?.and_then(|p| p.status).and_then(|s| s.phase);
        Ok(phase.filter(|p| p == "Running"))
    })
    .await?;
    ensure!(
        shadow_pods(provider.clone(), remote_ns).get_opt(name).await?.is_some(),
        "no ShadowPod for {name} on milan"
    );
    Ok(())
}

/// milan admits rome with a cordoned tenant: real Liqo denies rome's new ResourceSlice (`Resources=Denied`), and
/// the peer's apply fails with Liqo's reason and message.
#[tokio::test(flavor = "multi_thread")]
async fn a_cordoned_tenant_denies_the_slice_with_liqos_reason() -> Result<()> {
    let _serial = SERIAL.lock().await;
    let ground = ground();
    for cli in Cli::available() {
        let what = format!("a cordoned tenant on real Liqo with {}", cli.name());
        let work = Workdir::new(cli, &full_chain(ground, RESOURCES)).await?;
        work.write("cordoned_override.tf", include_str!("real_fabric/cordoned_override.tf"))?;
        let failed = work.apply_fails().await.with_context(|| format!("{what}: apply"))?;
        let slices: Api<ResourceSlice> = Api::namespaced(ground.client(ROME).await?, ROME_NS);
        let denied = slices.list(&ListParams::default()).await?.items.into_iter().any(|slice| {
            slice
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Resources" && c.status == "Denied")
        });
        ensure!(denied, "{what}: no ResourceSlice on rome has Resources=Denied");
        let stderr = flat(&failed.stderr);
        for needle in ["Denied", "ResourceSliceResourcesDenied", "ResourceSlice resources denied"] {
            ensure!(stderr.contains(needle), "{what}: the failure does not mention {needle:?}:\n{}", failed.stderr);
        }
        destroy_leaves_nothing(ground, &work, &what).await?;
    }
    Ok(())
}

/// milan's kube-apiserver is killed while the apply is under way (the gateway server rendered, the rest of the chain
/// still in progress) and comes back 5 s later: real Liqo's processes and gateways reconnect,
/// and the apply either completes or fails naming what it was doing, after which a second apply converges with an
/// empty re-plan; destroy leaves nothing (no orphan of the interrupted apply).
///
/// The crash comes once the server has its endpoint, not while Liqo renders it: Liqo v1.2.0's WgGatewayServer
/// controller creates the gateway's Deployment before its Service, and on every later reconcile reads the Service
/// (for the endpoint status) before it would create it (`wireguard/wggatewayserver_controller.go`, Reconcile →
/// handleEndpointStatus). An API server that dies between those two creates leaves the Deployment without its
/// Service for good: Liqo keeps logging `Service "gw-rome" not found` and never writes the endpoint, in a cluster
/// as on this ground. No provider can converge through that; it is Liqo's to fix.
#[tokio::test(flavor = "multi_thread")]
async fn an_api_server_restart_mid_apply_converges_without_orphans() -> Result<()> {
    let _serial = SERIAL.lock().await;
    // It breaks its ground for a while: a ground of its own, not one the test command's pool hands on.
    let own = Ground::start(&[MILAN, ROME]).await?;
    let ground = &own;
    for cli in Cli::available() {
        let what = format!("milan's API server restarted mid-apply with {}", cli.name());
        let work = Workdir::new(cli, &full_chain(ground, RESOURCES)).await?;
        let servers: Api<GatewayServer> = Api::namespaced(ground.client(MILAN).await?, MILAN_NS);
        let began = std::time::Instant::now();
        let apply = work.run(&["apply", "-auto-approve", "-input=false", "-no-color"]);
        let crash = async {
            let rendered = "GatewayServer on milan with its endpoint (Liqo rendered it; the apply is under way)";
            eventually(Duration::from_secs(180), rendered, || async {
                let endpoint = servers.get_opt(ROME).await?.and_then(|s| s.status).and_then(|s| s.endpoint);
                Ok(endpoint.filter(|e| e.is_ready()).map(|_| ()))
            })
            .await?;
            let at = began.elapsed();
            ground.restart_api_server(MILAN, Duration::from_secs(5)).await?;
            anyhow::Ok(at)
        };
        let (first, crashed_at) = tokio::join!(apply, crash);
        let (first, crashed_at) = (first?, crashed_at?);
        ensure!(crashed_at < first.duration, "{what}: the API server went down only after the apply had ended");
        eprintln!(
            "[real_fabric] {what}: down at {:.1}s; the first apply {} after {:.1}s",
            crashed_at.as_secs_f64(),
            if first.success() { "succeeded" } else { "failed" },
            first.duration.as_secs_f64()
        );
        if !first.success() {
            work.apply().await.with_context(|| format!("{what}: the second apply"))?;
        }
        let plan = work.plan().await?;
        ensure!(plan.is_empty(), "{what}: the plan after converging is not empty:\n{}", plan.run().stdout);
        let status = connection(ground, ROME, ROME_NS).await?.and_then(|c| c.status).and_then(|s| s.value);
        ensure!(status.as_deref() == Some(CONNECTION_CONNECTED), "{what}: rome's Connection is {status:?}");
        ensure!(virtual_node_ready(ground).await?, "{what}: the virtual node on {ROME} is not Ready");
        destroy_leaves_nothing(ground, &work, &what).await?;
    }
    Ok(())
}
