//! `acceptance-tests/ground` — the test ground on its own, for people exploring the provider and for the demo.
//!
//! ```text
//! ground up [--dir DIR] [--clusters milan,rome] [--real|--simulated]
//!                                                 start, install Liqo (real, the default: built from its module,
//!                                                 version $LIQO_VERSION, default v1.2.0; simulated: Liqo's
//!                                                 objects and the simulator); print `export` lines
//! ground down [--dir DIR]                         stop exactly what `up` started in DIR
//! ground simulate --dir DIR                       run the simulated Liqo control plane (started by `up`)
//! ground kubelet --dir DIR                        run real Liqo's pods as processes (started by `up --real`)
//! ground status [--dir DIR]                       table of the Liqo objects on every cluster, with status
//! ground reuse [--dir DIR]                        after tests on a real-Liqo ground (of `up`, or of the test
//!                                                 command's pool): exit 0 when it is as it was started (its
//!                                                 processes up, the same objects, once the ForeignClusters Liqo
//!                                                 keeps after an unpeer are deleted), else print what changed and
//!                                                 exit 1
//! ground pod [--dir DIR] --namespace NS [--name NAME] [--consumer rome] [--provider milan]
//!                                                 run a pod in offloaded namespace NS of the consumer on the
//!                                                 virtual node; show it and its remote copy on the provider
//! ```
//! DIR defaults to `$LIQO_GROUND_DIR`, else `$TMPDIR/liqo-ground`. Progress goes to stderr, the `export` lines
//! to stdout, so `eval "$(acceptance-tests/ground up)"` works.
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use liqo_acceptance::ground::kubeconfig::client;
use liqo_acceptance::ground::liqo::kubelet::{self, KubeletCluster};
use liqo_acceptance::ground::{Ground, Lifetime, LiqoMode, MILAN, Options, ROME};
use liqo_acceptance::simulator::{self, SimCluster};
use liqo_acceptance::{inventory, offloaded_pod};

const USAGE: &str = "usage: ground up [--dir DIR] [--clusters NAME,NAME…] [--real|--simulated] | ground down [--dir DIR] | ground status [--dir DIR] | ground reuse [--dir DIR] | ground pod [--dir DIR] --namespace NS [--name NAME] [--consumer NAME] [--provider NAME] | ground simulate --dir DIR | ground kubelet --dir DIR";

struct Args {
    command: String,
    dir: PathBuf,
    clusters: Vec<String>,
    liqo: LiqoMode,
    /// `pod`: namespace, pod name, consumer and provider cluster.
    namespace: Option<String>,
    pod: String,
    consumer: String,
    provider: String,
}

fn parse_args() -> Result<Args> {
    let mut args = std::env::args().skip(1);
    let command = args.next().context(USAGE)?;
    let mut dir = None;
    let mut clusters = vec![MILAN.to_owned(), ROME.to_owned()];
    let mut liqo = LiqoMode::real();
    let (mut namespace, mut pod, mut consumer, mut provider) =
        (None, "hello".to_owned(), ROME.to_owned(), MILAN.to_owned());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--dir" => dir = Some(PathBuf::from(args.next().context("--dir needs a directory")?)),
            "--clusters" if command == "up" => {
                clusters = args.next().context("--clusters needs names")?.split(',').map(str::to_owned).collect();
            }
            "--real" if command == "up" => liqo = LiqoMode::real(),
            "--simulated" if command == "up" => liqo = LiqoMode::Simulated,
            "--namespace" if command == "pod" => namespace = Some(args.next().context("--namespace needs a name")?),
            "--name" if command == "pod" => pod = args.next().context("--name needs a name")?,
            "--consumer" if command == "pod" => consumer = args.next().context("--consumer needs a cluster")?,
            "--provider" if command == "pod" => provider = args.next().context("--provider needs a cluster")?,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    let dir = dir
        .or_else(|| std::env::var_os("LIQO_GROUND_DIR").map(PathBuf::from))
        .unwrap_or_else(|| std::env::temp_dir().join("liqo-ground"));
    Ok(Args { command, dir, clusters, liqo, namespace, pod, consumer, provider })
}

