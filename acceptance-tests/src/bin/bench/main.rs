//! `acceptance-tests/bench` — benchmarks of terraform-provider-liqo on the test ground (figures in BENCHMARKS.md).
//!
//! ```text
//! bench --provider-bin PATH [--kubernetes-provider-bin PATH] [--cli terraform|tofu] [--plan-runs N]
//!       [--status-runs N] [--status-delay-ms MS] [--peering-runs N] [--hub-consumers N] [--hub-sizes N,N,…]
//!       [--skip overhead,status,peering,real-peering,real-status,real-pod,real-liqoctl,hub]
//! ```
//!
//! Measured, both sides of every comparison in the same run:
//! 1. provider overhead: `plan` of a configuration with one `liqo_cluster` data source vs. the same CLI with no
//!    provider at all (runs interleaved, medians and difference), and where the difference goes (`overhead.rs`);
//! 2. status-wait latency: the simulator writes `status.endpoint` of a GatewayServer (its log line, written when
//!    the API server acknowledged the write, is the flip instant) until Terraform's `-json` `apply_complete` of
//!    the `liqo_gateway` (p50/p99);
//! 3. the full two-cluster peering of `examples/modules/peering` vs. the same objects with hashicorp/kubernetes
//!    `kubernetes_manifest` (`peering.rs`, `manifest.rs`): apply and destroy wall time, API requests;
//! 4. peak RSS of every provider process of those runs (GNU time around the provider, `rss.rs`);
//! 5. binary size and idle RSS of the provider process;
//! 6. on a second, real-Liqo ground (`real.rs`): the comparison of 3., the status-wait latency of 2. on a status
//!    flip Liqo's own controller writes, `apply` start → a pod Running on the virtual node, and the same peering
//!    made with `liqoctl` side by side with this provider's (`liqoctl.rs`);
//! 7. a hub with up to N consumers, each its own control plane (`hub.rs`), last, on a ground of its own: apply,
//!    plan and destroy of several sizes at two parallelisms.
//!
//! The provider is installed from the tests' filesystem mirror. The mirror takes its binary from
//! `LIQO_PROVIDER_BIN`, read once per process; changing a running process's environment is unsafe, so the bench
//! writes a wrapper around the release binary and runs itself again with `LIQO_PROVIDER_BIN` pointing at it.
mod hub;
mod liqoctl;
mod manifest;
mod overhead;
mod peering;
mod real;
mod rss;

use rss::RssRecorder;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use liqo_acceptance::ground::{Ground, MILAN, ROME, repository_root};
use liqo_acceptance::tf::{self, Cli, Workdir, mirror};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

const USAGE: &str = "usage: bench --provider-bin PATH [--kubernetes-provider-bin PATH] [--cli terraform|tofu] \
                     [--plan-runs N] [--status-runs N] [--status-delay-ms MS] [--peering-runs N] [--hub-consumers N] \
                     [--hub-sizes N,N,…] [--skip overhead,status,peering,real-peering,real-status,real-pod,real-liqoctl,hub]";
/// Set (to the wrapper's directory) in the environment of the second, measuring, run of this binary.
const WRAPPER_DIR_ENV: &str = "LIQO_BENCH_WRAPPER_DIR";
const WRAPPER: &str = "terraform-provider-liqo";
/// go-plugin's handshake cookie: without it the provider refuses to serve (it was not started by a plugin host).
const MAGIC_COOKIE: (&str, &str) =
    ("TF_PLUGIN_MAGIC_COOKIE", "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2");

struct Args {
    provider_bin: PathBuf,
    cli: Cli,
    plan_runs: usize,
    status_runs: usize,
    status_delay_ms: u64,
    peering_runs: usize,
    /// hashicorp/kubernetes for the other side of the peering comparison.
    kubernetes_provider_bin: Option<PathBuf>,
    /// The hub ground's consumers; each of `hub_sizes` up to it is measured, and it too.
    hub_consumers: usize,
    hub_sizes: Vec<usize>,
    skip: Vec<String>,
}

impl Args {
    fn runs(&self, part: &str) -> bool {
        !self.skip.iter().any(|s| s == part)
    }
}

