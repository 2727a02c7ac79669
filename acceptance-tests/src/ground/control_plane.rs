//! One ground cluster's control plane: kube-apiserver (client-certificate authentication, RBAC, service-account
//! keys) and kube-controller-manager, all on 127.0.0.1, storing into the ground's one etcd ([`Etcd`]) under a
//! key prefix of their own.
//!
//! The controller-manager runs the controllers a Liqo peering depends on — namespace (termination),
//! garbage collector (owner references), CSR signing with the cluster CA (`kubernetes.io/kube-apiserver-client`),
//! service accounts and their tokens, ClusterRole aggregation, root-CA publishing — and, for a simulated ground,
//! deliberately NOT the node-lifecycle controller: there are no kubelets, and the simulator's Nodes must stay
//! Ready. A real-Liqo ground adds the workload controllers (see `WORKLOAD_CONTROLLERS`).
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

use super::pki::{self, Ca};
use super::process::{self, Lifetime, Spec, Supervised};
use super::upstream::Upstream;
use super::{audit, kubeconfig};
use crate::observe::{Seen, TimedOut, until};

/// Controllers the ground's controller-manager runs (names as `kube-controller-manager --controllers` takes them).
const CONTROLLERS: &str = "namespace-controller,garbage-collector-controller,\
certificatesigningrequest-signing-controller,serviceaccount-token-controller,serviceaccount-controller,\
clusterrole-aggregation-controller,root-ca-certificate-publisher-controller";

/// Added when real Liqo runs: its components are Deployments (and the virtual-kubelet one per VirtualNode), whose
/// pods kube-scheduler places on kwok's fake node; the node-lifecycle controller removes the `not-ready` taint the
/// API server puts on every new Node (kwok's and the virtual kubelets') once the node reports Ready, as in a
/// cluster. The job controller completes Jobs, which `helm uninstall` of Liqo's chart waits for (its pre-delete
/// hook). The daemonset controller runs the chart's `liqo-fabric` DaemonSet (a pod on kwok's node, which the
/// kubelet does not run: see `liqo::adapt::RUNNABLE`) and reports its status, which a waiting installer checks:
/// hashicorp/helm's `helm_release` (`wait`, its default) waits until the DaemonSet's observed generation is its
/// generation. The taint-eviction controller stays off: the ground never evicts.
const WORKLOAD_CONTROLLERS: &str =
    "deployment-controller,replicaset-controller,daemonset-controller,node-lifecycle-controller,job-controller";

/// kube-apiserver flags of every ground, made for its few clients:
/// - API priority and fairness queues requests of many tenants; the ground's few clients need no fairness, and
///   its configuration controller and per-flow state cost memory and CPU.
/// - The watch cache keeps a copy of every object of every resource type and serves watches from it; without
///   it, watches and lists go to etcd, which holds few objects per cluster here. Its upkeep for each of a real
///   ground's hundred-odd resource types is most of an idle API server's CPU: measured on an idle milan + rome
///   ground of Liqo v1.2.0 over 150 s, its two API servers used 4.9 CPU-seconds with both on, 2.8 with the watch
///   cache off, 2.4 with both off.
const FEW_CLIENTS_API_SERVER: &[&str] = &["--enable-priority-and-fairness=false", "--watch-cache=false"];

/// More kube-apiserver flags of a simulated ground, where nothing runs workloads: API groups nothing there reads
/// or writes, with the admission plugins that would watch them, are off, so that a ground of 50 clusters fits one
/// machine. Measured on one idle API server with Liqo's CRDs, with the flags above: 336 MB RSS with the defaults,
/// 263 MB with these (BENCHMARKS.md).
const LEAN_API_SERVER: &[&str] = &[
    "--runtime-config=autoscaling/v1=false,autoscaling/v2=false,batch/v1=false,node.k8s.io/v1=false,\
policy/v1=false,storage.k8s.io/v1=false,resource.k8s.io/v1=false",
    "--disable-admission-plugins=DefaultStorageClass,StorageObjectInUseProtection,PersistentVolumeClaimResize,\
RuntimeClass",
];

