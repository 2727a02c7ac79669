//! Tests of the real-Liqo ground (`Ground::shared`, Liqo `$LIQO_VERSION`, default v1.2.0): each fails when
//! Liqo is simulated or half-started. The first run builds Liqo from its Go module
//! (`scripts/build-liqo.sh`, several minutes); later runs take it from the cache.
//!
//! Run: `cargo test -p liqo-acceptance --test real_ground`.
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::{Api, Client};
use liqo_acceptance::observe::{Seen, create_namespace, eventually, peering_up, throughout, until};
use liqo_acceptance::tf::{Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME, inventory, observe, offloaded_pod};
use liqo_schema::liqo::labels;
use serde_json::json;

fn resource_slices() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("authentication.liqo.io", "v1beta1", "ResourceSlice"),
        "resourceslices",
    )
}

/// Command lines of the running processes started from `program` (symbolic links resolved, as in /proc) whose
/// kubeconfig lies in `ground_dir`: other grounds on the machine may run the same binaries.
fn processes_of(program: &Path, ground_dir: &Path) -> Vec<Vec<String>> {
    let Ok(program) = program.canonicalize() else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let split = |bytes: Vec<u8>| -> Vec<String> {
        bytes.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
    };
    entries
        .filter_map(|entry| {
            let dir = entry.ok()?.path();
            (std::fs::read_link(dir.join("exe")).ok()? == program).then_some(())?;
            let environ = split(std::fs::read(dir.join("environ")).ok()?);
            let kubeconfig = environ.iter().find_map(|var| var.strip_prefix("KUBECONFIG="))?;
            Path::new(kubeconfig).starts_with(ground_dir).then_some(())?;
            Some(split(std::fs::read(dir.join("cmdline")).ok()?))
        })
        .collect()
}

async fn create_slice(client: &Client, namespace: &str, name: &str, labels: serde_json::Value) -> Result<()> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource_slices());
    let mut slice = DynamicObject::new(name, &resource_slices()).within(namespace);
    slice.metadata.labels = serde_json::from_value(labels)?;
    slice.data = json!({"spec": {"class": "default", "resources": {"cpu": "1", "memory": "1Gi"}}});
    api.create(&PostParams::default(), &slice)
        .await
        .with_context(|| format!("creating ResourceSlice {namespace}/{name}"))?;
    Ok(())
}

async fn slice(client: &Client, namespace: &str, name: &str) -> Result<Option<DynamicObject>> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource_slices());
    api.get_opt(name).await.with_context(|| format!("reading ResourceSlice {namespace}/{name}"))
}