fn parse_args() -> Result<Args> {
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        provider_bin: PathBuf::new(),
        cli: *Cli::available().first().context("no Terraform CLI")?,
        plan_runs: 15,
        status_runs: 20,
        status_delay_ms: 200,
        peering_runs: 3,
        kubernetes_provider_bin: None,
        hub_consumers: 50,
        hub_sizes: vec![1, 10, 25, 50],
        skip: Vec::new(),
    };
    let number = |args: &mut dyn Iterator<Item = String>, flag: &str| -> Result<usize> {
        let value = args.next().with_context(|| format!("{flag} needs a number"))?;
        value.parse().with_context(|| format!("{flag} {value:?} is not a number"))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--provider-bin" => {
                parsed.provider_bin = PathBuf::from(args.next().context("--provider-bin needs a path")?)
            }
            "--cli" => {
                parsed.cli = match args.next().as_deref() {
                    Some("terraform") => Cli::Terraform,
                    Some("tofu") => Cli::OpenTofu,
                    other => bail!("--cli {other:?}: expected terraform or tofu"),
                }
            }
            "--plan-runs" => parsed.plan_runs = number(&mut args, "--plan-runs")?,
            "--status-runs" => parsed.status_runs = number(&mut args, "--status-runs")?,
            "--status-delay-ms" => parsed.status_delay_ms = number(&mut args, "--status-delay-ms")? as u64,
            "--peering-runs" => parsed.peering_runs = number(&mut args, "--peering-runs")?,
            "--hub-consumers" => parsed.hub_consumers = number(&mut args, "--hub-consumers")?,
            "--hub-sizes" => {
                let list = args.next().context("--hub-sizes needs numbers")?;
                parsed.hub_sizes = list
                    .split(',')
                    .map(|n| n.trim().parse().with_context(|| format!("--hub-sizes: {n:?} is not a number")))
                    .collect::<Result<_>>()?;
            }
            "--kubernetes-provider-bin" => {
                let path = PathBuf::from(args.next().context("--kubernetes-provider-bin needs a path")?);
                parsed.kubernetes_provider_bin = Some(manifest::check_binary(&path)?);
            }
            "--skip" => {
                parsed.skip = args.next().context("--skip needs names")?.split(',').map(str::to_owned).collect()
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    ensure!(!parsed.provider_bin.as_os_str().is_empty(), "--provider-bin is required (the release build)\n{USAGE}");
    ensure!(parsed.plan_runs >= 10, "--plan-runs must be at least 10 (the overhead figure is a median of ≥ 10 runs)");
    ensure!(parsed.status_runs >= 1 && parsed.peering_runs >= 1, "--status-runs and --peering-runs must be at least 1");
    parsed.provider_bin = parsed.provider_bin.canonicalize().with_context(|| {
        format!(
            "provider binary {}: build it with `cargo build --release -p terraform-provider-liqo`",
            parsed.provider_bin.display()
        )
    })?;
    Ok(parsed)
}