/// The Go heap of a lean API server where memory bounds the ground ([`Heap::Tight`]): collected at 50% growth
/// instead of 100%, and harder as it nears the soft limit. Its live heap after start-up is 110–160 MB (mostly
/// OpenAPI and CRD schemas), so this trades CPU for memory (263 → 217 MB RSS in the measurement above, there with a
/// 150 MiB limit).
const TIGHT_HEAP_ENV: &[(&str, &str)] = &[("GOGC", "50"), ("GOMEMLIMIT", "200MiB")];

/// How a lean API server's Go heap is collected ([`super::Options::heap`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Heap {
    /// Go's default (`GOGC=100`, no limit): the tests' simulated grounds (at most eleven clusters, in
    /// `tests/concurrency.rs`). Near the tight limit the collector runs every few tens of MB: `tests/concurrency.rs`
    /// alone used 82–97 CPU-seconds (90 on average) with the tight heap and 72–92 (77) with Go's default (six
    /// interleaved pairs), its API servers ~280 → ~400 MB RSS each.
    #[default]
    GoDefault,
    /// [`TIGHT_HEAP_ENV`]: the bench's hub of up to 60 clusters, where memory, not CPU, bounds the ground.
    Tight,
}

/// Service network of every ground cluster (never exchanged between clusters, so it may be the same).
pub const SERVICE_CIDR: &str = "10.96.0.0/16";
const SERVICE_IP: &str = "10.96.0.1";

/// How long an API server may take to become ready (it is usually a few seconds).
const READY_TIMEOUT: Duration = Duration::from_secs(90);

/// Ports one cluster listens on (all on 127.0.0.1).
#[derive(Clone, Copy, Debug)]
pub struct Ports {
    pub apiserver: u16,
}

/// Picks free ports for `clusters` clusters at once (see [`free_ports`]).
pub fn allocate_ports(clusters: usize) -> Result<Vec<Ports>> {
    Ok(free_ports(clusters)?.into_iter().map(|apiserver| Ports { apiserver }).collect())
}

/// The ground's one etcd, shared by every cluster's API server: each keeps its objects under its own
/// `--etcd-prefix`, so the clusters stay as separate as with an etcd each, and a ground of many clusters runs one
/// etcd process instead of one per cluster (about 45 MB and a share of a core less per cluster).
pub struct Etcd {
    client: u16,
    peer: u16,
}

impl Etcd {
    pub fn allocate() -> Result<Etcd> {
        let ports = free_ports(2)?;
        Ok(Etcd { client: ports[0], peer: ports[1] })
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client)
    }

    /// The keys under `prefix` and their values, through etcd's JSON gateway (`/v3/kv/range`).
    pub async fn values_under(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        // The range [prefix, prefix with its last byte incremented) is every key starting with `prefix`.
        let mut end = prefix.as_bytes().to_vec();
        if let Some(last) = end.last_mut() {
            *last += 1;
        }
        let range = json!({ "key": STANDARD.encode(prefix), "range_end": STANDARD.encode(end) });
        let answer = self.kv(&self.kv_client()?, "range", range).await?;
        let kvs = answer["kvs"].as_array().cloned().unwrap_or_default();
        kvs.iter()
            .map(|kv| {
                let decode = |field: &str| STANDARD.decode(kv[field].as_str().unwrap_or_default());
                let key = String::from_utf8(decode("key")?).context("an etcd key that is not UTF-8")?;
                Ok((key, decode("value")?))
            })
            .collect()
    }

    /// Writes each `(key, value)` of `entries` (`/v3/kv/put`, one request each: etcd limits a request's size to
    /// 1.5 MiB, and one of Liqo's CRDs alone is a third of that).
    pub async fn put_all(&self, entries: &[(String, Vec<u8>)]) -> Result<()> {
        let client = self.kv_client()?;
        for (key, value) in entries {
            let put = json!({ "key": STANDARD.encode(key), "value": STANDARD.encode(value) });
            self.kv(&client, "put", put).await?;
        }
        Ok(())
    }

    /// kube's HTTP client, pointed at etcd instead of an API server: the one HTTP stack the crate has.
    fn kv_client(&self) -> Result<kube::Client> {
        Ok(kube::Client::try_from(kube::Config::new(self.url().parse()?))?)
    }

    async fn kv(&self, client: &kube::Client, call: &str, body: serde_json::Value) -> Result<serde_json::Value> {
        let request = http::Request::post(format!("/v3/kv/{call}"))
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(&body)?)?;
        let text =
            client.request_text(request).await.with_context(|| format!("etcd at {}: /v3/kv/{call}", self.url()))?;
        serde_json::from_str(&text).with_context(|| format!("etcd's answer to /v3/kv/{call}: {text}"))
    }

    /// Starts etcd with its data in `<ground dir>/_etcd` (`_` keeps it apart from the clusters' directories,
    /// whose names are DNS labels). API servers retry until it answers, so this does not wait for it.
    pub fn start(
        &self,
        ground_dir: &Path,
        upstream: &Upstream,
        lifetime: Lifetime,
        started: &Mutex<Vec<Supervised>>,
    ) -> Result<()> {
        let Etcd { client, peer } = self;
        let spec = Spec {
            name: ETCD.into(),
            program: upstream.etcd.clone(),
            args: vec![
                "--name=ground".into(),
                format!("--data-dir={}", ground_dir.join("_etcd").display()),
                format!("--listen-client-urls=http://127.0.0.1:{client}"),
                format!("--advertise-client-urls=http://127.0.0.1:{client}"),
                format!("--listen-peer-urls=http://127.0.0.1:{peer}"),
                format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer}"),
                format!("--initial-cluster=ground=http://127.0.0.1:{peer}"),
                // Throwaway data: durability buys nothing and fsync dominates start-up and write latency.
                "--unsafe-no-fsync".into(),
                "--log-level=warn".into(),
            ],
            env: Vec::new(),
            log: ground_dir.join("logs").join("etcd.log"),
        };
        started.lock().expect("process list").push(process::spawn(&spec, lifetime)?);
        Ok(())
    }
}

