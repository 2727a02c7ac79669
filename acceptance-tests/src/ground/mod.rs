//! The test ground: N real Kubernetes control planes on loopback (kube-apiserver + kube-controller-manager,
//! built from upstream, all storing into one etcd), each bootstrapped as a cluster with Liqo 1.2 installed, plus
//! the simulated Liqo control plane running as its own process (`liqo-ground simulate --dir DIR`) — or, with
//! [`LiqoMode::Real`], real Liqo installed from its chart, its pods run by `liqo-ground kubelet --dir DIR` (see
//! [`liqo`]).
//!
//! Tests use [`Ground::shared`] (one `milan` + `rome` ground per test binary; [`Ground::shared_real`] with real
//! Liqo); benchmarks and examples with more
//! clusters use [`Ground::start`]; `acceptance-tests/ground up|down` uses [`Ground::start_with`] and
//! [`Ground::down`].
//!
//! Ground directory layout: `ground.json` (clusters and started processes), `<cluster>.kubeconfig` (admin),
//! `<cluster>-provider.kubeconfig` (same rights, user [`audit::PROVIDER_USER`]), `<cluster>/` (PKI, `audit.log`),
//! `_etcd/` (the shared etcd's data), `logs/<cluster>-<component>.log`, `logs/etcd.log`, `logs/simulator.log`;
//! with real Liqo also `logs/kubelet.log`, `logs/<cluster>-<pod>-<container>.log` and
//! `pods/<cluster>/<namespace>_<pod>/` (each Liqo process's kubeconfig and `$TMPDIR`).
pub mod audit;
pub mod bootstrap;
mod control_plane;
pub(crate) mod crd_seed;
pub mod kubeconfig;
pub mod liqo;
pub mod pki;
pub mod pool;
pub mod process;
mod shared;
mod upstream;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde::{Deserialize, Serialize};

pub use bootstrap::{FAULTS_CONFIGMAP, LIQO_VERSION};
pub use control_plane::Heap;
use control_plane::{Etcd, Layout};
use crd_seed::CrdSeed;
pub use process::Lifetime;
use process::Supervised;
pub use upstream::{Upstream, cache_bin_dir};

/// Names of the two clusters of the contract's examples: `milan` provides resources, `rome` consumes them.
pub const MILAN: &str = "milan";
pub const ROME: &str = "rome";

const STATE_FILE: &str = "ground.json";
/// Each cluster gets 10.<100+k>.0.0/16 pods and 10.<160+k>.0.0/16 external CIDR, hence the limit (a hub and 50
/// consumers fit).
const MAX_CLUSTERS: usize = 60;
/// Clusters whose control planes start (and get Liqo's objects) at the same time. Starting is CPU-bound (API
/// server start-up, CRD registration); dozens at once on a small machine starve each other until readiness
/// timeouts hit, while a few at a time keep every core busy.
const STARTS_AT_ONCE: usize = 4;
const STOP_GRACE: Duration = Duration::from_secs(5);

/// One cluster of the ground, as users and tests see it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Cluster {
    /// Cluster name, also its Liqo cluster ID and its kubeconfig context name.
    pub name: String,
    /// Admin kubeconfig (client certificate in group `system:masters`).
    pub kubeconfig: PathBuf,
    pub api_server: String,
    pub pod_cidr: String,
    pub external_cidr: String,
}

/// What `ground.json` records, so that `ground down`, `ground simulate` and `ground kubelet` can work from the
/// directory alone.
#[derive(Debug, Serialize, Deserialize)]
struct State {
    clusters: Vec<Cluster>,
    processes: Vec<process::Record>,
    /// Set when real Liqo runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    liqo: Option<liqo::State>,
}

/// A cluster of the ground did not come up (a process did not get ready in time, Liqo gave no status); the
/// ground's directory, with the logs, is kept.
#[derive(Debug)]
struct NotStarted {
    logs: PathBuf,
    failures: Vec<String>,
}

impl std::fmt::Display for NotStarted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the ground did not start (logs in {}):\n{}", self.logs.display(), self.failures.join("\n"))
    }
}

impl std::error::Error for NotStarted {}

/// Which Liqo a ground runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiqoMode {
    /// Liqo's objects installed as by its chart (from `LIQO_CRDS_DIR`), its controllers played by the simulator.
    Simulated,
    /// The same objects, no controllers (tests of the bare control planes).
    ObjectsOnly,
    /// Real Liqo of this version (e.g. `v1.2.0`), built from its Go module and installed from its own chart;
    /// its pods run as processes (see [`liqo`]).
    Real { version: String },
    /// Real Liqo of this version built, the clusters' nodes, kubelet and pod network up, and Liqo not installed:
    /// the test installs Liqo's chart itself, as a user would (see [`Ground::liqo_chart`]).
    Installable { version: String },
}

impl LiqoMode {
    /// Real Liqo of version `$LIQO_VERSION`, default [`liqo::DEFAULT_VERSION`].
    pub fn real() -> LiqoMode {
        let version = std::env::var("LIQO_VERSION").unwrap_or_else(|_| liqo::DEFAULT_VERSION.to_owned());
        LiqoMode::Real { version }
    }

    /// [`LiqoMode::Installable`] of the version [`LiqoMode::real`] would run.
    pub fn installable() -> LiqoMode {
        let version = std::env::var("LIQO_VERSION").unwrap_or_else(|_| liqo::DEFAULT_VERSION.to_owned());
        LiqoMode::Installable { version }
    }
}

/// The pod CIDRs of a ground's clusters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PodCidrs {
    /// 10.(100+k).0.0/16 for the k-th cluster: no two overlap.
    #[default]
    Distinct,
    /// 10.100.0.0/16 on every cluster, as kind gives every cluster 10.244.0.0/16: Liqo remaps each peer's.
    Same,
}

/// How to start a ground.
pub struct Options {
    /// Ground directory; `None` = a fresh directory in this process's session directory, removed on drop once the
    /// ground has started (a ground that failed to start keeps it, with its logs).
    pub dir: Option<PathBuf>,
    pub lifetime: Lifetime,
    pub liqo: LiqoMode,
    /// How the lean API servers of a ground without real Liqo collect their Go heap.
    pub heap: Heap,
    pub pod_cidrs: PodCidrs,
}

/// Real Liqo ([`LiqoMode::real`]) unless a test asks for the simulator.
impl Default for Options {
    fn default() -> Self {
        Options {
            dir: None,
            lifetime: Lifetime::Attached,
            liqo: LiqoMode::real(),
            heap: Heap::default(),
            pod_cidrs: PodCidrs::default(),
        }
    }
}