fn main() -> ExitCode {
    let result = parse_args().and_then(|args| {
        let runtime = tokio::runtime::Runtime::new().context("starting the tokio runtime")?;
        match args.command.as_str() {
            "up" => runtime.block_on(up(&args)),
            "down" => down(&args),
            "simulate" => runtime.block_on(simulate(&args)),
            "kubelet" => runtime.block_on(run_kubelet(&args)),
            "status" => runtime.block_on(status(&args)),
            "reuse" => runtime.block_on(reuse(&args)),
            "pod" => runtime.block_on(offloaded_pod(&args)),
            other => bail!("unknown command {other:?}\n{USAGE}"),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("[ground] error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn up(args: &Args) -> Result<()> {
    let names: Vec<&str> = args.clusters.iter().map(String::as_str).collect();
    eprintln!("[ground] starting {} in {}", names.join(", "), args.dir.display());
    let options = Options {
        dir: Some(args.dir.clone()),
        lifetime: Lifetime::Detached,
        liqo: args.liqo.clone(),
        ..Options::default()
    };
    let ground = Ground::start_with(&names, options).await?;
    if ground.real_liqo().is_some() {
        liqo_acceptance::ground::pool::record_baseline(&ground).await?;
    }
    for cluster in ground.clusters() {
        eprintln!(
            "[ground] {}: {} (pods {}, external {})",
            cluster.name, cluster.api_server, cluster.pod_cidr, cluster.external_cidr
        );
    }
    match ground.real_liqo() {
        Some(version) => eprintln!(
            "[ground] REAL Liqo {version} runs here (its pods are processes; nodes and pod containers are faked by \
             kwok; {}); logs: {}",
            ground.gateways().map(|g| g.describe()).unwrap_or_default(),
            ground.dir().join("logs").display()
        ),
        None => eprintln!(
            "[ground] Liqo's controllers are SIMULATED here (no kubelets, no gateways); log: {}",
            ground.dir().join("logs/simulator.log").display()
        ),
    }
    eprintln!("[ground] stop with: acceptance-tests/ground down --dir {}", ground.dir().display());
    for cluster in ground.clusters() {
        let var = format!("KUBECONFIG_{}", cluster.name.to_uppercase().replace('-', "_"));
        println!("export {var}={}", shell_quote(&cluster.kubeconfig.display().to_string()));
    }
    println!("export LIQO_GROUND_DIR={}", shell_quote(&ground.dir().display().to_string()));
    ground.detach();
    Ok(())
}

fn down(args: &Args) -> Result<()> {
    let stopped = Ground::down(&args.dir)?;
    if stopped.is_empty() {
        eprintln!("[ground] nothing was running in {}", args.dir.display());
    } else {
        eprintln!("[ground] stopped {} in {}", stopped.join(", "), args.dir.display());
    }
    Ok(())
}

async fn simulate(args: &Args) -> Result<()> {
    let clusters = Ground::recorded_clusters(&args.dir)?
        .into_iter()
        .map(|cluster| SimCluster { name: cluster.name, kubeconfig: cluster.kubeconfig })
        .collect();
    simulator::run(clusters).await
}

async fn run_kubelet(args: &Args) -> Result<()> {
    let state = Ground::recorded_liqo(&args.dir)?.with_context(|| {
        format!("{} is not a real-Liqo ground (started without --real): there is nothing to run", args.dir.display())
    })?;
    let admin: std::collections::HashMap<String, PathBuf> =
        Ground::recorded_clusters(&args.dir)?.into_iter().map(|c| (c.name, c.kubeconfig)).collect();
    let clusters = state
        .clusters
        .into_iter()
        .enumerate()
        .map(|(index, c)| {
            let kubeconfig =
                admin.get(&c.name).cloned().with_context(|| format!("no kubeconfig for cluster {}", c.name))?;
            Ok(KubeletCluster { name: c.name, kubeconfig, node: c.node, ports: c.ports, node_ip: c.node_ip, index })
        })
        .collect::<Result<Vec<_>>>()?;
    kubelet::run(clusters, state.bin, args.dir.clone(), state.gateways).await
}

async fn status(args: &Args) -> Result<()> {
    let mut rows = Vec::new();
    for cluster in Ground::recorded_clusters(&args.dir)? {
        rows.extend(inventory::list(&cluster.name, &client(&cluster.kubeconfig).await?).await?);
    }
    if rows.is_empty() {
        println!("(no Liqo objects on any cluster)");
    } else {
        print!("{}", inventory::table(&rows));
    }
    Ok(())
}

async fn reuse(args: &Args) -> Result<()> {
    let differences = liqo_acceptance::ground::pool::make_reusable(&args.dir).await?;
    if differences.is_empty() {
        return Ok(());
    }
    bail!("the ground in {} is not as it was started:\n{}", args.dir.display(), differences.join("\n"))
}

async fn offloaded_pod(args: &Args) -> Result<()> {
    let namespace = args.namespace.as_deref().context("ground pod needs --namespace (an offloaded namespace)")?;
    Ground::recorded_liqo(&args.dir)?.with_context(|| {
        format!("{} is not a real-Liqo ground: simulated Liqo has no virtual kubelet to run a pod", args.dir.display())
    })?;
    let clusters = Ground::recorded_clusters(&args.dir)?;
    let kubeconfig = |name: &str| {
        clusters
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.kubeconfig.clone())
            .with_context(|| format!("the ground in {} has no cluster {name}", args.dir.display()))
    };
    let consumer = client(&kubeconfig(&args.consumer)?).await?;
    let provider = client(&kubeconfig(&args.provider)?).await?;
    let pod = offloaded_pod::run(&consumer, &provider, namespace, &args.pod).await?;
    println!("{pod}");
    Ok(())
}

fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}