/// The shared etcd's process name in the ground's records.
const ETCD: &str = "etcd";

/// `count` free ports on 127.0.0.1, chosen at once and reserved on the machine for as long as this process lives
/// (see [`reserve`]): every listener is held until all are bound, so that no port is handed out twice.
pub fn free_ports(count: usize) -> Result<Vec<u16>> {
    // Not bind(0): it hands out ports of the ephemeral range, from which every outgoing connection on the machine
    // also takes its source port, so a port chosen that way and bound seconds later (Liqo's webhook binds only
    // after its chart is applied) may be taken by then. Below the range only listeners take ports.
    let below = ephemeral_range_start().unwrap_or(32768);
    let candidates = LOWEST_PORT..below;
    let mut held: Vec<TcpListener> = Vec::with_capacity(count);
    for _ in 0..count * 200 {
        if held.len() == count {
            break;
        }
        let port = rand::random_range(candidates.clone());
        // Held until all are chosen, so one call never returns a port twice.
        if let Ok(listener) = TcpListener::bind(("127.0.0.1", port))
            && reserve(port)?
        {
            held.push(listener);
        }
    }
    anyhow::ensure!(held.len() == count, "found only {} free ports in {candidates:?} on 127.0.0.1", held.len());
    held.iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<std::io::Result<Vec<_>>>()
        .context("reading a listener's port")
}

/// Reserves `port` for this process's grounds until the process ends, or says that another process (or an earlier
/// call) holds it. A free port is not enough: a port is chosen well before its program binds it (Liqo's webhook
/// port ~40 s before, once the chart is applied), and test processes run side by side, each starting grounds. Two
/// grounds that chose one port both started; the later webhook could not bind and restarted in a loop, while its
/// API server called the other ground's webhook ("x509: certificate signed by unknown authority"). The
/// reservation is an exclusive `flock` on a file named after the port in a directory every process of the
/// machine shares; the kernel drops it when the process ends, however it ends.
pub fn reserve(port: u16) -> Result<bool> {
    static HELD: Mutex<Vec<std::fs::File>> = Mutex::new(Vec::new());
    let dir = reservations_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(port.to_string());
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {
            HELD.lock().expect("port reservations").push(file);
            Ok(true)
        }
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(err)) => Err(err).with_context(|| format!("locking {}", path.display())),
    }
}

