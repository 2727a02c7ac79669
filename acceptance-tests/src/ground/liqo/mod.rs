//! Real Liqo on the ground: Liqo's binaries built from its Go module by `scripts/build-liqo.sh`, installed from
//! that version's own Helm chart, its pods run as processes by the ground's kubelet.
//!
//! Per cluster, in order: [`install_base`] renders the chart (values and rewrites: [`adapt`]), applies its CRDs
//! and every object except the webhook configurations and the objects they check, and starts the node
//! agents (`nodes`: kube-scheduler, kwok and a fake worker Node). The ground then starts the kubelet
//! ([`kubelet`], one process for all clusters), and [`finish_install`] waits for Liqo's webhook before applying
//! the rest — as `helm install` would, had the webhook been running already — and for Liqo to work. The
//! gateways' network is the kubelet's ([`wire`]).
pub mod adapt;
mod chart;
pub mod kubelet;
mod nodes;
pub mod wire;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DynamicObject, Patch, PatchParams};
use kube::{Api, Client};
use liqo_schema::liqo::ipam::Network;
use liqo_schema::liqo::labels;
use serde::{Deserialize, Serialize};

use super::Cluster;
use super::control_plane::Layout;
use super::pki::Ca;
use super::process::{Lifetime, Supervised};
use adapt::FixedPorts;
pub use nodes::worker_name;
pub use wire::Gateways;

/// Liqo version a real ground installs unless told otherwise (`LIQO_VERSION`).
pub const DEFAULT_VERSION: &str = "v1.2.0";
const INSTALL_TIMEOUT: Duration = Duration::from_secs(120);

/// Where one Liqo version's binaries and chart are, plus the tools that host it.
#[derive(Clone, Debug)]
pub struct Binaries {
    pub version: String,
    /// `$cache/bin/liqo-<version>`: Liqo's binaries and `chart/`.
    pub dir: PathBuf,
    pub helm: PathBuf,
    pub kwok: PathBuf,
}

const COMPONENTS: [&str; 5] = ["liqo-controller-manager", "webhook", "ipam", "crd-replicator", "virtual-kubelet"];

impl Binaries {
    /// Finds the version's build in the cache, running `scripts/build-liqo.sh VERSION` first when any piece is
    /// missing (the first build of a version takes several minutes).
    pub fn locate(version: &str) -> Result<Binaries> {
        let bin = super::upstream::cache_bin_dir()?;
        let binaries = Binaries {
            version: version.to_owned(),
            dir: bin.join(format!("liqo-{version}")),
            helm: bin.join("helm"),
            kwok: bin.join("kwok"),
        };
        if binaries.missing().is_empty() {
            return Ok(binaries);
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/build-liqo.sh");
        eprintln!("[ground] Liqo {version} is not built yet in {}; running {}", bin.display(), script.display());
        let status = Command::new(&script)
            .arg(version)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .status()
            .with_context(|| format!("running {}", script.display()))?;
        if !status.success() {
            bail!("{} {version} failed ({status}); its output above says which build broke", script.display());
        }
        let missing = binaries.missing();
        if !missing.is_empty() {
            bail!("{} {version} finished but {} is missing", script.display(), missing.join(", "));
        }
        Ok(binaries)
    }

    fn missing(&self) -> Vec<String> {
        let mut paths: Vec<PathBuf> = COMPONENTS.iter().map(|c| self.dir.join(c)).collect();
        paths.extend([
            self.dir.join("chart/Chart.yaml"),
            self.dir.join("gateway"),
            self.dir.join("wireguard"),
            self.dir.join("wireguard-image/usr/bin/wireguard-go"),
            self.helm.clone(),
            self.kwok.clone(),
        ]);
        paths.into_iter().filter(|p| !p.exists()).map(|p| p.display().to_string()).collect()
    }
}

/// What `ground.json` records about real Liqo, so that the kubelet can work from the directory alone.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct State {
    pub version: String,
    pub bin: PathBuf,
    pub clusters: Vec<ClusterState>,
    pub gateways: Gateways,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClusterState {
    pub name: String,
    pub node: String,
    pub ports: FixedPorts,
    /// The worker node's InternalIP: its address on the wire with real gateways, else loopback.
    pub node_ip: Ipv4Addr,
}

/// Picks each cluster's fixed ports at once, holding the listeners until all are chosen.
pub fn allocate_ports(clusters: usize) -> Result<Vec<FixedPorts>> {
    let ports = super::control_plane::free_ports(clusters * 2)?;
    Ok(ports.chunks(2).map(|p| FixedPorts { webhook: p[0], ipam: p[1] }).collect())
}

/// One cluster's installation, from [`install_base`] to [`finish_install`].
pub struct Install<'a> {
    pub cluster: &'a Cluster,
    /// Its files and kubeconfigs (the admin's, the scheduler's); Liqo's chart is rendered in its `dir`.
    pub layout: &'a Layout,
    pub ports: FixedPorts,
    /// The worker node's InternalIP (see [`ClusterState::node_ip`]).
    pub node_ip: Ipv4Addr,
    pub binaries: &'a Binaries,
    pub kube_scheduler: &'a Path,
}

/// The rendered chart, split by when it is applied.
pub struct Rendered {
    /// Webhook configurations and the objects they check: applied once the webhook serves.
    later: Vec<DynamicObject>,
}

