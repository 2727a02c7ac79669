//! Real Liqo on the ground: Liqo's binaries built from its Go module by `scripts/build-liqo.sh`, installed from
//! that version's own Helm chart, its pods run as processes by the ground's kubelet.
//!
//! Per cluster, in order: [`install_base`] installs the chart as it is with real `helm upgrade --install` (the
//! values: [`adapt::values`]) and starts the node agents (`nodes`: kube-scheduler, kwok and a fake
//! worker Node). The ground then starts the kubelet ([`kubelet`], one process for all clusters), and
//! [`finish_install`] waits for Liqo to work. [`upgrade`] moves a running cluster to another version as users do.
//! The gateways' network is the kubelet's ([`wire`]).
pub mod adapt;
mod chart;
pub mod kubelet;
mod nodes;
pub use nodes::leases_renewed_since;
pub mod pod_network;
pub mod wire;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kube::{Api, Client};
use liqo_schema::liqo::ipam::Network;
use liqo_schema::liqo::labels;
use serde::{Deserialize, Serialize};

use super::Cluster;
use super::control_plane::Layout;
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

/// The name of Liqo's controller-manager Deployment (and of its binary).
const CONTROLLER_MANAGER: &str = "liqo-controller-manager";
/// The binaries [`Binaries::locate`] requires (the gateways' are checked beside them). The uninstaller too: a cache
/// built before `build-liqo.sh` built it has every other one, and `helm uninstall` would then wait for a hook whose
/// pod the kubelet cannot run.
const COMPONENTS: [&str; 6] =
    [CONTROLLER_MANAGER, "webhook", "ipam", "crd-replicator", "virtual-kubelet", "uninstaller"];