/// Shared by every process on the machine whatever its TMPDIR (the test command gives each run its own): the
/// system's lock directory where there is one, else /tmp.
fn reservations_dir() -> PathBuf {
    let base = ["/run/lock", "/var/lock"].into_iter().map(Path::new).find(|d| d.is_dir()).unwrap_or(Path::new("/tmp"));
    base.join("liqo-ground-ports")
}

/// Ports the ground picks from: above the well-known and common service ports.
const LOWEST_PORT: u16 = 10000;

/// The first port of the kernel's ephemeral range (`net.ipv4.ip_local_port_range`).
fn ephemeral_range_start() -> Option<u16> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    range.split_whitespace().next()?.parse().ok().filter(|start| *start > LOWEST_PORT + 1000)
}

/// Where one cluster's files go and what it listens on.
#[derive(Clone)]
pub struct Layout {
    pub name: String,
    /// `<ground dir>/<name>`: PKI, audit log, the controller-manager's kubeconfig.
    pub dir: PathBuf,
    /// `<ground dir>/<name>.kubeconfig`: the admin kubeconfig handed to users and tests.
    pub kubeconfig: PathBuf,
    /// `<ground dir>/<name>/scheduler.kubeconfig`: user `system:kube-scheduler`, whose rights the bootstrap RBAC
    /// policy grants.
    pub scheduler_kubeconfig: PathBuf,
    /// `<ground dir>/<name>-provider.kubeconfig`: same rights, own user ([`audit::PROVIDER_USER`]), so the audit
    /// log tells the provider's requests from the harness's.
    pub provider_kubeconfig: PathBuf,
    pub logs: PathBuf,
    pub ports: Ports,
    /// How many times the cluster was made anew ([`Layout::recreated`]); each generation is an empty cluster.
    pub generation: u32,
}

impl Layout {
    /// The files of cluster `name` in the ground directory `dir`.
    pub fn new(dir: &Path, name: &str, ports: Ports) -> Layout {
        Layout {
            name: name.to_owned(),
            dir: dir.join(name),
            kubeconfig: dir.join(format!("{name}.kubeconfig")),
            provider_kubeconfig: dir.join(format!("{name}-provider.kubeconfig")),
            scheduler_kubeconfig: dir.join(name).join("scheduler.kubeconfig"),
            logs: dir.join("logs"),
            ports,
            generation: 0,
        }
    }

    /// The same cluster deleted and made again under the same name, address and files: its API server keeps its
    /// objects under a key prefix of its own in the ground's etcd, so the next generation starts empty.
    pub fn recreated(&self) -> Layout {
        Layout { generation: self.generation + 1, ..self.clone() }
    }

    pub fn etcd_prefix(&self) -> String {
        match self.generation {
            0 => format!("/clusters/{}/registry", self.name),
            n => format!("/clusters/{}/{n}/registry", self.name),
        }
    }

    pub fn api_server(&self) -> String {
        format!("https://127.0.0.1:{}", self.ports.apiserver)
    }

    /// `<ground dir>/<name>/audit.log` (see [`audit`]).
    pub fn audit_log(&self) -> PathBuf {
        self.dir.join("audit.log")
    }

    fn apiserver_log(&self) -> PathBuf {
        self.logs.join(format!("{}-kube-apiserver.log", self.name))
    }
}