/// A client command's run ([`Ground::liqoctl`]): its wall time, and its CPU time (user + system).
#[derive(Clone, Copy, Debug)]
pub struct ClientRun {
    pub wall: Duration,
    pub cpu: Duration,
}

/// See [`Ground::liqo_chart`].
pub struct LiqoChart {
    pub helm: PathBuf,
    pub chart: PathBuf,
}

/// A running ground. Dropping it stops every process it started (unless [`Ground::detach`]ed).
pub struct Ground {
    dir: PathBuf,
    remove_dir: bool,
    clusters: Vec<Cluster>,
    layouts: Vec<Layout>,
    /// `None` for a ground this process attached to ([`Ground::attach`]): it starts no control plane.
    etcd: Option<Etcd>,
    lifetime: Lifetime,
    heap: Heap,
    processes: Mutex<Vec<Supervised>>,
    /// How each cluster's API server was started (by cluster name), to start it again the same way.
    api_servers: Mutex<HashMap<String, process::Spec>>,
    liqo: Option<liqo::State>,
    startup: Duration,
}

impl Ground {
    /// The ground shared by all tests of one test binary: `milan` and `rome` with real Liqo, started on first
    /// use, killed with the test process. Panics (failing the calling test) with the reason if it cannot start.
    pub fn shared() -> &'static Ground {
        shared::get()
    }

    /// Like [`Ground::shared`], with the simulator instead of Liqo's controllers: only for tests of the simulator
    /// and of faults real Liqo cannot be made to produce.
    pub fn shared_simulated() -> &'static Ground {
        shared::get_simulated()
    }

    /// Starts a ground with the given clusters and real Liqo, attached to this process.
    pub async fn start(names: &[&str]) -> Result<Ground> {
        Ground::start_with(names, Options::default()).await
    }

    /// Like [`Ground::start`], with the simulator (see [`Ground::shared_simulated`]).
    pub async fn start_simulated(names: &[&str]) -> Result<Ground> {
        Ground::start_with(names, Options { liqo: LiqoMode::Simulated, ..Options::default() }).await
    }

    /// Starts the ground; a start that fails in a fresh directory (see [`NotStarted`]) is tried once more with a
    /// fresh one, and said so on stderr and in `$LIQO_GROUND_RETRY_LEDGER` (the test command's summary lists
    /// them): a real-Liqo start has been seen to time out on a loaded two-core machine (Liqo gave a Network no
    /// status), rarely but in a run of a few dozen grounds, while the tests' subject is what runs once the ground
    /// is up. A second failure is the caller's, as is any other error.
    pub async fn start_with(names: &[&str], options: Options) -> Result<Ground> {
        if options.dir.is_some() {
            return Ground::start_once(names, &options).await;
        }
        once_more_if_not_started(|| Ground::start_once(names, &options)).await
    }

    /// The ground `ground up --dir dir` started and left running, for running tests against it (the inner loop of
    /// CONTRIBUTING.md: [`Ground::shared`] attaches to `$LIQO_TEST_GROUND`). Nothing of it is owned: dropping the
    /// value stops nothing, and what needs a process of this ground's own ([`Ground::restart_api_server`]) fails
    /// saying so. Fails if `liqo` (the kind of ground the test wants) is not what runs there. `how` says on stderr
    /// who left the ground running.
    pub fn attach(dir: &Path, liqo: &LiqoMode, how: &str) -> Result<Ground> {
        let state = read_state(dir)?;
        match (liqo, &state.liqo) {
            (LiqoMode::Real { version }, Some(running)) if *version != running.version => bail!(
                "the ground in {} runs Liqo {}, the test wants {version} (LIQO_VERSION)",
                dir.display(),
                running.version
            ),
            (LiqoMode::Real { .. }, None) => {
                bail!(
                    "the ground in {} runs no real Liqo (started with --simulated); the test needs real Liqo",
                    dir.display()
                )
            }
            (LiqoMode::Installable { .. }, _) => {
                bail!("a test that installs Liqo itself needs a ground of its own, not the one in {}", dir.display())
            }
            (LiqoMode::Simulated | LiqoMode::ObjectsOnly, Some(_)) => {
                bail!("the ground in {} runs real Liqo; the test needs `ground up --simulated`", dir.display())
            }
            _ => {}
        }
        let layouts = state
            .clusters
            .iter()
            .map(|cluster| {
                let port = cluster.api_server.rsplit(':').next().and_then(|p| p.parse().ok());
                let port =
                    port.with_context(|| format!("{}: no port in API server {}", dir.display(), cluster.api_server))?;
                Ok(Layout::new(dir, &cluster.name, control_plane::Ports { apiserver: port }))
            })
            .collect::<Result<Vec<_>>>()?;
        eprintln!("[ground] attached to the running ground in {} ({how})", dir.display());
        Ok(Ground {
            dir: dir.to_path_buf(),
            remove_dir: false,
            clusters: state.clusters,
            layouts,
            etcd: None,
            lifetime: Lifetime::Detached,
            heap: Heap::default(),
            processes: Mutex::new(Vec::new()),
            api_servers: Mutex::new(HashMap::new()),
            liqo: state.liqo,
            startup: Duration::ZERO,
        })
    }

    async fn start_once(names: &[&str], options: &Options) -> Result<Ground> {
        let began = Instant::now();
        validate_names(names)?;
        let real = match &options.liqo {
            LiqoMode::Real { version } | LiqoMode::Installable { version } => {
                let version = version.clone();
                Some(
                    tokio::task::spawn_blocking(move || liqo::Binaries::locate(&version))
                        .await
                        .context("locating Liqo")??,
                )
            }
            LiqoMode::Simulated | LiqoMode::ObjectsOnly => None,
        };
        // Before anything starts: a ground without real Liqo installs the CRDs of Liqo's chart.
        let crds = match real {
            None => Some(tokio::task::spawn_blocking(LiqoCrds::locate).await.context("locating Liqo's CRDs")??),
            Some(_) => None,
        };
        let upstream = tokio::task::spawn_blocking(Upstream::locate).await.context("locating upstream binaries")??;
        let (dir, remove_dir) = match &options.dir {
            Some(dir) => (prepare_dir(dir)?, false),
            None => (fresh_session_ground_dir()?, true),
        };
        let logs = dir.join("logs");
        std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;

        let ports = control_plane::allocate_ports(names.len())?;
        let layouts: Vec<Layout> =
            names.iter().zip(ports).map(|(name, ports)| Layout::new(&dir, name, ports)).collect();
        let clusters: Vec<Cluster> = layouts
            .iter()
            .enumerate()
            .map(|(k, layout)| Cluster {
                name: layout.name.clone(),
                kubeconfig: layout.kubeconfig.clone(),
                api_server: layout.api_server(),
                pod_cidr: match options.pod_cidrs {
                    PodCidrs::Distinct => format!("10.{}.0.0/16", 100 + k),
                    PodCidrs::Same => "10.100.0.0/16".to_owned(),
                },
                external_cidr: format!("10.{}.0.0/16", 160 + k),
            })
            .collect();
        // From here on, dropping `ground` (e.g. on an error below) stops whatever was started.
        // The directory stays until the ground has started: a failed start's message points at its logs.
        let mut ground = Ground {
            dir,
            remove_dir: false,
            clusters,
            layouts,
            etcd: Some(Etcd::allocate()?),
            lifetime: options.lifetime,
            heap: options.heap,
            processes: Mutex::new(Vec::new()),
            api_servers: Mutex::new(HashMap::new()),
            liqo: None,
            startup: Duration::ZERO,
        };
        if let Some(etcd) = &ground.etcd {
            etcd.start(&ground.dir, &upstream, options.lifetime, &ground.processes)?;
        }

        let Some(binaries) = real else {
            let crds = crds.context("Liqo's CRDs were not located")?;
            let starts = ground
                .layouts
                .iter()
                .zip(&ground.clusters)
                .map(|(layout, cluster)| ground.start_cluster(layout, cluster, &upstream, &crds, options.lifetime));
            let results = bounded(starts).await;
            ground.save_state()?;
            ground.check_all_started(results)?;
            if options.liqo == LiqoMode::Simulated {
                ground.start_helper("simulator", "simulate", options.lifetime)?;
                ground.save_state()?;
            }
            return Ok(ground.started(began, remove_dir));
        };

        let fixed_ports = liqo::allocate_ports(names.len())?;
        let gateways = tokio::task::spawn_blocking(liqo::Gateways::probe).await.context("probing namespaces")?;
        eprintln!("[ground] {}", gateways.describe());
        // Per cluster: its kube-apiserver and kube-controller-manager take about four, its gateways one each.
        if gateways == liqo::Gateways::Real
            && let Some(shortage) = liqo::wire::inotify_shortage(6 * names.len())
        {
            eprintln!("[ground] WARNING: {shortage}");
        }
        let node_ips: Vec<std::net::Ipv4Addr> = (0..names.len())
            .map(|k| match gateways {
                liqo::Gateways::Real => liqo::wire::node_ip(k),
                liqo::Gateways::Simulated { .. } => std::net::Ipv4Addr::LOCALHOST,
            })
            .collect();
        ground.liqo = Some(liqo::State {
            version: binaries.version.clone(),
            bin: binaries.dir.clone(),
            clusters: ground
                .clusters
                .iter()
                .zip(&fixed_ports)
                .zip(&node_ips)
                .map(|((cluster, ports), node_ip)| liqo::ClusterState {
                    name: cluster.name.clone(),
                    node: liqo::worker_name(&cluster.name),
                    ports: *ports,
                    node_ip: *node_ip,
                })
                .collect(),
            gateways,
        });
        let installs: Vec<liqo::Install<'_>> = ground
            .layouts
            .iter()
            .zip(&ground.clusters)
            .zip(&fixed_ports)
            .zip(&node_ips)
            .map(|(((layout, cluster), ports), node_ip)| liqo::Install {
                cluster,
                layout,
                ports: *ports,
                node_ip: *node_ip,
                binaries: &binaries,
                kube_scheduler: &upstream.kube_scheduler,
                chart: matches!(options.liqo, LiqoMode::Real { .. }),
            })
            .collect();
        let starts = installs.iter().map(|install| ground.start_real_cluster(install, &upstream, options.lifetime));
        let results = bounded(starts).await;
        ground.save_state()?;
        ground.check_all_started(results)?;
        ground.start_helper("kubelet", "kubelet", options.lifetime)?;
        ground.save_state()?;
        if matches!(options.liqo, LiqoMode::Installable { .. }) {
            eprintln!("[ground] Liqo {} is built and not installed: the test installs it", binaries.version);
            drop(installs);
            return Ok(ground.started(began, remove_dir));
        }
        let finishing = installs.iter().map(|install| async {
            let client = kubeconfig::client(&install.layout.kubeconfig).await?;
            liqo::finish_install(install, &client).await
        });
        ground.check_all_started(futures::future::join_all(finishing).await)?;
        drop(installs);
        eprintln!("[ground] real Liqo {} runs on every cluster", binaries.version);
        if let Some(state) = &ground.liqo {
            record_real_ground(&state.version, &state.gateways);
        }
        Ok(ground.started(began, remove_dir))
    }

    /// Fails with every cluster's error when any failed; the values otherwise.
    fn check_all_started<T>(&self, results: Vec<Result<T>>) -> Result<Vec<T>> {
        let mut values = Vec::new();
        let mut failures = Vec::new();
        for result in results {
            match result {
                Ok(value) => values.push(value),
                Err(err) => failures.push(format!("{err:#}")),
            }
        }
        if !failures.is_empty() {
            return Err(NotStarted { logs: self.dir.join("logs"), failures }.into());
        }
        Ok(values)
    }

    fn started(mut self, began: Instant, remove_dir: bool) -> Ground {
        self.startup = began.elapsed();
        self.remove_dir = remove_dir;
        let names: Vec<&str> = self.clusters.iter().map(|c| c.name.as_str()).collect();
        eprintln!("[ground] {} ready in {:.1}s ({})", names.join(", "), self.startup.as_secs_f64(), self.dir.display());
        self
    }

    /// A cluster with real Liqo: control plane with the workload controllers, then the first part of Liqo's
    /// installation (see [`liqo::install_base`]).
    /// Starts one cluster's control plane (with the controllers and scheduler Deployments need when
    /// `workloads`), records its API server for restarts, and returns an admin client.
    async fn start_control_plane(
        &self,
        layout: &Layout,
        upstream: &Upstream,
        lifetime: Lifetime,
        workloads: bool,
        began: Instant,
    ) -> Result<kube::Client> {
        let name = &layout.name;
        let api_server =
            control_plane::start(layout, self.etcd()?, upstream, lifetime, workloads, self.heap, &self.processes)
                .await
                .with_context(|| format!("cluster {name}: starting the control plane"))?;
        self.api_servers.lock().expect("API server list").insert(name.clone(), api_server);
        eprintln!("[ground] {name}: API server ready after {:.1}s", began.elapsed().as_secs_f64());
        kubeconfig::client(&layout.kubeconfig).await
    }

    async fn start_real_cluster(
        &self,
        install: &liqo::Install<'_>,
        upstream: &Upstream,
        lifetime: Lifetime,
    ) -> Result<()> {
        let name = &install.cluster.name;
        let began = Instant::now();
        let client = self.start_control_plane(install.layout, upstream, lifetime, true, began).await?;
        if install.chart {
            let seed = liqo::crd_seed(install.binaries, &upstream.kube_apiserver)?;
            let create = liqo::apply_crds(&client, install.binaries);
            seed.install(self.etcd()?, install.layout, &client, create)
                .await
                .with_context(|| format!("cluster {name}: Liqo {}'s CRDs", install.binaries.version))?;
        }
        liqo::install_base(install, &client, lifetime, &self.processes)
            .await
            .with_context(|| format!("cluster {name}: installing Liqo {} from its chart", install.binaries.version))?;
        let chart = if install.chart { "chart applied" } else { "chart not installed (the test installs it)" };
        eprintln!(
            "[ground] {name}: Liqo {}'s {chart}, node agents up after {:.1}s",
            install.binaries.version,
            began.elapsed().as_secs_f64()
        );
        Ok(())
    }

    async fn start_cluster(
        &self,
        layout: &Layout,
        cluster: &Cluster,
        upstream: &Upstream,
        crds: &LiqoCrds,
        lifetime: Lifetime,
    ) -> Result<()> {
        let name = &cluster.name;
        let began = Instant::now();
        let client = self.start_control_plane(layout, upstream, lifetime, false, began).await?;
        let install = bootstrap::Install {
            cluster_id: name,
            pod_cidr: &cluster.pod_cidr,
            external_cidr: &cluster.external_cidr,
            api_server: &cluster.api_server,
            remote_controlplane_rules: &crds.remote_controlplane_rules,
        };
        let seed = CrdSeed::of(&bootstrap::crd_files(&crds.dir)?, bootstrap::MANAGER, &upstream.kube_apiserver)?;
        let crds = seed.install(self.etcd()?, layout, &client, bootstrap::create_crds(&client, &crds.dir));
        bootstrap::install_liqo(&client, &install, crds)
            .await
            .with_context(|| format!("cluster {name}: installing Liqo's CRDs and objects"))?;
        bootstrap::wait_controllers(&client, name).await?;
        eprintln!("[ground] {name}: Liqo {LIQO_VERSION} objects installed after {:.1}s", began.elapsed().as_secs_f64());
        Ok(())
    }

    fn etcd(&self) -> Result<&Etcd> {
        self.etcd.as_ref().context("a ground attached to (LIQO_TEST_GROUND) starts no control plane")
    }

    /// Starts `liqo-ground <command> --dir DIR` (the simulator or the kubelet), logging to `logs/<name>.log`.
    fn start_helper(&self, name: &str, command: &str, lifetime: Lifetime) -> Result<()> {
        let spec = process::Spec {
            name: name.into(),
            program: ground_binary()?,
            args: vec![command.into(), "--dir".into(), self.dir.display().to_string()],
            env: Vec::new(),
            log: self.dir.join(format!("logs/{name}.log")),
        };
        let mut helper = process::spawn(&spec, lifetime)?;
        // A helper that cannot read the ground (bad state file, unreachable cluster) exits at once.
        std::thread::sleep(Duration::from_millis(300));
        if let Some(status) = helper.exited() {
            bail!(
                "the {name} exited at start ({status}); last lines of {}:\n{}",
                spec.log.display(),
                process::log_tail(&spec.log, 20)
            );
        }
        self.processes.lock().expect("process list").push(helper);
        Ok(())
    }

    fn save_state(&self) -> Result<()> {
        let processes = self.processes.lock().expect("process list").iter().map(|p| p.record().clone()).collect();
        let state = State { clusters: self.clusters.clone(), processes, liqo: self.liqo.clone() };
        let path = self.dir.join(STATE_FILE);
        std::fs::write(&path, serde_json::to_vec_pretty(&state)?).with_context(|| format!("writing {}", path.display()))
    }

    /// Leaves the processes running after this value (and this process) is gone; `Ground::down` stops them.
    pub fn detach(mut self) {
        // Dropping a `Child` neither kills nor waits for it; the processes are re-parented when we exit.
        self.processes.get_mut().expect("process list").clear();
        self.remove_dir = false;
    }

    /// Stops what `ground up --dir dir` started (by the PIDs it recorded). Returns the names of the processes
    /// that were still running.
    pub fn down(dir: &Path) -> Result<Vec<String>> {
        let state = read_state(dir)?;
        Ok(process::stop_recorded(&state.processes, STOP_GRACE))
    }

    /// The processes recorded in a ground directory.
    pub fn recorded_processes(dir: &Path) -> Result<Vec<process::Record>> {
        Ok(read_state(dir)?.processes)
    }

    /// The clusters recorded in a ground directory (what `liqo-ground simulate` serves).
    pub fn recorded_clusters(dir: &Path) -> Result<Vec<Cluster>> {
        Ok(read_state(dir)?.clusters)
    }

    /// What a real-Liqo ground recorded (what `liqo-ground kubelet` serves); `None` for a simulated ground.
    pub fn recorded_liqo(dir: &Path) -> Result<Option<liqo::State>> {
        Ok(read_state(dir)?.liqo)
    }

    /// The Liqo version this ground runs for real, `None` when Liqo is simulated or absent.
    pub fn real_liqo(&self) -> Option<&str> {
        self.liqo.as_ref().map(|state| state.version.as_str())
    }

    /// Upgrades real Liqo on `cluster` to `version` as a user does — the new chart's CRDs, then `helm upgrade` of the
    /// release with its values (see [`liqo::upgrade`]) — building that version first when the cache lacks it. Returns when Helm is
    /// done; Liqo's pods roll after, each run by the kubelet from the build its image names. [`Ground::real_liqo`]
    /// keeps naming the version the ground was started with.
    pub async fn upgrade_liqo(&self, cluster: &str, version: &str) -> Result<()> {
        self.liqo.as_ref().context("only a real-Liqo ground runs Liqo to upgrade")?;
        let index =
            self.clusters.iter().position(|c| c.name == cluster).with_context(|| format!("no cluster {cluster}"))?;
        let wanted = version.to_owned();
        let binaries =
            tokio::task::spawn_blocking(move || liqo::Binaries::locate(&wanted)).await.context("locating Liqo")??;
        liqo::upgrade(&self.clusters[index], &self.layouts[index], &binaries).await?;
        eprintln!("[ground] {cluster}: Liqo's release upgraded to {version}");
        Ok(())
    }

    /// What installing Liqo takes, for a test that installs it as a user does (on a ground started with
    /// [`LiqoMode::Installable`]): the ground's Helm and the chart of the ground's Liqo version.
    pub fn liqo_chart(&self) -> Result<LiqoChart> {
        let state = self.liqo.as_ref().context("only a real-Liqo ground has Liqo's chart")?;
        let binaries = liqo::Binaries::locate(&state.version)?;
        Ok(LiqoChart { chart: binaries.dir.join("chart"), helm: binaries.helm })
    }

    /// The Helm values Liqo on `cluster` is installed with: what a user passes, plus the ground's own (see
    /// [`liqo::adapt::values`]).
    pub fn liqo_values(&self, cluster: &str) -> Result<serde_json::Value> {
        let state = self.liqo.as_ref().context("only a real-Liqo ground installs Liqo")?;
        Ok(liqo::adapt::values(self.cluster(cluster), &state.version))
    }

    /// The Helm releases in Liqo's namespace on `cluster`, in any state (`helm list --all`).
    pub async fn helm_releases(&self, cluster: &str) -> Result<Vec<String>> {
        let state = self.liqo.as_ref().context("only a real-Liqo ground has Helm releases")?;
        let index =
            self.clusters.iter().position(|c| c.name == cluster).with_context(|| format!("no cluster {cluster}"))?;
        let version = state.version.clone();
        let binaries =
            tokio::task::spawn_blocking(move || liqo::Binaries::locate(&version)).await.context("locating Liqo")??;
        liqo::releases(&self.layouts[index], &binaries).await
    }

    /// How the real-Liqo ground runs Liqo's gateways (a real tunnel, or simulated where network namespaces
    /// cannot be made); `None` when Liqo is simulated or absent.
    pub fn gateways(&self) -> Option<&liqo::Gateways> {
        self.liqo.as_ref().map(|state| &state.gateways)
    }

    /// Runs the liqoctl of the Liqo this ground runs with `args`; fails with its output. Returns how long it took
    /// and its CPU time.
    pub async fn liqoctl(&self, args: &[&str]) -> Result<ClientRun> {
        let state = self.liqo.as_ref().context("liqoctl needs a real-Liqo ground")?;
        let (dir, version) = (state.bin.clone(), state.version.clone());
        let liqoctl =
            tokio::task::spawn_blocking(move || liqo::liqoctl(&dir, &version)).await.context("finding liqoctl")??;
        let mut command = std::process::Command::new(&liqoctl);
        command.args(args);
        // Timed from here: the first call may wait for liqoctl's build.
        self.run_client(command, &format!("liqoctl {}", args.join(" ")), Duration::from_secs(600)).await
    }

    /// Runs `shell` (a command line a user would type, e.g. one a warning of the provider prints) with `sh -c`,
    /// kubectl on its PATH and `cluster`'s admin kubeconfig as KUBECONFIG; fails with its output after `timeout`.
    pub async fn shell_on(&self, cluster: &str, shell: &str, timeout: Duration) -> Result<ClientRun> {
        let kubectl = tokio::task::spawn_blocking(Upstream::locate).await.context("locating kubectl")??.kubectl;
        let bin = kubectl.parent().context("kubectl's directory")?;
        let path = std::env::join_paths(
            std::iter::once(bin.to_path_buf())
                .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
        )?;
        // coreutils' timeout signals the shell's whole process group, so no kubectl outlives a timed-out command
        // (the backstop below would kill the shell alone); exit status 124 says it timed out.
        let mut command = std::process::Command::new("timeout");
        command
            .args(["--kill-after=10s", &format!("{}s", timeout.as_secs()), "sh", "-c", shell])
            .env("PATH", path)
            .env("KUBECONFIG", &self.cluster(cluster).kubeconfig);
        self.run_client(command, &format!("`{shell}` on {cluster}"), timeout + Duration::from_secs(30)).await
    }

    /// Runs a client command to completion with its output in files of the ground's directory; fails with that
    /// output when it fails or outlives `timeout`.
    async fn run_client(&self, mut command: std::process::Command, what: &str, timeout: Duration) -> Result<ClientRun> {
        let output = tempfile::tempdir_in(self.dir()).context("a directory for a client's output")?;
        let (out, err) = (output.path().join("stdout"), output.path().join("stderr"));
        command.stdin(std::process::Stdio::null()).stdout(File::create(&out)?).stderr(File::create(&err)?);
        let started = Instant::now();
        let (status, cpu) =
            process::run_to_completion(command, timeout).await.with_context(|| format!("running {what}"))?;
        let wall = started.elapsed();
        if !status.success() {
            bail!(
                "{what} failed ({status}):\n{}{}",
                std::fs::read_to_string(&out).unwrap_or_default(),
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        Ok(ClientRun { wall, cpu })
    }

    /// The address of `cluster`'s node, which a GatewayServer publishes as its endpoint: the node's address on the
    /// ground's wire with real gateways, loopback where the simulator or simulated gateways publish it.
    pub fn node_address(&self, cluster: &str) -> std::net::Ipv4Addr {
        self.liqo
            .as_ref()
            .and_then(|state| state.clusters.iter().find(|c| c.name == cluster))
            .map_or(std::net::Ipv4Addr::LOCALHOST, |c| c.node_ip)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// With real Liqo, the directories of `cluster`'s pods the kubelet runs: `<namespace>_<pod>/` each.
    pub fn pod_dirs(&self, cluster: &str) -> PathBuf {
        self.dir.join("pods").join(cluster)
    }

    /// Processes of the real-Liqo binary `binary` (e.g. `wireguard`) of the version the ground was started with,
    /// that the kubelet runs for this ground's `cluster` (other grounds on the machine run the same binaries): PID
    /// and command line.
    pub fn liqo_processes(&self, cluster: &str, binary: &str) -> Vec<(u32, Vec<String>)> {
        let Some(program) = self.liqo.as_ref().and_then(|state| file_identity(&state.bin.join(binary))) else {
            return Vec::new();
        };
        self.kubelet_processes(cluster, &HashMap::from([(program, ())]))
            .into_iter()
            .map(|((), pid, cmdline)| (pid, cmdline))
            .collect()
    }

    /// Every Liqo process the kubelet runs for `cluster`, as (binary, Liqo version of the build it runs from):
    /// while an upgrade rolls, old and new releases run side by side.
    pub fn liqo_releases(&self, cluster: &str) -> Vec<(String, String)> {
        let Some(bin) = self.liqo.as_ref().and_then(|state| state.bin.parent().map(Path::to_owned)) else {
            return Vec::new();
        };
        let mut programs = HashMap::new();
        for entry in std::fs::read_dir(&bin).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(version) = name.strip_prefix("liqo-") else { continue };
            for binary in liqo::adapt::RUNNABLE.iter().chain(&liqo::adapt::GATEWAY) {
                if let Some(identity) = file_identity(&entry.path().join(binary)) {
                    programs.insert(identity, ((*binary).to_owned(), version.to_owned()));
                }
            }
        }
        self.kubelet_processes(cluster, &programs).into_iter().map(|(release, _, _)| release).collect()
    }

    /// The processes whose executable is one of `programs` (by file identity: a gateway container runs under a
    /// root of its own, where its executable's path as /proc shows it need not be the host's) and that the kubelet
    /// started for this ground's `cluster` (their kubeconfig is in its pod directories).
    fn kubelet_processes<T: Clone>(
        &self,
        cluster: &str,
        programs: &HashMap<(u64, u64), T>,
    ) -> Vec<(T, u32, Vec<String>)> {
        let pods = self.pod_dirs(cluster);
        let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
        let split = |bytes: Vec<u8>| -> Vec<String> {
            bytes
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        };
        entries
            .filter_map(|entry| {
                let entry = entry.ok()?;
                let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
                let program = programs.get(&file_identity(&entry.path().join("exe"))?)?;
                let environ = split(std::fs::read(entry.path().join("environ")).ok()?);
                let kubeconfig = environ.iter().find_map(|var| var.strip_prefix("KUBECONFIG="))?;
                Path::new(kubeconfig).starts_with(&pods).then_some(())?;
                Some((program.clone(), pid, split(std::fs::read(entry.path().join("cmdline")).ok()?)))
            })
            .collect()
    }

    pub fn clusters(&self) -> &[Cluster] {
        &self.clusters
    }

    /// The named cluster; panics naming the known ones if there is none (a mistake in the test itself).
    pub fn cluster(&self, name: &str) -> &Cluster {
        self.clusters.iter().find(|c| c.name == name).unwrap_or_else(|| {
            let known: Vec<&str> = self.clusters.iter().map(|c| c.name.as_str()).collect();
            panic!("the ground has no cluster {name:?}; it has {known:?}")
        })
    }

    pub fn kubeconfig(&self, name: &str) -> &Path {
        &self.cluster(name).kubeconfig
    }

    /// A kubeconfig for the named cluster with the admin's rights (`system:masters`) but its own user,
    /// [`audit::PROVIDER_USER`]: a provider configured with it is the only client with that user in the audit log.
    /// Its user entry is `<cluster>-provider`, its context is named after the cluster.
    pub fn provider_kubeconfig(&self, name: &str) -> &Path {
        &self.layout(name).provider_kubeconfig
    }

    /// The named cluster's API server audit log (JSON lines, level Metadata; read it with [`audit::read`]).
    pub fn audit_log(&self, name: &str) -> PathBuf {
        self.layout(name).audit_log()
    }

    /// Kills the named cluster's kube-apiserver (SIGKILL), leaves it down for `down_for`, then starts it again
    /// with the same flags on the same port and waits until `/readyz` answers. etcd, the controller-manager and
    /// the simulator keep running and reconnect.
    pub async fn restart_api_server(&self, name: &str, down_for: Duration) -> Result<()> {
        let spec = self.api_servers.lock().expect("API server list").remove(name);
        let spec = spec.with_context(|| match self.etcd {
            None => format!("cluster {name}: the API server of a ground attached to (LIQO_TEST_GROUND) is not this test's to restart; run the test without LIQO_TEST_GROUND"),
            Some(_) => format!("cluster {name}: no API server was started by this ground"),
        })?;
        let restarted =
            control_plane::restart_api_server(self.layout(name), &spec, self.lifetime, down_for, &self.processes)
                .await
                .with_context(|| format!("cluster {name}: restarting kube-apiserver"));
        self.api_servers.lock().expect("API server list").insert(name.to_owned(), spec);
        restarted?;
        self.save_state()
    }

    /// Takes the named cluster's kube-apiserver away for good, as when a cluster is deleted or cut off:
    /// [`Down::Killed`] (SIGKILL: connections refused) or [`Down::Frozen`] (SIGSTOP: connections accepted by the
    /// kernel and never answered). Its Liqo and controllers keep running and fail against it.
    pub fn take_api_server_down(&self, name: &str, how: Down) -> Result<()> {
        let spec_name = format!("{}/kube-apiserver", self.cluster(name).name);
        let mut processes = self.processes.lock().expect("process list");
        let running = processes.iter_mut().find(|p| p.record().name == spec_name);
        let running = running.with_context(|| format!("{spec_name} is not a process of this ground"))?;
        match how {
            Down::Killed => running.kill(),
            Down::Frozen => running.freeze().with_context(|| format!("freezing {spec_name}"))?,
        }
        Ok(())
    }

    /// Brings back an API server [`Ground::take_api_server_down`] took away (the cluster comes back with what it
    /// had) and waits until it is ready.
    pub async fn bring_api_server_back(&self, name: &str, how: Down) -> Result<()> {
        match how {
            Down::Frozen => {
                let spec_name = format!("{}/kube-apiserver", self.cluster(name).name);
                let processes = self.processes.lock().expect("process list");
                let running = processes.iter().find(|p| p.record().name == spec_name);
                running.with_context(|| format!("{spec_name} is not a process of this ground"))?.thaw()?;
            }
            Down::Killed => {
                let restarted = {
                    let specs = self.api_servers.lock().expect("API server list");
                    let spec = specs.get(name);
                    let spec =
                        spec.with_context(|| format!("cluster {name}: no API server was started by this ground"))?;
                    process::spawn(spec, self.lifetime)?
                };
                let spec_name = restarted.record().name.clone();
                let mut processes = self.processes.lock().expect("process list");
                processes.retain(|p| p.record().name != spec_name);
                processes.push(restarted);
            }
        }
        let back = k8s_openapi::jiff::Timestamp::now();
        control_plane::wait_ready(self.layout(name), &self.processes).await?;
        if self.liqo.is_some() {
            // Back after the nodes' Leases went stale, kube-controller-manager's node-lifecycle controller marks the
            // nodes' pods not Ready (Liqo's webhook too) at its next look, until their kubelet reports them again,
            // as on a cluster; what a user runs next (a `kubectl annotate` of a ForeignCluster) needs the webhook.
            // So first every node's Lease is renewed after the return (from then on the controller sees the nodes
            // alive and marks nothing more), then the webhook is reached through a Ready pod.
            let client = self.client(name).await?;
            liqo::leases_renewed_since(&client, name, back).await?;
            liqo::webhook_reached(&client, &self.layout(name).dir, name, false)
                .await
                .with_context(|| format!("cluster {name}: Liqo's webhook after its API server came back"))?;
        }
        self.save_state()
    }

    /// Deletes cluster `name` for good and makes a fresh one under the same name, as a user recreates a cluster
    /// (`kind delete cluster` then `kind create cluster`): its control plane and node agents are stopped (a frozen
    /// API server too), and a new one starts on an empty store, with a new CA and credentials written to the same
    /// kubeconfig files, the same address and ports, and Liqo of the ground's version installed anew. The kubelet
    /// serves the new cluster once it sees the new kubeconfig. Real-Liqo grounds started by this process only.
    pub async fn recreate_cluster(&mut self, name: &str) -> Result<()> {
        let began = Instant::now();
        let state = self.liqo.clone().context("only a real-Liqo ground recreates a cluster")?;
        let index = self.clusters.iter().position(|c| c.name == name).with_context(|| format!("no cluster {name}"))?;
        let liqo_cluster = state.clusters.iter().find(|c| c.name == name).context("no Liqo state")?.clone();
        let prefix = format!("{name}/");
        let mut gone: Vec<Supervised> = {
            let mut processes = self.processes.lock().expect("process list");
            let (gone, kept) = processes.drain(..).partition(|p| p.record().name.starts_with(&prefix));
            *processes = kept;
            gone
        };
        for process in &mut gone {
            process.kill();
        }
        tokio::task::spawn_blocking(move || process::stop_owned(&mut gone, Duration::ZERO))
            .await
            .context("stopping the cluster's processes")?;
        self.layouts[index] = self.layouts[index].recreated();

        let upstream = tokio::task::spawn_blocking(Upstream::locate).await.context("locating upstream binaries")??;
        let version = state.version.clone();
        let binaries =
            tokio::task::spawn_blocking(move || liqo::Binaries::locate(&version)).await.context("locating Liqo")??;
        let install = liqo::Install {
            cluster: &self.clusters[index],
            layout: &self.layouts[index],
            ports: liqo_cluster.ports,
            node_ip: liqo_cluster.node_ip,
            binaries: &binaries,
            kube_scheduler: &upstream.kube_scheduler,
            chart: true,
        };
        self.start_real_cluster(&install, &upstream, self.lifetime).await?;
        self.save_state()?;
        let client = kubeconfig::client(&self.layouts[index].kubeconfig).await?;
        liqo::finish_install(&install, &client).await?;
        eprintln!("[ground] {name}: made anew with Liqo {} in {:.1}s", state.version, began.elapsed().as_secs_f64());
        Ok(())
    }

    fn layout(&self, name: &str) -> &Layout {
        let cluster = self.cluster(name);
        self.layouts.iter().find(|layout| layout.name == cluster.name).expect("every cluster has a layout")
    }

    /// A fresh admin client for the named cluster. Clients are not cached: each test may run on its own tokio
    /// runtime, and a client's connections belong to the runtime that made them.
    pub async fn client(&self, name: &str) -> Result<kube::Client> {
        kubeconfig::client(self.kubeconfig(name)).await
    }

    /// The named cluster's CA certificate (PEM): it signs client certificates and approved CSRs.
    pub fn ca_certificate(&self, name: &str) -> Result<String> {
        let path = self.dir.join(&self.cluster(name).name).join("pki/ca.crt");
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
    }

    /// Time from the call to `start` until every cluster was bootstrapped and the simulator started.
    pub fn startup_time(&self) -> Duration {
        self.startup
    }

    /// Switches a simulator fault on in one cluster (keys: `deny-resource-slices`, `fail-connections`,
    /// `status-delay-ms`, `drop-watch`; values as the simulator documents them).
    pub async fn set_fault(&self, cluster: &str, key: &str, value: &str) -> Result<()> {
        let patch = serde_json::json!({"data": {key: value}});
        self.patch_faults(cluster, &patch).await.with_context(|| format!("setting fault {key}={value}"))
    }

    /// Switches every simulator fault off in one cluster.
    pub async fn clear_faults(&self, cluster: &str) -> Result<()> {
        let patch = serde_json::json!({"data": null});
        self.patch_faults(cluster, &patch).await.context("clearing faults")
    }

    async fn patch_faults(&self, cluster: &str, patch: &serde_json::Value) -> Result<()> {
        let api: Api<ConfigMap> =
            Api::namespaced(self.client(cluster).await?, liqo_schema::liqo::labels::DEFAULT_LIQO_NAMESPACE);
        api.patch(FAULTS_CONFIGMAP, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .with_context(|| format!("ConfigMap liqo/{FAULTS_CONFIGMAP} in cluster {cluster}"))?;
        Ok(())
    }
}

impl Drop for Ground {
    fn drop(&mut self) {
        let processes = self.processes.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        process::stop_owned(processes, STOP_GRACE);
        if self.remove_dir && std::env::var_os("LIQO_KEEP_GROUND").is_none() {
            // A test that returns an error drops its ground before the harness reports the failure, so a ground
            // cannot tell a failed test from a passed one. The test command removes its whole run directory after
            // a passing run and keeps it after a failing one; with LIQO_KEEP_GROUND_LOGS (which it sets) only the
            // bulk, etcd's data, goes here, and the failed test's logs stay for the summary's pointer.
            if std::env::var_os("LIQO_KEEP_GROUND_LOGS").is_some() {
                let _ = std::fs::remove_dir_all(self.dir.join("_etcd"));
            } else {
                let _ = std::fs::remove_dir_all(&self.dir);
            }
        }
    }
}

/// Runs `start` (a ground's start in a fresh directory), and once more if it failed with [`NotStarted`], saying so
/// (see [`Ground::start_with`]).
async fn once_more_if_not_started<F, Fut>(mut start: F) -> Result<Ground>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Ground>>,
{
    match start().await {
        Err(err) if err.downcast_ref::<NotStarted>().is_some() => {
            eprintln!("[ground] {err:#}\n[ground] starting a fresh ground once more");
            crate::session::append_to_ledger(
                "LIQO_GROUND_RETRY_LEDGER",
                &format!("{}\n", format!("{err:#}").replace('\n', " | ")),
                "the retried ground start",
            );
            start().await
        }
        started => started,
    }
}

/// Appends the Liqo version and how its gateways ran to `$LIQO_GROUND_LEDGER` (set by `acceptance-tests/test`,
/// whose summary says which mode ran), one tab-separated line per real-Liqo ground.
fn record_real_ground(version: &str, gateways: &liqo::Gateways) {
    crate::session::append_to_ledger(
        "LIQO_GROUND_LEDGER",
        &format!("{version}\t{}\n", gateways.describe()),
        "the real-Liqo ground",
    );
}

/// Runs cluster starts [`STARTS_AT_ONCE`] at a time; the results in the clusters' order.
async fn bounded<T>(starts: impl Iterator<Item = impl std::future::Future<Output = T>>) -> Vec<T> {
    use futures::StreamExt;
    futures::stream::iter(starts).buffered(STARTS_AT_ONCE).collect().await
}

/// How [`Ground::take_api_server_down`] takes an API server away.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Down {
    Killed,
    Frozen,
}

/// The Liqo release whose CRDs and ClusterRole rules the simulated ground installs (the simulator plays its
/// controllers).
pub const SIMULATED_LIQO_VERSION: &str = "v1.2.0";

/// Liqo's CRD files and the rules of its remote control plane's ClusterRole: what the simulated ground installs,
/// as Liqo's chart has them.
pub struct LiqoCrds {
    /// The CRD files, `*.yaml`, one CRD each (the chart's `charts/liqo-crds/crds/`).
    pub dir: PathBuf,
    /// The `rules:` list the chart wraps into ClusterRole `liqo-remote-controlplane`
    /// (`files/liqo-remote-controlplane-ClusterRole.yaml`).
    pub remote_controlplane_rules: PathBuf,
}

impl LiqoCrds {
    /// `LIQO_CRDS_DIR` when set (the CRD files, the rules in its `rbac/`); else the chart of Liqo
    /// [`SIMULATED_LIQO_VERSION`] in its Go module, as the real ground takes its chart (`go mod download`: once per
    /// machine, then from Go's module cache).
    pub fn locate() -> Result<LiqoCrds> {
        if let Some(dir) = std::env::var_os("LIQO_CRDS_DIR").map(PathBuf::from) {
            ensure!(
                dir.is_dir(),
                "LIQO_CRDS_DIR: Liqo's CRD directory {} does not exist; point LIQO_CRDS_DIR at a directory holding \
                 Liqo {SIMULATED_LIQO_VERSION}'s CRD YAML files and rbac/, or unset it to use Liqo's chart from its \
                 Go module",
                dir.display()
            );
            let remote_controlplane_rules = dir.join("rbac/liqo-remote-controlplane-ClusterRole.yaml");
            return Ok(LiqoCrds { dir, remote_controlplane_rules });
        }
        // Once per process: every simulated ground a test process starts reads the same chart.
        static CHART: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
        let chart = match CHART.get() {
            Some(chart) => chart.clone(),
            None => {
                let dir = upstream::go_module_dir("github.com/liqotech/liqo", SIMULATED_LIQO_VERSION)?;
                CHART.get_or_init(|| dir.join("deployments/liqo")).clone()
            }
        };
        Ok(LiqoCrds {
            dir: chart.join("charts/liqo-crds/crds"),
            remote_controlplane_rules: chart.join("files/liqo-remote-controlplane-ClusterRole.yaml"),
        })
    }
}

/// The checkout under test: the parent of `CARGO_MANIFEST_DIR` as this process was given it (by `cargo test` and
/// `cargo run`, or by `acceptance-tests/test`, `ground`, `bench` and `demo`), not as it was when the crate was
/// built. The build cache is shared between checkouts (`~/.cache/terraform-provider-liqo/cargo-target`) and cargo
/// does not rebuild a binary whose checkout only moved (its files keeping their times), so a path baked in at build
/// time can name another checkout, or one deleted since (CI once ran test binaries built in a clone removed before
/// its run).
pub fn repository_root() -> PathBuf {
    let Some(crate_dir) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        panic!(
            "CARGO_MANIFEST_DIR is not set: run this through `cargo test`, `cargo run` or acceptance-tests/test, \
             ground, bench or demo, which set it to the checkout's acceptance-tests/ folder"
        )
    };
    Path::new(&crate_dir).parent().expect("the crate lives in the repository").to_path_buf()
}

