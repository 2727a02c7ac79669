//! Liqo upgraded under a live peering, on real Liqo, the way Liqo's FAQ says users upgrade ("Upgrade the Liqo
//! version installed on a cluster"; docs/guides/day-2.md): on each cluster the new chart's CRDs, then `helm
//! upgrade` of the release, then a restart of the controller-manager (why: the guide). The ground's kubelet runs each rolled pod from the build its image names, so old and
//! new Liqo run side by side while Deployments roll, as on a real cluster.
//! - The chain 1.0.3 → 1.1.2 → 1.2.0, once per client, each on a ground of its own: `examples/peering` up with a pod running on the virtual node;
//!   after each step the Connection is Connected on both clusters, the virtual node Ready, the pod and its remote
//!   copy Running, and `terraform plan` empty; at the end `destroy` leaves nothing.
//! - A peering across versions: consumer 1.1.2, provider upgraded to 1.2.0 before the peering is made; each client
//!   applies, re-plans empty and destroys, leaving nothing.
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;
use liqo_acceptance::chain::example;
use liqo_acceptance::ground::{LiqoMode, Options};
use liqo_acceptance::observe::{Seen, until};
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME, inventory, offloaded_pod};
use liqo_schema::liqo::networking::Connection;

const CHAIN: [&str; 3] = ["v1.0.3", "v1.1.2", "v1.2.0"];
/// From `helm upgrade` to the peering up again: Deployments roll (new pods, old ones stopped), the new
/// controller-manager renders the gateways again, and the tunnel comes back.
const BACK_UP: Duration = Duration::from_secs(300);
const NAMESPACE: &str = "liqo-demo";
const POD: &str = "survivor";

async fn ground_of(version: &str) -> Result<Ground> {
    let liqo = LiqoMode::Real { version: version.to_owned() };
    Ground::start_with(&[MILAN, ROME], Options { liqo, ..Options::default() }).await
}

/// The peering as a user checks it: the Connection on each side, the virtual node, and (when `pod`) the pod on the
/// virtual node and its remote copy on the provider. `None` when all are up; otherwise what is not.
async fn not_up(ground: &Ground, node: &str, pod: Option<&str>) -> Result<Option<String>> {
    let (rome, milan) = (ground.client(ROME).await?, ground.client(MILAN).await?);
    let mut down = Vec::new();
    for (cluster, client, peer) in [(ROME, &rome, MILAN), (MILAN, &milan, ROME)] {
        let connections: Api<Connection> = Api::namespaced(client.clone(), &format!("liqo-tenant-{peer}"));
        let status = connections.list(&ListParams::default()).await?.items.into_iter().next().and_then(|c| c.status);
        let value = status.and_then(|s| s.value).unwrap_or_else(|| "absent".into());
        if value != "Connected" {
            down.push(format!("{cluster}'s Connection {value}"));
        }
    }
    if !liqo_acceptance::observe::node_ready_on(&rome, node).await? {
        down.push(format!("virtual node {node} not Ready"));
    }
    if let Some(pod) = pod {
        let phase = |p: Option<Pod>| p.and_then(|p| p.status).and_then(|s| s.phase).unwrap_or_else(|| "absent".into());
        let here = phase(Api::<Pod>::namespaced(rome, NAMESPACE).get_opt(pod).await?);
        if here != "Running" {
            down.push(format!("pod {NAMESPACE}/{pod} {here} on rome"));
        }
        let remote_namespace = format!("{NAMESPACE}-{ROME}");
        let there = phase(Api::<Pod>::namespaced(milan, &remote_namespace).get_opt(pod).await?);
        if there != "Running" {
            down.push(format!("pod {remote_namespace}/{pod} {there} on milan"));
        }
    }
    Ok((!down.is_empty()).then(|| down.join(", ")))
}

/// How long the peering must stay up to count as back: a rolled gateway's Connection still shows the old pod's
/// `Connected` until the new one's first check writes `Connecting` (seen once in a full run: up, then the plan a
/// second later read `Connecting`).
const STAYS_UP: Duration = Duration::from_secs(15);

async fn back_up(ground: &Ground, node: &str, pod: Option<&str>, what: &str) -> Result<()> {
    let up_since = std::cell::Cell::new(None::<std::time::Instant>);
    until(BACK_UP, Duration::from_secs(1), what, || async {
        Ok(match not_up(ground, node, pod).await? {
            None => {
                let since = up_since.get().unwrap_or_else(std::time::Instant::now);
                up_since.set(Some(since));
                if since.elapsed() >= STAYS_UP {
                    Seen::Done(())
                } else {
                    Seen::NotYet(format!("up for {:.0}s of {}s", since.elapsed().as_secs_f64(), STAYS_UP.as_secs()))
                }
            }
            Some(down) => {
                up_since.set(None);
                Seen::NotYet(down)
            }
        })
    })
    .await
}

/// The Liqo binaries a peered cluster runs in its Deployments and its gateway pod.
const ROLLED: [&str; 6] = ["liqo-controller-manager", "webhook", "ipam", "crd-replicator", "gateway", "wireguard"];