/// Starts kube-apiserver on the ground's etcd, waits until it is ready, then starts the controller-manager.
/// Every started process is pushed to `started` at once, so the caller can stop it if a later step fails.
/// Returns how the API server was started, for [`restart_api_server`].
/// `workloads` adds the controllers that run Deployments (see [`WORKLOAD_CONTROLLERS`]); without, the API server
/// runs lean ([`LEAN_API_SERVER`]), its Go heap collected as `heap` says.
pub async fn start(
    layout: &Layout,
    etcd: &Etcd,
    upstream: &Upstream,
    lifetime: Lifetime,
    workloads: bool,
    heap: Heap,
    started: &Mutex<Vec<Supervised>>,
) -> Result<Spec> {
    let pki_dir = layout.dir.join("pki");
    std::fs::create_dir_all(&pki_dir).with_context(|| format!("creating {}", pki_dir.display()))?;
    let files = write_pki(layout, &pki_dir)?;
    let name = &layout.name;
    let Ports { apiserver } = layout.ports;

    let mut apiserver_args = vec![
        format!("--etcd-servers={}", etcd.url()),
        format!("--etcd-prefix={}", layout.etcd_prefix()),
        "--bind-address=127.0.0.1".into(),
        "--advertise-address=127.0.0.1".into(),
        format!("--secure-port={apiserver}"),
        format!("--cert-dir={}", pki_dir.display()),
        format!("--tls-cert-file={}", files.apiserver_cert.display()),
        format!("--tls-private-key-file={}", files.apiserver_key.display()),
        format!("--client-ca-file={}", files.ca_cert.display()),
        "--authorization-mode=RBAC".into(),
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
        format!("--service-account-key-file={}", files.service_account_public_key.display()),
        format!("--service-account-signing-key-file={}", files.service_account_key.display()),
        format!("--service-cluster-ip-range={SERVICE_CIDR}"),
        "--allow-privileged=true".into(),
        // Endpoints may not point at loopback; without kubelets nobody needs the `kubernetes` endpoints.
        "--endpoint-reconciler-type=none".into(),
        "--profiling=false".into(),
        format!("--audit-policy-file={}", files.audit_policy.display()),
        format!("--audit-log-path={}", layout.audit_log().display()),
        "--audit-log-format=json".into(),
        format!("--audit-log-maxsize={}", audit::MAX_SIZE_MB),
        "--audit-log-maxbackup=1".into(),
    ];
    apiserver_args.extend(FEW_CLIENTS_API_SERVER.iter().map(|flag| flag.to_string()));
    if workloads {
        // Liqo's webhooks are called through their Service: the ground's pod network (the kubelet's proxy).
        let egress = layout.dir.join("egress-selector.json");
        let config = super::liqo::pod_network::egress_config(&super::liqo::pod_network::socket(&layout.dir))?;
        std::fs::write(&egress, config).with_context(|| format!("writing {}", egress.display()))?;
        apiserver_args.push(format!("--egress-selector-config-file={}", egress.display()));
    }
    if !workloads {
        apiserver_args.extend(LEAN_API_SERVER.iter().map(|flag| flag.to_string()));
    }
    // A real-Liqo ground's API server keeps Go's default heap. Collecting it only near 600 MiB (`GOGC=off` with a
    // soft limit) saved about 2.4 CPU-seconds a ground start, but each such API server then held ~540 MiB: a cold
    // run (no test times yet, so many binaries started close together) had 34 at once, 18 GB, and thrashed.
    let heap_env: &[(&str, &str)] = if !workloads && heap == Heap::Tight { TIGHT_HEAP_ENV } else { &[] };
    let apiserver_env = heap_env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let apiserver_spec = Spec {
        name: format!("{name}/kube-apiserver"),
        program: upstream.kube_apiserver.clone(),
        args: apiserver_args,
        env: apiserver_env,
        log: layout.apiserver_log(),
    };
    started.lock().expect("process list").push(process::spawn(&apiserver_spec, lifetime)?);

    std::fs::write(&layout.kubeconfig, &files.admin_kubeconfig)
        .with_context(|| format!("writing {}", layout.kubeconfig.display()))?;
    std::fs::write(&layout.provider_kubeconfig, &files.provider_kubeconfig)
        .with_context(|| format!("writing {}", layout.provider_kubeconfig.display()))?;
    let kcm_kubeconfig = layout.dir.join("controller-manager.kubeconfig");
    std::fs::write(&kcm_kubeconfig, &files.controller_manager_kubeconfig)
        .with_context(|| format!("writing {}", kcm_kubeconfig.display()))?;

    std::fs::write(&layout.scheduler_kubeconfig, &files.scheduler_kubeconfig)
        .with_context(|| format!("writing {}", layout.scheduler_kubeconfig.display()))?;

    wait_ready(layout, started).await?;

    let controllers = if workloads { format!("{CONTROLLERS},{WORKLOAD_CONTROLLERS}") } else { CONTROLLERS.to_owned() };
    let controller_manager = Spec {
        name: format!("{name}/kube-controller-manager"),
        program: upstream.kube_controller_manager.clone(),
        args: vec![
            format!("--kubeconfig={}", kcm_kubeconfig.display()),
            format!("--controllers={controllers}"),
            // Each controller acts as its own service account, as in kubeadm clusters, so RBAC is real.
            "--use-service-account-credentials=true".into(),
            format!("--service-account-private-key-file={}", files.service_account_key.display()),
            format!("--root-ca-file={}", files.ca_cert.display()),
            format!("--cluster-signing-cert-file={}", files.ca_cert.display()),
            format!("--cluster-signing-key-file={}", files.ca_key.display()),
            "--leader-elect=false".into(),
            // No metrics/health endpoint: nothing scrapes it, and it would need one more free port.
            "--secure-port=0".into(),
        ],
        env: Vec::new(),
        log: layout.logs.join(format!("{name}-kube-controller-manager.log")),
    };
    started.lock().expect("process list").push(process::spawn(&controller_manager, lifetime)?);
    Ok(apiserver_spec)
}