fn validate_names(names: &[&str]) -> Result<()> {
    if names.is_empty() || names.len() > MAX_CLUSTERS {
        bail!("a ground has 1 to {MAX_CLUSTERS} clusters, {} were requested", names.len());
    }
    for (k, name) in names.iter().enumerate() {
        let dns_label = !name.is_empty()
            && name.len() <= 63
            && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !name.starts_with('-')
            && !name.ends_with('-');
        if !dns_label {
            bail!(
                "cluster name {name:?} is not a DNS label (lowercase letters, digits, '-'); Liqo cluster IDs must be"
            );
        }
        if names[..k].contains(name) {
            bail!("cluster name {name:?} is given twice");
        }
    }
    Ok(())
}

/// Makes a user-given directory ready: refuses a running ground or a directory that is not a ground's,
/// clears a previous (stopped) ground.
fn prepare_dir(dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating ground directory {}", dir.display()))?;
    let dir = dir.canonicalize().with_context(|| format!("resolving {}", dir.display()))?;
    if dir.join(STATE_FILE).is_file() {
        let state = read_state(&dir)?;
        let running: Vec<&str> =
            state.processes.iter().filter(|r| process::is_running(r)).map(|r| r.name.as_str()).collect();
        if !running.is_empty() {
            bail!(
                "a ground is already running in {} ({}); stop it with `acceptance-tests/ground down --dir {}`",
                dir.display(),
                running.join(", "),
                dir.display()
            );
        }
        std::fs::remove_dir_all(&dir).with_context(|| format!("clearing the stopped ground in {}", dir.display()))?;
        std::fs::create_dir_all(&dir)?;
    } else if std::fs::read_dir(&dir)?.next().is_some() {
        bail!("{} is neither empty nor a ground directory (no {STATE_FILE}); choose another --dir", dir.display());
    }
    Ok(dir)
}