/// Waits until every process of [`ROLLED`] on `cluster` runs `version`'s build and none an older one (the chart's
/// Deployments rolled, the gateway rendered again by the new controller-manager); returns the versions its
/// virtual kubelets run, which the VirtualNode fixes when it is made.
async fn rolled(ground: &Ground, cluster: &str, version: &str) -> Result<Vec<String>> {
    until(BACK_UP, Duration::from_secs(1), &format!("{cluster}'s Liqo pods to roll to {version}"), || async {
        let releases = ground.liqo_releases(cluster);
        let stale: Vec<String> = releases
            .iter()
            .filter(|(binary, release)| ROLLED.contains(&binary.as_str()) && release != version)
            .map(|(binary, release)| format!("{binary} {release}"))
            .collect();
        let missing: Vec<&str> = ROLLED
            .into_iter()
            .filter(|wanted| !releases.iter().any(|(binary, release)| binary == wanted && release == version))
            .collect();
        Ok(if stale.is_empty() && missing.is_empty() {
            Seen::Done(releases.into_iter().filter(|(b, _)| b == "virtual-kubelet").map(|(_, v)| v).collect())
        } else {
            Seen::NotYet(format!("still running: {stale:?}; not yet running {version}: {missing:?}"))
        })
    })
    .await
}

async fn plan_is_empty(work: &Workdir, what: &str) -> Result<()> {
    let plan = work.plan().await.with_context(|| format!("{what}: plan"))?;
    ensure!(plan.is_empty(), "{what}: the plan is not empty:\n{}", plan.run().stdout);
    Ok(())
}

fn virtual_node(outputs: &serde_json::Value) -> Result<String> {
    Ok(outputs["virtual_node_name"]["value"].as_str().context("output virtual_node_name")?.to_owned())
}

/// The upgrade chain under `examples/peering` applied with `cli`, on a ground of its own.
async fn upgrade_chain(cli: Cli) -> Result<()> {
    let ground = ground_of(CHAIN[0]).await?;
    let work = example(cli, "peering", &ground, &[MILAN, ROME]).await?;
    work.apply().await.context("apply of examples/peering on Liqo 1.0.3")?;
    plan_is_empty(&work, "on Liqo 1.0.3").await?;
    let node = virtual_node(&work.output_json().await?)?;
    let pod = offloaded_pod::run(&ground.client(ROME).await?, &ground.client(MILAN).await?, NAMESPACE, POD).await?;
    eprintln!("[upgrade] on {}:\n{pod}", CHAIN[0]);
    ensure!(pod.remote_namespace == format!("{NAMESPACE}-{ROME}"), "remote namespace {}", pod.remote_namespace);

    for version in &CHAIN[1..] {
        // The provider first, then the consumer, each as its own `helm upgrade`.
        for cluster in [MILAN, ROME] {
            ground.upgrade_liqo(cluster, version).await?;
            let virtual_kubelets = rolled(&ground, cluster, version).await?;
            eprintln!("[upgrade] {cluster} rolled to {version}; its virtual kubelets run {virtual_kubelets:?}");
        }
        let what = format!("the peering after upgrading both clusters to Liqo {version}");
        back_up(&ground, &node, Some(POD), &what).await?;
        plan_is_empty(&work, &what).await?;
        eprintln!("[upgrade] {what}: up, plan empty ({})", cli.name());
    }
    work.destroy().await.context("destroy after the upgrades")?;
    inventory::nothing_left(&ground, &[MILAN, ROME]).await
}

/// Each client's chain on a ground of its own, side by side.
#[tokio::test]
async fn liqo_upgraded_under_a_live_peering() -> Result<()> {
    tf::each_client(Cli::available().into_iter().map(|cli| (cli, upgrade_chain(cli)))).await.map(drop)
}

/// Provider on 1.2.0, consumer on 1.1.2: each client peers, re-plans empty and destroys, one after the other.
#[tokio::test]
async fn a_peering_across_liqo_versions() -> Result<()> {
    let ground = ground_of("v1.1.2").await?;
    ground.upgrade_liqo(MILAN, "v1.2.0").await?;
    // No gateway yet: only the chart's Deployments roll before the peering.
    until(BACK_UP, Duration::from_secs(1), "milan's Liqo pods to roll to v1.2.0", || async {
        let releases = ground.liqo_releases(MILAN);
        Ok(match releases.iter().all(|(_, release)| release == "v1.2.0") && releases.len() >= 4 {
            true => Seen::Done(()),
            false => Seen::NotYet(format!("{releases:?}")),
        })
    })
    .await?;
    for cli in Cli::available() {
        let what = format!("the peering across versions with {}", cli.name());
        let work = example(cli, "peering", &ground, &[MILAN, ROME]).await?;
        work.apply().await.with_context(|| format!("{what}: apply"))?;
        let node = virtual_node(&work.output_json().await?)?;
        back_up(&ground, &node, None, &what).await?;
        plan_is_empty(&work, &what).await?;
        work.destroy().await.with_context(|| format!("{what}: destroy"))?;
        inventory::nothing_left(&ground, &[MILAN, ROME]).await.with_context(|| format!("{what}: destroy"))?;
    }
    Ok(())
}