/// Kills the cluster's API server (SIGKILL, like a crash), waits `down_for`, starts it again from `spec` (same
/// flags, same port, same etcd) and waits until it is ready. etcd, the controller-manager and the simulator keep
/// running and reconnect on their own.
pub async fn restart_api_server(
    layout: &Layout,
    spec: &Spec,
    lifetime: Lifetime,
    down_for: Duration,
    started: &Mutex<Vec<Supervised>>,
) -> Result<()> {
    {
        let mut started = started.lock().expect("process list");
        let running = started.iter_mut().find(|s| s.record().name == spec.name);
        let running = running.with_context(|| format!("{} was never started, so it cannot be restarted", spec.name))?;
        if let Some(status) = running.exited() {
            bail!("{} had already exited ({status}) before the restart", spec.name);
        }
        running.kill();
    }
    tokio::time::sleep(down_for).await;
    let restarted = process::spawn(spec, lifetime)?;
    {
        let mut started = started.lock().expect("process list");
        started.retain(|s| s.record().name != spec.name);
        started.push(restarted);
    }
    wait_ready(layout, started).await
}

struct PkiFiles {
    ca_cert: PathBuf,
    ca_key: PathBuf,
    apiserver_cert: PathBuf,
    apiserver_key: PathBuf,
    service_account_key: PathBuf,
    service_account_public_key: PathBuf,
    audit_policy: PathBuf,
    admin_kubeconfig: String,
    provider_kubeconfig: String,
    controller_manager_kubeconfig: String,
    scheduler_kubeconfig: String,
}

fn write_pki(layout: &Layout, pki_dir: &Path) -> Result<PkiFiles> {
    let name = &layout.name;
    let ca = Ca::generate(name)?;
    let serving = ca.issue_server(
        "kube-apiserver",
        &[
            "127.0.0.1",
            "localhost",
            SERVICE_IP,
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ],
    )?;
    let admin = ca.issue_client("admin", Some("system:masters"))?;
    let provider = ca.issue_client(audit::PROVIDER_USER, Some("system:masters"))?;
    // The bootstrap RBAC policy grants this user what the controller-manager needs to mint controller tokens.
    let controller_manager = ca.issue_client("system:kube-controller-manager", None)?;
    let scheduler = ca.issue_client("system:kube-scheduler", None)?;
    let write = |file: &str, content: &str| -> Result<PathBuf> {
        let path = pki_dir.join(file);
        std::fs::write(&path, content).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    };
    let server = layout.api_server();
    let (service_account_key, service_account_public_key) = pki::service_account_keys()?;
    Ok(PkiFiles {
        ca_cert: write("ca.crt", &ca.cert_pem)?,
        ca_key: write("ca.key", &ca.key_pem)?,
        apiserver_cert: write("apiserver.crt", &serving.cert_pem)?,
        apiserver_key: write("apiserver.key", &serving.key_pem)?,
        service_account_key: write("sa.key", &service_account_key)?,
        service_account_public_key: write("sa.pub", &service_account_public_key)?,
        audit_policy: write("audit-policy.yaml", audit::POLICY)?,
        admin_kubeconfig: kubeconfig::render(name, "admin", &server, &ca.cert_pem, &admin.cert_pem, &admin.key_pem)?,
        provider_kubeconfig: kubeconfig::render(
            name,
            "provider",
            &server,
            &ca.cert_pem,
            &provider.cert_pem,
            &provider.key_pem,
        )?,
        controller_manager_kubeconfig: kubeconfig::render(
            name,
            "controller-manager",
            &server,
            &ca.cert_pem,
            &controller_manager.cert_pem,
            &controller_manager.key_pem,
        )?,
        scheduler_kubeconfig: kubeconfig::render(
            name,
            "scheduler",
            &server,
            &ca.cert_pem,
            &scheduler.cert_pem,
            &scheduler.key_pem,
        )?,
    })
}