/// Each cluster's own liqo-controller-manager process acts on its cluster (it completes a ResourceSlice labelled
/// for replication with its cluster ID and a CSR), and a ResourceSlice without `liqo.io/replication` is ignored:
/// never completed, never replicated to the peer.
#[tokio::test]
async fn real_liqo_serves_every_cluster_and_ignores_slices_not_marked_for_replication() -> Result<()> {
    let ground = Ground::shared();
    let version = ground.real_liqo().context("a ground started with LiqoMode::Real must report real Liqo")?;
    let state = Ground::recorded_liqo(ground.dir())?.context("ground.json records real Liqo")?;
    assert_eq!(state.version, version);

    let manager = state.bin.join("liqo-controller-manager");
    let running = processes_of(&manager, ground.dir());
    for (cluster, peer) in [(MILAN, ROME), (ROME, MILAN)] {
        let flag = format!("--cluster-id={cluster}");
        assert_eq!(
            running.iter().filter(|args| args.contains(&flag)).count(),
            1,
            "exactly one {} process must run with {flag}; running: {running:?}",
            manager.display()
        );

        let client = ground.client(cluster).await?;
        let namespace = format!("probe-{cluster}");
        // Names unique across the ground, so that a copy on the peer cannot be confused with the peer's own.
        let (by_hand, for_replication) = (format!("by-hand-{cluster}"), format!("for-replication-{cluster}"));
        create_namespace(&client, &namespace).await?;
        // Both name their destination as Liqo's own slices do; only one asks for replication.
        let remote = json!({(labels::REMOTE_CLUSTER_ID): peer, (labels::REMOTE_ID): peer});
        let replicated =
            json!({(labels::REMOTE_CLUSTER_ID): peer, (labels::REMOTE_ID): peer, (labels::REPLICATION): "true"});
        create_slice(&client, &namespace, &by_hand, remote).await?;
        create_slice(&client, &namespace, &for_replication, replicated).await?;

        let what = format!(
            "{cluster}: Liqo's controller-manager completing ResourceSlice {namespace}/{for_replication} \
             (consumerClusterID, csr; logs in {}/logs)",
            ground.dir().display()
        );
        until(Duration::from_secs(60), Duration::from_millis(300), &what, || async {
            let seen = slice(&client, &namespace, &for_replication).await?;
            Ok(match seen {
                Some(s)
                    if s.data["spec"]["consumerClusterID"] == json!(cluster) && s.data["spec"]["csr"].is_string() =>
                {
                    Seen::Done(())
                }
                seen => Seen::NotYet(format!("{:?}", seen.map(|s| s.data["spec"].clone()))),
            })
        })
        .await?;
        // The labelled slice was handled; a few seconds more give Liqo every chance to touch the other one.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let ignored = slice(&client, &namespace, &by_hand).await?.context("the hand-made slice is still there")?;
        assert!(
            ignored.data["spec"].get("consumerClusterID").is_none() && ignored.data["spec"].get("csr").is_none(),
            "{cluster}: Liqo must ignore a ResourceSlice without {}: {}",
            labels::REPLICATION,
            ignored.data["spec"]
        );
        let peer_client = ground.client(peer).await?;
        let on_peer: Api<DynamicObject> = Api::all_with(peer_client, &resource_slices());
        let copies = on_peer.list(&Default::default()).await?;
        assert!(
            copies.items.iter().all(|s| s.metadata.name.as_ref() != Some(&by_hand)),
            "{cluster}: a slice without {} must never reach {peer}",
            labels::REPLICATION
        );
    }
    Ok(())
}