fn main() -> ExitCode {
    let result = parse_args().and_then(|args| match std::env::var_os(WRAPPER_DIR_ENV) {
        None => relaunch_with_wrapper(&args),
        Some(dir) => {
            let runtime = tokio::runtime::Runtime::new().context("starting the tokio runtime")?;
            runtime.block_on(measure(&args, Path::new(&dir)))
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("bench: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// First run: writes the wrapper into a fresh directory and runs this binary again with the mirror pointed at it.
fn relaunch_with_wrapper(args: &Args) -> Result<()> {
    ensure!(
        Path::new(rss::GNU_TIME).is_file(),
        "{} (GNU time) is needed to record the provider's peak RSS; install the `time` package",
        rss::GNU_TIME
    );
    let dir = tempfile::Builder::new().prefix("liqo-bench-").tempdir().context("creating the bench directory")?;
    let wrapper = rss::write_wrapper(dir.path(), WRAPPER, &args.provider_bin)?;
    let status = Command::new(std::env::current_exe()?)
        .args(std::env::args_os().skip(1))
        .env(WRAPPER_DIR_ENV, dir.path())
        .env("LIQO_PROVIDER_BIN", &wrapper)
        .env_remove("LIQO_PROVIDER_PACKAGE_DIR")
        .status()
        .context("running the measuring bench process")?;
    ensure!(status.success(), "the measuring bench process failed ({status})");
    Ok(())
}

/// One row of the final table.
struct Figure {
    group: &'static str,
    metric: String,
    value: String,
    goal: &'static str,
    /// `Some(true)` met, `Some(false)` missed, `None` no goal.
    met: Option<bool>,
}

#[derive(Default)]
struct Report {
    figures: Vec<Figure>,
    notes: Vec<String>,
}

impl Report {
    fn add(
        &mut self,
        group: &'static str,
        metric: impl Into<String>,
        value: impl Into<String>,
        goal: &'static str,
        met: Option<bool>,
    ) {
        let figure = Figure { group, metric: metric.into(), value: value.into(), goal, met };
        eprintln!("[bench] {}: {} = {}", figure.group, figure.metric, figure.value);
        self.figures.push(figure);
    }
}

async fn measure(args: &Args, wrapper_dir: &Path) -> Result<()> {
    let began = Instant::now();
    let mut report = Report::default();
    let recorder = RssRecorder { dir: wrapper_dir.to_path_buf() };
    recorder.stop();
    // hashicorp/kubernetes runs through the same kind of wrapper, so both sides pay the same /bin/sh start.
    let kubernetes = match &args.kubernetes_provider_bin {
        Some(bin) => {
            let dir = wrapper_dir.join("kubernetes");
            let wrapper = rss::write_wrapper(&dir, "terraform-provider-kubernetes", bin)?;
            Some((wrapper, RssRecorder { dir }))
        }
        None => None,
    };

    let machine = machine(args)?;
    eprintln!("[bench] {machine}");
    binary_figures(args, &mut report)?;

    // Build the mirror (packaging the wrapper) before any timing.
    tokio::task::spawn_blocking(mirror::get).await??;
    // A part that fails is reported as such; the figures of the others are still printed.
    let mut failed = Vec::new();
    // The status part times the simulator's status write (fault `status-delay-ms`), and the hub is sized by this
    // ground's memory per cluster: both need the simulated ground. The real-Liqo parts alone do not start it.
    let mut per_cluster_kb = 0;
    if ["overhead", "status", "peering", "hub"].iter().any(|part| args.runs(part)) {
        let ground = hub::start_tight_simulated(&[MILAN, ROME]).await.context("starting the ground")?;
        report.add("ground", "startup (2 clusters + simulator)", secs(ground.startup_time()), "", None);
        per_cluster_kb = hub::ground_memory_kb(&ground)? / 2;
        report.add(
            "ground",
            "memory (PSS) per cluster at idle (kube-apiserver + kube-controller-manager, half of the shared etcd and \
             simulator)",
            format!("{:.0} MB", per_cluster_kb as f64 / 1024.0),
            "",
            None,
        );
        if args.runs("overhead")
            && let Err(e) = overhead::plan_overhead(args, &ground, wrapper_dir, &mut report).await
        {
            failed.push(format!("provider overhead: {e:#}"));
        }
        if args.runs("status")
            && let Err(e) = status_latency(args, &ground, &mut report).await
        {
            failed.push(format!("status-wait latency: {e:#}"));
        }
        if args.runs("peering") {
            let other = kubernetes
                .as_ref()
                .map(|(wrapper, recorder)| peering::Comparison { kubernetes_provider: wrapper, recorder });
            if let Err(e) =
                peering::full_peering(args, &ground, &recorder, other, peering::SIMULATED, &mut report).await
            {
                failed.push(format!("full peering: {e:#}"));
            }
        }
        // The real-Liqo ground and the hub need the memory of the simulated ground: it stops here.
    }
    if real::PARTS.iter().any(|part| args.runs(part)) {
        let other = kubernetes
            .as_ref()
            .map(|(wrapper, recorder)| peering::Comparison { kubernetes_provider: wrapper, recorder });
        real::parts(args, &recorder, other, &mut report, &mut failed).await;
    }
    if args.runs("hub") && args.hub_consumers > 0 {
        let (n, why) = hub::plan_size(args.hub_consumers, per_cluster_kb);
        if let Some(why) = why {
            report.notes.push(format!("hub: {why}"));
        }
        if n == 0 {
            failed.push(
                "hub: not even one consumer fits in 60% of the available memory; free memory, or lighten the \
                 control planes with GOMEMLIMIT (see BENCHMARKS.md)"
                    .into(),
            );
        } else if let Err(e) = hub::hub(args, n, &recorder, &mut report).await {
            failed.push(format!("hub of {n} consumers: {e:#}"));
        }
    }
    for failure in &failed {
        report.notes.push(format!("FAILED — {failure}"));
    }
    report.notes.push(format!("bench wall time {}, load average at end {}", secs(began.elapsed()), load_average()));
    println!("{}", render(&machine, &report));
    ensure!(failed.is_empty(), "{} part(s) failed (see the notes above)", failed.len());
    Ok(())
}

/// CPU, cores, memory, kernel, CLI version and provider build, for the report header.
fn machine(args: &Args) -> Result<String> {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']))
        .unwrap_or("?");
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kb: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let load = load_average();
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(repository_root())
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    Ok(format!(
        "{cpu}, {cores} cores, {:.1} GiB RAM, Linux {}, load average at start {load}; {}; provider {} (release, commit {commit})",
        mem_kb as f64 / 1024.0 / 1024.0,
        kernel.trim(),
        args.cli.version()?,
        tf::PROVIDER_VERSION
    ))
}

/// Other work on the machine skews every figure; the load average at the start and end says how much.
fn load_average() -> String {
    let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// 5. Binary size (as built and after `strip`) and RSS of a provider process that completed its handshake and
///    waits for RPCs, started the way go-plugin starts it (magic cookie, client certificate for mTLS).
fn binary_figures(args: &Args, report: &mut Report) -> Result<()> {
    let size = fs::metadata(&args.provider_bin)?.len();
    report.add("binary", "size, release build as shipped", mib(size), "", None);
    let stripped_path = std::env::temp_dir().join(format!("liqo-bench-stripped-{}", std::process::id()));
    let stripped = Command::new("strip").arg("-o").arg(&stripped_path).arg(&args.provider_bin).status();
    match stripped {
        Ok(s) if s.success() => {
            let len = fs::metadata(&stripped_path)?.len();
            let _ = fs::remove_file(&stripped_path);
            report.add("binary", "size after `strip`", mib(len), "", None);
        }
        _ => report.notes.push("`strip` is not available: stripped size not measured".into()),
    }

    let client_cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])?.cert.pem();
    let mut child = Command::new(&args.provider_bin)
        .env(MAGIC_COOKIE.0, MAGIC_COOKIE.1)
        .env("PLUGIN_PROTOCOL_VERSIONS", "6")
        .env("PLUGIN_CLIENT_CERT", client_cert)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", args.provider_bin.display()))?;
    let mut handshake = String::new();
    let read = BufReader::new(child.stdout.take().context("provider stdout")?).read_line(&mut handshake);
    std::thread::sleep(Duration::from_secs(1));
    let status = fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    read.context("reading the provider's handshake line")?;
    ensure!(handshake.starts_with("1|6|"), "the provider printed no go-plugin handshake: {handshake:?}");
    let field = |name: &str| -> Option<u64> {
        status.lines().find_map(|l| l.strip_prefix(name))?.split_whitespace().next()?.parse().ok()
    };
    let rss = field("VmRSS:").context("no VmRSS in /proc/<pid>/status")?;
    let hwm = field("VmHWM:").context("no VmHWM in /proc/<pid>/status")?;
    report.add(
        "binary",
        "RSS at idle (after handshake, 1 s)",
        format!("{:.1} MB (peak {:.1} MB)", rss as f64 / 1024.0, hwm as f64 / 1024.0),
        "",
        None,
    );
    Ok(())
}

/// 2. Status-wait latency: each run creates a `liqo_gateway` server; with `status-delay-ms` the simulator writes
///    `status.endpoint` well after the provider started watching, so the figure is the provider's reaction to
///    the status change plus Terraform's handling of the response, not a lucky early read.
async fn status_latency(args: &Args, ground: &Ground, report: &mut Report) -> Result<()> {
    let config = gateway_config(ground);
    let work = Workdir::new(args.cli, &config).await?;
    work.apply_with(&["-var", "on=false"]).await?;
    ground.set_fault(MILAN, "status-delay-ms", &args.status_delay_ms.to_string()).await?;
    // Let the simulator see the fault before the first run.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let log = ground.dir().join("logs/simulator.log");
    let mut latencies = Vec::new();
    for run in 0..args.status_runs {
        let offset = fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
        let applied = work.apply_with(&["-json", "-var", "on=true"]).await?;
        let complete = apply_complete(&applied.stdout, "liqo_gateway.server[0]").with_context(|| {
            format!("run {run}: no apply_complete for liqo_gateway.server[0] in the -json output:\n{}", applied.stdout)
        })?;
        let new_lines = read_from(&log, offset)?;
        let flip = first_endpoint_write(&new_lines, MILAN).with_context(|| {
            format!(
                "run {run}: the simulator log {} has no GatewayServer endpoint write for {MILAN} since the apply began",
                log.display()
            )
        })?;
        latencies.push(since_midnight_ms(complete) - flip);
        work.apply_with(&["-var", "on=false"]).await?;
    }
    ground.clear_faults(MILAN).await?;
    work.destroy().await?;

    latencies.sort_unstable();
    status_percentiles(report, "status wait", &latencies.iter().map(|&ms| ms as f64).collect::<Vec<_>>());
    report.notes.push(format!(
        "status-wait samples (ms, sorted; status-delay-ms={}): {:?}; flip instant = the simulator's log line after the \
         API server acknowledged the status write (ms resolution), end = `apply_complete` in the CLI's -json output",
        args.status_delay_ms, latencies
    ));
    Ok(())
}

/// The p50 and p99 rows, with their goals, of status-wait samples in ms (sorted).
fn status_percentiles(report: &mut Report, group: &'static str, sorted: &[f64]) {
    for (p, goal, limit) in [(50, "≤ 50 ms", 50.0), (99, "≤ 250 ms", 250.0)] {
        let value = percentile(sorted, f64::from(p) / 100.0);
        report.add(
            group,
            format!("status flip → apply step returns, p{p} (n={})", sorted.len()),
            format!("{value:.0} ms"),
            goal,
            Some(value <= limit),
        );
    }
}

/// Both clusters' `liqo_generate` and, with `-var on=true`, one `liqo_gateway` server on milan for rome: the
/// configuration of both status-wait parts.
fn gateway_config(ground: &Ground) -> String {
    format!(
        "{}\nvariable \"on\" {{\n  type    = bool\n  default = false\n}}\n\n\
         resource \"liqo_generate\" \"milan\" {{\n  provider          = liqo.milan\n  remote_cluster_id = \"{ROME}\"\n}}\n\n\
         resource \"liqo_generate\" \"rome\" {{\n  provider          = liqo.rome\n  remote_cluster_id = \"{MILAN}\"\n}}\n\n\
         resource \"liqo_gateway\" \"server\" {{\n  count                = var.on ? 1 : 0\n  provider             = liqo.milan\n  \
         tenant_namespace     = liqo_generate.milan.tenant_namespace\n  remote_cluster_id    = liqo_generate.rome.cluster_id\n  \
         remote_pod_cidrs     = liqo_generate.rome.pod_cidrs\n  remote_external_cidr = liqo_generate.rome.external_cidr\n  \
         remote_public_key    = liqo_generate.rome.wireguard_public_key\n  \
         server = {{\n    service_type = \"NodePort\"\n    port         = 51840\n  }}\n}}\n",
        tf::provider_config(ground)
    )
}

/// Timestamp of the `apply_complete` message of `address` in an `apply -json` output.
fn apply_complete(stdout: &str, address: &str) -> Option<OffsetDateTime> {
    hook_at(stdout, "apply_complete", address)
}

/// Timestamp of the first `kind` message (`apply_start`, `apply_complete`, …) of `address` in a `-json` output.
fn hook_at(stdout: &str, kind: &str, address: &str) -> Option<OffsetDateTime> {
    stdout.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).find_map(|m| {
        let is_it = m["type"] == kind && m["hook"]["resource"]["addr"] == address;
        is_it.then(|| OffsetDateTime::parse(m["@timestamp"].as_str()?, &Rfc3339).ok()).flatten()
    })
}

/// The `count` resources whose apply step (`apply_start` to `apply_complete`/`apply_errored`) took longest.
fn slowest(stdout: &str, count: usize) -> String {
    let mut started: BTreeMap<String, OffsetDateTime> = BTreeMap::new();
    let mut took: Vec<(Duration, String)> = Vec::new();
    for message in stdout.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()) {
        let (Some(addr), Some(at)) = (
            message["hook"]["resource"]["addr"].as_str(),
            message["@timestamp"].as_str().and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok()),
        ) else {
            continue;
        };
        match message["type"].as_str() {
            Some("apply_start") => {
                started.insert(addr.to_owned(), at);
            }
            Some("apply_complete" | "apply_errored") => {
                if let Some(start) = started.get(addr) {
                    took.push(((at - *start).try_into().unwrap_or_default(), addr.to_owned()));
                }
            }
            _ => {}
        }
    }
    took.sort_unstable_by(|a, b| b.cmp(a));
    took.iter().take(count).map(|(d, addr)| format!("{addr} {}", secs(*d))).collect::<Vec<_>>().join(", ")
}

fn read_from(path: &Path, offset: u64) -> Result<String> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(String::from_utf8_lossy(bytes.get(offset as usize..).unwrap_or_default()).into_owned())
}