impl Binaries {
    /// Finds the version's build in the cache, running `scripts/build-liqo.sh --no-liqoctl VERSION` first when any
    /// piece is missing (the first build of a version takes several minutes; one already under way, e.g. the test
    /// command's, is waited for). Without liqoctl, which the ground does not run: [`liqoctl`] finds that.
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
        build(&["--no-liqoctl", version])?;
        let missing = binaries.missing();
        if !missing.is_empty() {
            bail!("build-liqo.sh --no-liqoctl {version} finished but {} is missing", missing.join(", "));
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

/// liqoctl of `version`, in `dir` (the version's build directory), built by `scripts/build-liqo.sh VERSION` first
/// when it is missing. The test command builds it after what every test needs, beside the first tests, and this
/// waits for that build (`cached_build` builds a binary once at a time).
pub fn liqoctl(dir: &Path, version: &str) -> Result<PathBuf> {
    let liqoctl = dir.join("liqoctl");
    if !liqoctl.exists() {
        build(&[version])?;
    }
    if !liqoctl.exists() {
        bail!("build-liqo.sh {version} finished but {} is missing", liqoctl.display());
    }
    Ok(liqoctl)
}

/// Runs `scripts/build-liqo.sh ARGS`; its progress goes to this process's stderr.
fn build(args: &[&str]) -> Result<()> {
    let script = crate::ground::repository_root().join("acceptance-tests/scripts/build-liqo.sh");
    eprintln!("[ground] running {} {} (a piece of Liqo is not built yet)", script.display(), args.join(" "));
    let status = Command::new(&script)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .with_context(|| format!("running {}", script.display()))?;
    if !status.success() {
        bail!("{} {} failed ({status}); its output above says which build broke", script.display(), args.join(" "));
    }
    Ok(())
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
    Ok(super::control_plane::free_ports(clusters)?.into_iter().map(|ipam| FixedPorts { ipam }).collect())
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
    /// Whether the ground installs Liqo's chart (else a test does: [`super::LiqoMode::Installable`]).
    pub chart: bool,
}

/// Installs Liqo's chart with `helm upgrade --install` and starts the node agents.
pub async fn install_base(
    install: &Install<'_>,
    client: &Client,
    lifetime: Lifetime,
    started: &Mutex<Vec<Supervised>>,
) -> Result<()> {
    let name = &install.cluster.name;
    let work = install.layout.dir.join("liqo-chart");
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    if install.chart {
        // Not where the test installs Liqo: its namespace is the test's to make (by `helm --create-namespace` or a
        // Terraform resource), and Liqo's webhook then makes its certificate itself, as on any cluster.
        adapt::seed_webhook_certificate(client, labels::DEFAULT_LIQO_NAMESPACE, chart::RELEASE)
            .await
            .with_context(|| format!("cluster {name}"))?;
        let values = adapt::values(install.cluster, &install.binaries.version);
        helm_release(install.layout, install.binaries, values).await?;
    }

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
    Ok(())
}

/// Runs `step` with Helm pointed at `layout`'s cluster, off the async runtime.
async fn with_helm<T: Send + 'static>(
    layout: &Layout,
    binaries: &Binaries,
    step: impl FnOnce(&chart::Helm<'_>) -> Result<T> + Send + 'static,
) -> Result<T> {
    let (helm, kubeconfig, work) = (binaries.helm.clone(), layout.kubeconfig.clone(), layout.dir.join("liqo-chart"));
    tokio::task::spawn_blocking(move || {
        step(&chart::Helm {
            helm: &helm,
            kubeconfig: &kubeconfig,
            namespace: labels::DEFAULT_LIQO_NAMESPACE,
            work_dir: &work,
        })
    })
    .await
    .context("running Helm")?
}

/// `helm upgrade --install` of `binaries`' chart with `values`.
async fn helm_release(layout: &Layout, binaries: &Binaries, values: serde_json::Value) -> Result<()> {
    let chart = binaries.dir.join("chart");
    with_helm(layout, binaries, move |helm| helm.upgrade_install(&chart, &values)).await
}

/// The Helm releases in Liqo's namespace of `layout`'s cluster, in any state.
pub async fn releases(layout: &Layout, binaries: &Binaries) -> Result<Vec<String>> {
    with_helm(layout, binaries, |helm| helm.releases()).await
}

/// Field manager of the CRDs the ground applies: a user's `kubectl apply --server-side`.
const CRD_MANAGER: &str = "kubectl";

/// Applies the CRDs of `binaries`' chart through the cluster's API and waits until each is Established (see
/// [`chart::apply_crds`]).
pub async fn apply_crds(client: &Client, binaries: &Binaries) -> Result<()> {
    chart::apply_crds(client, &binaries.dir.join("chart"), CRD_MANAGER).await
}

/// The CRD seed of `binaries`' chart (see [`super::crd_seed`]): a new cluster's CRDs, before `helm upgrade --install`.
pub fn crd_seed(binaries: &Binaries, kube_apiserver: &Path) -> Result<super::crd_seed::CrdSeed> {
    super::crd_seed::CrdSeed::of(&chart::crd_files(&binaries.dir.join("chart"))?, CRD_MANAGER, kube_apiserver)
}

/// Upgrades Liqo on one cluster of a running ground the way Liqo's FAQ says users do and the Day-2 guide shows:
/// the new chart's CRDs first (Helm never upgrades them), then `helm upgrade` of the release with the values it was
/// installed with (`helm get values`) and the new version (the `tag` value: the chart in Liqo's module has no
/// appVersion). The kubelet runs each new pod from the build its image names, as the Deployments roll.
pub async fn upgrade(cluster: &Cluster, layout: &Layout, binaries: &Binaries) -> Result<()> {
    let client = super::kubeconfig::client(&layout.kubeconfig).await?;
    apply_crds(&client, binaries)
        .await
        .with_context(|| format!("cluster {}: applying Liqo {}'s CRDs", cluster.name, binaries.version))?;
    let mut values = with_helm(layout, binaries, |helm| helm.values()).await?;
    values["tag"] = serde_json::Value::from(binaries.version.clone());
    helm_release(layout, binaries, values)
        .await
        .with_context(|| format!("cluster {}: upgrading Liqo to {}", cluster.name, binaries.version))?;
    restart_controller_manager(&client)
        .await
        .with_context(|| format!("cluster {}: restarting Liqo's controller-manager after the upgrade", cluster.name))
}

/// Step 3 of the documented upgrade (docs/guides/day-2.md), as `kubectl rollout restart` does it. Helm applies the
/// chart's gateway templates (WgGatewayServerTemplate, WgGatewayClientTemplate) after its Deployments, and Liqo's
/// GatewayServer and GatewayClient controllers read a template when they reconcile but do not watch it: a new
/// controller-manager that reconciles before Helm has patched the templates renders the gateway from the old
/// one and keeps it (seen in CI: the gateway still on 1.0.3 five minutes after the upgrade to 1.1.2). Started
/// after Helm returns, the controller-manager reads the new templates.
async fn restart_controller_manager(client: &Client) -> Result<()> {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::{Patch, PatchParams};
    use time::format_description::well_known::Rfc3339;
    let now = time::OffsetDateTime::now_utc().format(&Rfc3339)?;
    let patch = serde_json::json!({"spec": {"template": {"metadata": {"annotations": {
        "kubectl.kubernetes.io/restartedAt": now
    }}}}});
    Api::<Deployment>::namespaced(client.clone(), labels::DEFAULT_LIQO_NAMESPACE)
        .patch(CONTROLLER_MANAGER, &PatchParams::default(), &Patch::Strategic(patch))
        .await?;
    Ok(())
}

/// kwok's pod IP range: the first /24 of the cluster's pod CIDR (kwok takes the gateway address form).
fn pod_ip_range(pod_cidr: &str) -> String {
    let base = pod_cidr.split('/').next().unwrap_or(pod_cidr);
    let octets: Vec<&str> = base.split('.').collect();
    format!("{}.{}.{}.1/24", octets[0], octets[1], octets.get(2).unwrap_or(&"0"))
}

/// Waits until the API server of cluster `name` (its directory `cluster_dir`) reaches Liqo's webhook through the pod
/// network, at the webhook Service's address, as it calls it: a Ready webhook pod whose process answers. Without the
/// Service (Liqo not installed), done at once unless `installing`.
pub async fn webhook_reached(client: &Client, cluster_dir: &Path, name: &str, installing: bool) -> Result<()> {
    use crate::observe::{Seen, until};
    let namespace = labels::DEFAULT_LIQO_NAMESPACE;
    let services: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(client.clone(), namespace);
    let socket = pod_network::socket(cluster_dir);
    let what = format!("the API server of cluster {name} to reach Service {namespace}/{}", adapt::WEBHOOK_SERVICE);
    until(INSTALL_TIMEOUT, Duration::from_millis(300), &what, || async {
        let Some(service) = services.get_opt(adapt::WEBHOOK_SERVICE).await? else {
            return Ok(if installing { Seen::NotYet("no such Service".into()) } else { Seen::Done(()) });
        };
        let address = pod_network::service_address(&service).context("the webhook Service")?;
        Ok(match pod_network::reaches(&socket, address).await {
            Ok(()) => Seen::Done(()),
            Err(err) => Seen::NotYet(format!("{err:#}")),
        })
    })
    .await
    .with_context(|| format!("see logs/kubelet.log and logs/{name}-liqo-webhook-*.log"))
}

/// Waits until Liqo works: the API server reaches its webhook (through the pod network, at the webhook Service's
/// address, as it calls it), and its IPAM has given the pod-CIDR and external-CIDR Networks a status (what a
/// peering reads first), which takes the controller-manager and the IPAM together.
pub async fn finish_install(install: &Install<'_>, client: &Client) -> Result<()> {
    use crate::observe::{Seen, until};
    let name = &install.cluster.name;
    let began = Instant::now();
    let namespace = labels::DEFAULT_LIQO_NAMESPACE;
    webhook_reached(client, &install.layout.dir, name, true)
        .await
        .with_context(|| format!("Liqo did not start on cluster {name}"))?;
    // Both waits share INSTALL_TIMEOUT.
    let networks: Api<Network> = Api::namespaced(client.clone(), namespace);
    for network in [labels::NETWORK_TYPE_POD_CIDR, labels::NETWORK_TYPE_EXTERNAL_CIDR] {
        let what = format!("Liqo of cluster {name} to give Network {namespace}/{network} a status");
        until(INSTALL_TIMEOUT.saturating_sub(began.elapsed()), Duration::from_millis(300), &what, || async {
            let read = networks.get_opt(network).await.with_context(|| format!("reading Network {network}"))?;
            Ok(match read {
                Some(n) if n.status.as_ref().and_then(|s| s.cidr.as_ref()).is_some() => Seen::Done(()),
                Some(_) => Seen::NotYet("the Network without a CIDR in its status".into()),
                None => Seen::NotYet("no such Network".into()),
            })
        })
        .await
        .with_context(|| {
            format!(
                "Liqo's controller-manager or IPAM is not working on cluster {name} (see logs/kubelet.log, \
                 logs/{name}-liqo-controller-manager-*.log and logs/{name}-liqo-ipam-*.log)"
            )
        })?;
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