/// Readiness as a kubelet reports it: the pods of Liqo's webhook and controller-manager are Ready only once their
/// readiness probe passed (the ground's kubelet runs it; kwok starts such pods not Ready), so an installer that
/// waits for Liqo's Deployments (`helm --wait`, `helm_release`) waits for the processes. The fault: a pod of the
/// same shape whose webhook exits at once (an unknown flag) runs, is restarted, and is never Ready.
#[tokio::test]
async fn a_probed_liqo_pod_is_ready_only_once_its_probe_passes() -> Result<()> {
    let ground = Ground::shared();
    let version = ground.real_liqo().context("a real-Liqo ground")?;
    let client = ground.client(MILAN).await?;
    let liqo_pods: Api<Pod> = Api::namespaced(client.clone(), labels::DEFAULT_LIQO_NAMESPACE);
    for name in ["liqo-webhook", "liqo-controller-manager"] {
        let pods = liqo_pods.list(&ListParams::default()).await?;
        let pod = pods
            .items
            .iter()
            .find(|p| p.metadata.name.as_deref().is_some_and(|n| n.starts_with(&format!("{name}-"))))
            .with_context(|| format!("no pod of {name} on {MILAN}"))?;
        ensure!(observe::pod_ready(pod), "{name}'s pod on {MILAN} is not Ready: {:?}", pod.status);
    }

    let namespace = "probe-readiness";
    create_namespace(&client, namespace).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let broken: Pod = serde_json::from_value(json!({
        "metadata": {"name": "webhook-never-serving", "namespace": namespace},
        "spec": {
            "nodeName": format!("{MILAN}-worker"),
            "containers": [{
                "name": "webhook",
                "image": format!("ghcr.io/liqotech/webhook:{version}"),
                "command": ["/usr/bin/webhook"],
                "args": ["--no-such-flag"],
                "ports": [{"name": "healthz", "containerPort": 8081}],
                "readinessProbe": {"httpGet": {"path": "/readyz", "port": "healthz"}},
            }],
        },
    }))?;
    // The namespace's default ServiceAccount, which admission wants, comes a moment after the namespace.
    until(Duration::from_secs(30), Duration::from_millis(300), "the never-serving webhook's pod created", || async {
        Ok(match pods.create(&PostParams::default(), &broken).await {
            Ok(_) => Seen::Done(()),
            Err(err) => Seen::NotYet(err.to_string()),
        })
    })
    .await?;
    let log = ground.dir().join(format!("logs/{MILAN}-webhook-never-serving-webhook.log"));
    let what = format!("the kubelet to run the never-serving webhook (its log {})", log.display());
    until(Duration::from_secs(60), Duration::from_millis(300), &what, || async {
        let ran = std::fs::read_to_string(&log).unwrap_or_default();
        Ok(ran.contains("no-such-flag").then_some(()).into())
    })
    .await?;
    // It has exited at least once; its restarts (1 s, then 2 s back-off) would pass a probe if anything did.
    let what = "the never-serving webhook's pod Running and not Ready";
    throughout(Duration::from_secs(6), Duration::from_millis(200), what, || async {
        let pod = pods.get("webhook-never-serving").await?;
        let status = pod.status.clone().unwrap_or_default();
        ensure!(status.phase.as_deref() == Some("Running"), "the pod is not Running: {status:?}");
        let ready = status.conditions.iter().flatten().find(|c| c.type_ == "Ready");
        ensure!(
            ready.is_some_and(|c| c.status == "False" && c.reason.as_deref() == Some("ContainersNotReady")),
            "a webhook that never serves must stay not Ready (ContainersNotReady); the pod says {ready:?}"
        );
        Ok(())
    })
    .await?;
    pods.delete("webhook-never-serving", &Default::default()).await?;
    Ok(())
}

/// Liqo's own CLI peers rome (consumer) with milan (provider) on the ground, without networking (the gateways
/// come with issue 15): real authentication handshake, ResourceSlice Accepted, a Ready virtual node run by the
/// real virtual-kubelet; a pod in an offloaded namespace runs on that node, and milan gets its ShadowPod and the
/// remote pod (which kwok runs). The virtual kubelet's serving certificate is in its pod's directory (Liqo writes it
/// to /tmp/certs, which the ground binds there: on the host every virtual kubelet would share one).
#[tokio::test]
async fn liqoctl_peers_and_offloads_a_pod_that_gets_a_shadow_pod_on_the_provider() -> Result<()> {
    let ground = Ground::shared();
    let (rome, milan) = (ground.kubeconfig(ROME).display().to_string(), ground.kubeconfig(MILAN).display().to_string());
    ground
        .liqoctl(&[
            "peer",
            "--kubeconfig",
            &rome,
            "--remote-kubeconfig",
            &milan,
            "--networking-disabled",
            "--timeout",
            "120s",
        ])
        .await?;

    let rome_client = ground.client(ROME).await?;
    let nodes: Api<Node> = Api::all(rome_client.clone());
    eventually(Duration::from_secs(90), "the virtual node milan on rome to be Ready", || async {
        let node = nodes.get_opt(MILAN).await?;
        Ok(node.is_some_and(|n| liqo_acceptance::observe::node_ready(&n)).then_some(()))
    })
    .await?;
    let pods = ground.pod_dirs(ROME);
    eventually(Duration::from_secs(60), "the virtual kubelet's serving certificate in its pod's directory", || {
        let pods = pods.clone();
        async move { Ok(virtual_kubelet_certificate(&pods)) }
    })
    .await?;

    let namespace = "offloaded";
    create_namespace(&rome_client, namespace).await?;
    ground
        .liqoctl(&["offload", "namespace", namespace, "--kubeconfig", &rome, "--pod-offloading-strategy", "Remote"])
        .await?;
    let milan_client = ground.client(MILAN).await?;
    let pod = offloaded_pod::run(&rome_client, &milan_client, namespace, "web").await?;
    assert_eq!(pod.node, MILAN, "rome's pod must run on the virtual node milan: {pod}");
    assert!(pod.shadow_pod, "milan must hold a ShadowPod for rome's offloaded pod: {pod}");
    assert_eq!(pod.remote_namespace, format!("{namespace}-{ROME}"), "Liqo's default remote namespace name: {pod}");
    assert_eq!(pod.remote_node, format!("{MILAN}-worker"), "the remote pod must run on milan's worker: {pod}");
    Ok(())
}