/// Renders and applies the chart except what needs the webhook, and starts the node agents.
pub async fn install_base(
    install: &Install<'_>,
    client: &Client,
    lifetime: Lifetime,
    started: &Mutex<Vec<Supervised>>,
) -> Result<Rendered> {
    let name = &install.cluster.name;
    let kube_version = client.apiserver_version().await.context("reading the API server's version")?.git_version;
    let values = adapt::values(install.cluster, &install.binaries.version, install.ports);
    let (helm, chart, work) =
        (install.binaries.helm.clone(), install.binaries.dir.join("chart"), install.layout.dir.join("liqo-chart"));
    let namespace = labels::DEFAULT_LIQO_NAMESPACE;
    let mut objects =
        tokio::task::spawn_blocking(move || chart::render(&helm, &chart, namespace, &kube_version, &values, &work))
            .await
            .context("rendering Liqo's chart")??;

    let webhook_ca = Ca::generate(&format!("{name}-liqo-webhook"))?;
    let serving = webhook_ca.issue_server("liqo-webhook", &["127.0.0.1"])?;
    adapt::adapt_manifests(
        &mut objects,
        install.ports,
        &adapt::WebhookCertificate {
            ca_pem: &webhook_ca.cert_pem,
            cert_pem: &serving.cert_pem,
            key_pem: &serving.key_pem,
        },
    );

    chart::apply_crds(client, &objects).await?;
    // `helm install --create-namespace`.
    let liqo_namespace = Namespace {
        metadata: kube::api::ObjectMeta { name: Some(namespace.into()), ..Default::default() },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .patch(namespace, &PatchParams::apply("liqo-ground-helm").force(), &Patch::Apply(&liqo_namespace))
        .await
        .with_context(|| format!("creating namespace {namespace}"))?;
    let checked = checked_by_webhooks(&objects);
    let (later, now): (Vec<DynamicObject>, Vec<DynamicObject>) =
        objects.into_iter().filter(|o| chart::kind(o) != "CustomResourceDefinition").partition(|o| {
            let kind = chart::kind(o);
            kind.ends_with("WebhookConfiguration") || checked.contains(&format!("{}s", kind.to_lowercase()))
        });
    chart::apply(client, namespace, &now.iter().collect::<Vec<_>>()).await?;

    let agents = nodes::NodeAgents {
        cluster: name,
        kube_scheduler: install.kube_scheduler,
        scheduler_kubeconfig: &install.layout.scheduler_kubeconfig,
        kwok: &install.binaries.kwok,
        admin_kubeconfig: &install.layout.kubeconfig,
        pod_ip_range: &pod_ip_range(&install.cluster.pod_cidr),
        node_ip: install.node_ip,
        work_dir: &install.layout.dir,
        logs: &install.layout.logs,
    };
    nodes::start(&agents, client, lifetime, started).await?;
    Ok(Rendered { later })
}

/// The resources (plural names) the chart's webhook configurations send to Liqo's webhook: objects of these
/// kinds are applied once the webhook serves, as the API server refuses them before (failure policy `Fail`).
fn checked_by_webhooks(objects: &[DynamicObject]) -> std::collections::HashSet<String> {
    objects
        .iter()
        .filter(|o| chart::kind(o).ends_with("WebhookConfiguration"))
        .filter_map(|o| o.data["webhooks"].as_array())
        .flatten()
        .filter_map(|webhook| webhook["rules"].as_array())
        .flatten()
        .filter_map(|rule| rule["resources"].as_array())
        .flatten()
        .filter_map(|resource| resource.as_str().map(str::to_owned))
        .collect()
}

/// kwok's pod IP range: the first /24 of the cluster's pod CIDR (kwok takes the gateway address form).
fn pod_ip_range(pod_cidr: &str) -> String {
    let base = pod_cidr.split('/').next().unwrap_or(pod_cidr);
    let octets: Vec<&str> = base.split('.').collect();
    format!("{}.{}.{}.1/24", octets[0], octets[1], octets.get(2).unwrap_or(&"0"))
}

/// Waits for the cluster's webhook, applies the rest of the chart, and waits until Liqo works: its IPAM has
/// given the pod-CIDR and external-CIDR Networks a status (what a peering reads first), which takes the
/// controller-manager and the IPAM together.
pub async fn finish_install(install: &Install<'_>, rendered: Rendered, client: &Client) -> Result<()> {
    let name = &install.cluster.name;
    let deadline = Instant::now() + INSTALL_TIMEOUT;
    let webhook = format!("127.0.0.1:{}", install.ports.webhook);
    while tokio::net::TcpStream::connect(&webhook).await.is_err() {
        if Instant::now() > deadline {
            bail!(
                "Liqo's webhook of cluster {name} did not listen on {webhook} within {INSTALL_TIMEOUT:?}; see \
                 logs/kubelet.log and logs/{name}-liqo-webhook-*.log in the ground's directory"
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let namespace = labels::DEFAULT_LIQO_NAMESPACE;
    chart::apply(client, namespace, &rendered.later.iter().collect::<Vec<_>>()).await?;

    let networks: Api<Network> = Api::namespaced(client.clone(), namespace);
    for network in [labels::NETWORK_TYPE_POD_CIDR, labels::NETWORK_TYPE_EXTERNAL_CIDR] {
        loop {
            let read = networks.get_opt(network).await.with_context(|| format!("reading Network {network}"))?;
            if read.and_then(|n| n.status).and_then(|s| s.cidr).is_some() {
                break;
            }
            if Instant::now() > deadline {
                bail!(
                    "Liqo of cluster {name} did not give Network {namespace}/{network} a status within \
                     {INSTALL_TIMEOUT:?}: the controller-manager or the IPAM is not working; see logs/kubelet.log \
                     and logs/{name}-liqo-controller-manager-*.log, logs/{name}-liqo-ipam-*.log"
                );
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kwok_pod_range_is_inside_the_pod_cidr() {
        assert_eq!(pod_ip_range("10.101.0.0/16"), "10.101.0.1/24");
    }
}