/// Milliseconds since UTC midnight of the first `simulated liqo HH:MM:SS.mmm [cluster] GatewayServer …: endpoint`.
fn first_endpoint_write(lines: &str, cluster: &str) -> Option<i64> {
    let tag = format!("[{cluster}] GatewayServer ");
    let line = lines.lines().find(|l| l.contains(&tag) && l.contains(": endpoint "))?;
    let clock = line.strip_prefix("simulated liqo ")?.split_whitespace().next()?;
    let (hms, millis) = clock.split_once('.')?;
    let mut parts = hms.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
    Some(((h * 60 + m) * 60 + s) * 1000 + millis.parse::<i64>().ok()?)
}

/// The simulator logs UTC time of day; both clocks are this machine's.
fn since_midnight_ms(t: OffsetDateTime) -> i64 {
    let t = t.to_offset(time::UtcOffset::UTC);
    let (h, m, s, micro) = t.to_hms_micro();
    ((i64::from(h) * 60 + i64::from(m)) * 60 + i64::from(s)) * 1000 + i64::from(micro / 1000)
}

fn render(machine: &str, report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\nMachine: {machine}\n");
    let _ = writeln!(out, "| Group | Metric | Value | Goal | Met |");
    let _ = writeln!(out, "|---|---|---|---|---|");
    for f in &report.figures {
        let met = match f.met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "",
        };
        let _ = writeln!(out, "| {} | {} | {} | {} | {met} |", f.group, f.metric, f.value, f.goal);
    }
    for note in &report.notes {
        let _ = writeln!(out, "\n- {note}");
    }
    out
}