/// A certificate file the virtual kubelet of a pod under `pods` (a cluster's pod directories) wrote to its
/// `certs` directory: `virtual-kubelet-<time>.pem`, beside the `virtual-kubelet-current.pem` link to it.
fn virtual_kubelet_certificate(pods: &Path) -> Option<PathBuf> {
    std::fs::read_dir(pods).ok()?.flatten().filter(|pod| pod.file_name().to_string_lossy().contains("_vk-")).find_map(
        |pod| {
            std::fs::read_dir(pod.path().join("certs")).ok()?.flatten().map(|file| file.path()).find(|file| {
                let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                name.starts_with("virtual-kubelet-") && name != "virtual-kubelet-current.pem" && file.is_file()
            })
        },
    )
}

/// The client certificate and key of the consumer's control-plane identity Secret for `provider`.
struct Identity {
    certificate: String,
    key: String,
}

async fn identity(consumer: &Client, provider: &str) -> Result<Identity> {
    use base64::Engine;
    let secrets: Api<Secret> = Api::namespaced(consumer.clone(), &format!("liqo-tenant-{provider}"));
    let name = format!("kubeconfig-controlplane-{provider}");
    let secret = secrets.get(&name).await.with_context(|| format!("identity Secret {name}"))?;
    let kubeconfig = secret.data.unwrap_or_default().remove(labels::KUBECONFIG_KEY).context("data.kubeconfig")?;
    let doc: serde_json::Value = serde_yaml::from_slice(&kubeconfig.0)?;
    let field = |k: &str| -> Result<String> {
        let b64 = doc["users"][0]["user"][k].as_str().with_context(|| format!("{name}: no {k}"))?;
        Ok(String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64)?)?)
    };
    Ok(Identity { certificate: field("client-certificate-data")?, key: field("client-key-data")? })
}

/// The state file holds no line of the consumer's private key.
fn no_key_in_state(work: &Workdir, identity: &Identity, what: &str) -> Result<()> {
    let state = std::fs::read_to_string(work.path().join("terraform.tfstate"))?;
    for line in identity.key.lines().filter(|l| !l.starts_with("-----") && l.len() >= 32) {
        ensure!(!state.contains(line), "{what}: the state holds the consumer's private key");
    }
    Ok(())
}