/// Polls `/readyz` (which includes RBAC's bootstrap roles and the CRD informers) until it answers `ok`,
/// failing fast with the log tail when etcd or the API server exits.
pub(super) async fn wait_ready(layout: &Layout, started: &Mutex<Vec<Supervised>>) -> Result<()> {
    let client = kubeconfig::client(&layout.kubeconfig).await?;
    let what = format!("the API server of cluster {} ({}) to be ready", layout.name, layout.api_server());
    let ready = until(READY_TIMEOUT, Duration::from_millis(200), &what, || async {
        {
            let mut started = started.lock().expect("process list");
            let prefix = format!("{}/", layout.name);
            let watched = |name: &str| name == ETCD || name.starts_with(&prefix);
            for supervised in started.iter_mut().filter(|s| watched(&s.record().name)) {
                if let Some(status) = supervised.exited() {
                    let record = supervised.record();
                    bail!(
                        "{} exited ({status}) before the API server of cluster {} became ready; last lines of {}:\n{}",
                        record.name,
                        layout.name,
                        record.log.display(),
                        process::log_tail(&record.log, 20)
                    );
                }
            }
        }
        let request = http::Request::get("/readyz").body(Vec::new()).expect("a static request is valid");
        Ok(match client.request_text(request).await {
            Ok(body) if body.trim() == "ok" => Seen::Done(()),
            Ok(body) => Seen::NotYet(format!("answer {body:?}")),
            Err(err) => Seen::NotYet(format!("answer {err}")),
        })
    })
    .await;
    match ready {
        // The API server's log says why, read once the wait is over.
        Err(err) if err.is::<TimedOut>() => {
            let log = layout.apiserver_log();
            bail!("{err}; last lines of {}:\n{}", log.display(), process::log_tail(&log, 20))
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_distinct_and_below_the_ephemeral_range() {
        let ports = free_ports(20).unwrap();
        let distinct: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), 20, "{ports:?}");
        let below = ephemeral_range_start().unwrap_or(32768);
        assert!(ports.iter().all(|p| (LOWEST_PORT..below).contains(p)), "{ports:?} outside {LOWEST_PORT}..{below}");
    }

    #[test]
    fn a_reserved_port_is_not_handed_out_again_until_its_process_ends() {
        let ports = free_ports(3).unwrap();
        for port in &ports {
            assert!(!reserve(*port).unwrap(), "port {port} reserved twice by one process");
        }
        // Another process sees the reservation too: flock(1) on the same file fails at once.
        for port in &ports {
            let path = reservations_dir().join(port.to_string());
            let status = std::process::Command::new("flock")
                .args(["--nonblock", "--exclusive"])
                .arg(&path)
                .arg("true")
                .status()
                .expect("running flock(1)");
            assert!(!status.success(), "another process locked {} although this process holds it", path.display());
        }
        // And this process sees another's: a port whose file a child process holds locked is skipped.
        let port = loop {
            let port = rand::random_range(LOWEST_PORT..ephemeral_range_start().unwrap_or(32768));
            if !ports.contains(&port) {
                break port;
            }
        };
        let path = reservations_dir().join(port.to_string());
        let mut holder = std::process::Command::new("flock")
            .args(["--exclusive"])
            .arg(&path)
            .args(["sh", "-c", "echo locked; exec sleep 30"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("running flock(1)");
        // Once the child says so, it holds the lock.
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.take().unwrap()), &mut line).unwrap();
        assert_eq!(line.trim(), "locked");
        let seen = !reserve(port).unwrap();
        holder.kill().ok();
        holder.wait().ok();
        assert!(seen, "port {port} reserved by this process although another held {}", path.display());
    }
}