fn median(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    match sorted.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    }
}

/// Nearest-rank percentile of sorted samples.
fn percentile<T: Copy>(sorted: &[T], p: f64) -> T {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(f64::EPSILON)
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn mib(bytes: u64) -> String {
    format!("{bytes} B ({:.1} MiB)", bytes as f64 / 1024.0 / 1024.0)
}

fn list_ms(values: &[Duration]) -> String {
    values.iter().map(|d| format!("{:.0}", d.as_secs_f64() * 1000.0)).collect::<Vec<_>>().join(", ")
}

fn list_secs(values: &[Duration]) -> String {
    values.iter().map(|d| format!("{:.2}", d.as_secs_f64())).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_simulator_flip_and_the_cli_completion_on_one_clock() {
        let log = "simulated liqo 10:00:00.001 [rome] GatewayServer x/y: endpoint Some(..)\n\
                   simulated liqo 10:00:01.250 [milan] GatewayServer liqo-tenant-rome/rome: endpoint Some(..)\n";
        assert_eq!(first_endpoint_write(log, MILAN), Some(36_001_250));
        let json = r#"{"@timestamp":"2026-01-01T12:00:01.290123+02:00","type":"apply_complete","hook":{"resource":{"addr":"liqo_gateway.server[0]"}}}"#;
        let complete = apply_complete(json, "liqo_gateway.server[0]").expect("parsed");
        assert_eq!(since_midnight_ms(complete) - 36_001_250, 40);
        assert!(apply_complete(json, "liqo_gateway.client").is_none());
    }

    #[test]
    fn ranks_resources_by_the_duration_of_their_apply_step() {
        let line = |kind: &str, addr: &str, at: &str| {
            format!(
                r#"{{"@timestamp":"2026-01-01T10:00:{at}Z","type":"{kind}","hook":{{"resource":{{"addr":"{addr}"}}}}}}"#
            )
        };
        let out = [
            line("apply_start", "liqo_peer.this", "00.000000"),
            line("apply_start", "liqo_tenant.this", "00.100000"),
            line("apply_complete", "liqo_tenant.this", "00.300000"),
            line("apply_errored", "liqo_peer.this", "01.500000"),
        ]
        .join("\n");
        assert_eq!(slowest(&out, 5), "liqo_peer.this 1.50 s, liqo_tenant.this 0.20 s");
    }

    #[test]
    fn nearest_rank_percentiles_and_medians() {
        let samples = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
        assert_eq!(percentile(&samples, 0.5), 5);
        assert_eq!(percentile(&samples, 0.99), 10);
        let d = |ms| Duration::from_millis(ms);
        assert_eq!(median(&[d(3), d(1), d(2), d(10)]), d(2) + d(500) / 1000);
    }
}