/// The provider's own resources, without networking (the gateways come with issue 15), peer two clusters running
/// real Liqo with no secret passing through Terraform: liqo_consumer_key makes the consumer's key on the consumer,
/// liqo_tenant has the provider's kube-controller-manager sign its CSR, liqo_peer assembles the identity Secret on
/// the consumer; Liqo's crd-replicator uses it, the ResourceSlice is Accepted by Liqo and its virtual node (run by
/// the real virtual-kubelet) is Ready, and the state holds no private key. A renewal (the same CSR signed again)
/// and a key rotation (`-replace` of liqo_consumer_key) rewrite the identity Secret in place and the peering stays
/// up; the re-plans are empty and destroy leaves no Liqo object behind. Its own ground, so that it never meets the
/// liqoctl peering of the shared one.
#[tokio::test]
async fn provider_peers_two_real_liqo_clusters_without_networking() -> Result<()> {
    let (provider, consumer) = ("pisa", "siena");
    let ground = Ground::start(&[provider, consumer]).await?;
    let state = Ground::recorded_liqo(ground.dir())?.context("ground.json records real Liqo")?;
    for cli in Cli::available() {
        let config = liqo_acceptance::chain::without_networking(&ground, provider, consumer);
        let what = format!("a peering without networking on real Liqo with {}", cli.name());
        let work = Workdir::new(cli, &config.replace("VALIDITY", "8760h")).await?;
        let started = Instant::now();
        work.apply().await.with_context(|| format!("{what}: apply"))?;
        eprintln!("[real_ground] {what}: apply took {:?}", started.elapsed());
        let plan = work.plan().await?;
        ensure!(plan.is_empty(), "{what}: the plan after apply is not empty:\n{}", plan.run().stdout);
        let outputs = work.output_json().await?;
        ensure!(outputs["accepted"]["value"]["cpu"] == json!("2"), "{what}: Liqo granted {}", outputs["accepted"]);
        ensure!(
            processes_of(&state.bin.join("virtual-kubelet"), ground.dir()).len() == 1,
            "{what}: the ground's kubelet must run the virtual node's virtual-kubelet as a process"
        );
        let consumer_client = ground.client(consumer).await?;
        peering_up(&consumer_client, &what).await?;
        let first = identity(&consumer_client, provider).await?;
        no_key_in_state(&work, &first, &what)?;

        // Renewal: a new lifetime has the provider sign the same CSR again; the identity Secret is rewritten in
        // place with the new certificate and the same key, and Liqo keeps the peering.
        work.write("main.tf", &config.replace("VALIDITY", "4380h"))?;
        work.apply().await.with_context(|| format!("{what}: renewal"))?;
        let renewed = identity(&consumer_client, provider).await?;
        ensure!(renewed.certificate != first.certificate, "{what}: renewal kept the old certificate");
        ensure!(renewed.key == first.key, "{what}: renewal must keep the consumer's key");
        peering_up(&consumer_client, &format!("{what}, after renewal")).await?;
        ensure!(work.plan().await?.is_empty(), "{what}: the plan after renewal is not empty");

        // Rotation: replacing liqo_consumer_key makes a new key on the consumer; the provider signs its CSR and the
        // identity Secret carries both, in place.
        // A resize in the same apply: liqo_peer waits until Liqo grants it, which needs the crd-replicator to
        // replicate the slice with the rotated identity.
        let resized = config.replace("VALIDITY", "4380h").replace(r#"cpu = "2""#, r#"cpu = "3""#);
        work.write("main.tf", &resized)?;
        work.apply_with(&["-replace=liqo_consumer_key.this"]).await.with_context(|| format!("{what}: rotation"))?;
        let outputs = work.output_json().await?;
        ensure!(
            outputs["accepted"]["value"]["cpu"] == json!("3"),
            "{what}: after rotation Liqo granted {}",
            outputs["accepted"]
        );
        let rotated = identity(&consumer_client, provider).await?;
        ensure!(rotated.key != first.key && rotated.certificate != renewed.certificate, "{what}: rotation");
        peering_up(&consumer_client, &format!("{what}, after key rotation")).await?;
        ensure!(work.plan().await?.is_empty(), "{what}: the plan after rotation is not empty");
        no_key_in_state(&work, &rotated, &what)?;

        work.destroy().await.with_context(|| format!("{what}: destroy"))?;
        inventory::nothing_left(&ground, &[provider, consumer]).await.with_context(|| format!("{what}: destroy"))?;
        // The virtual node's Deployment is gone, so the ground's kubelet must have stopped its process.
        let virtual_kubelet = state.bin.join("virtual-kubelet");
        eventually(Duration::from_secs(30), "the virtual-kubelet process to stop after destroy", || async {
            Ok(processes_of(&virtual_kubelet, ground.dir()).is_empty().then_some(()))
        })
        .await
        .with_context(|| format!("{what}: destroy"))?;
    }
    Ok(())
}