fn fresh_session_ground_dir() -> Result<PathBuf> {
    let dir = tempfile::Builder::new()
        .prefix("ground-")
        .tempdir_in(crate::session::dir()?)
        .context("creating a ground directory")?
        .keep();
    Ok(dir)
}

fn read_state(dir: &Path) -> Result<State> {
    let path = dir.join(STATE_FILE);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!("reading {} (is {} a ground directory started by `ground up`?)", path.display(), dir.display())
    })?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// A file's device and inode: what tells one executable from another whatever path a process sees it by.
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The `liqo-ground` binary, which runs the simulator and the kubelet: `$LIQO_GROUND_BIN`, this executable if it is
/// `liqo-ground`, else the one cargo builds next to test and bench executables (`target/<profile>/`).
fn ground_binary() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("LIQO_GROUND_BIN") {
        return Ok(PathBuf::from(path));
    }
    let me = std::env::current_exe().context("locating the current executable")?;
    if me.file_name().is_some_and(|n| n == "liqo-ground") {
        return Ok(me);
    }
    let candidates: Vec<PathBuf> = me.ancestors().skip(1).take(2).map(|dir| dir.join("liqo-ground")).collect();
    candidates.iter().find(|path| path.is_file()).cloned().with_context(|| {
        format!(
            "the liqo-ground binary (it runs the simulator and the kubelet) is not at {:?}; build it with `cargo build -p liqo-acceptance \
             --bin liqo-ground` or set LIQO_GROUND_BIN",
            candidates
        )
    })
}
