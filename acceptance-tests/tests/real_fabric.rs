//! The provider's whole peering on real Liqo with real gateways (`Ground::shared_real`): liqo_generate and
//! liqo_gateway on both clusters, liqo_tenant and liqo_peer; Liqo's own gateway and wireguard binaries build a
//! userspace WireGuard tunnel between network namespaces of the ground, and their Connection makes the apply
//! finish and the virtual node Ready.
//!
//! The tests share one ground (milan and rome) and run one at a time (`SERIAL`): each builds and destroys the
//! same peering. Where the ground cannot make network namespaces (not root), it simulates the gateways and says
//! so; the assertions about the gateways' processes and the tunnel's latency then fail, as they should.
//!
//! Run: `cargo test -p liqo-acceptance --test real_fabric`.
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::ListParams;
use liqo_acceptance::chain::full_chain;
use liqo_acceptance::inventory;
use liqo_acceptance::observe::eventually;
use liqo_acceptance::tf::{Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME};
use liqo_schema::liqo::networking::{CONNECTION_CONNECTED, Connection};

/// The tests build the same peering on the one shared ground.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const MILAN_NS: &str = "liqo-tenant-rome";
const ROME_NS: &str = "liqo-tenant-milan";
const RESOURCES: &str = r#"{ cpu = "2", memory = "4Gi", pods = "50" }"#;

fn ground() -> &'static Ground {
    let ground = Ground::shared_real();
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
    Ok(virtual_nodes.items.iter().any(|n| {
        n.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    }))
}

async fn leftovers(ground: &Ground) -> Result<Vec<inventory::Row>> {
    let mut left = Vec::new();
    for cluster in [MILAN, ROME] {
        left.extend(inventory::list(cluster, &ground.client(cluster).await?).await?);
    }
    Ok(left)
}

/// Destroys and checks that no Liqo object and no gateway process is left.
async fn destroy_leaves_nothing(ground: &Ground, work: &Workdir, what: &str) -> Result<()> {
    work.destroy().await.with_context(|| format!("{what}: destroy"))?;
    let left = leftovers(ground).await?;
    ensure!(left.is_empty(), "{what}: destroy left Liqo objects behind:\n{}", inventory::table(&left));
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
        destroy_leaves_nothing(ground, &work, &what).await?;
    }
    Ok(())
}
