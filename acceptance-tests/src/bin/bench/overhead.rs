//! 1. Provider overhead: `plan` of a configuration with one `liqo_cluster` data source vs. the same CLI with no
//!    provider, runs interleaved so that both sides see the same machine load; then where the difference goes.
//!
//! The tests' mirror serves the bench's `/bin/sh` wrapper (for peak RSS), a file of a few hundred bytes. The CLI
//! hashes the installed package against the lock file on every command, so the bench also plans the same
//! configuration installed from a mirror that holds the release binary itself, as users install it.
//!
//! The split has two sources:
//! - the same configuration with the wrapper installed through `dev_overrides` instead of the mirror: the CLI
//!   then skips the package check altogether;
//! - `TF_LOG=trace` runs of the measured configuration, whose timestamps (ms) give each provider process's
//!   lifetime, the `ReadDataSource` call and the package check.
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use liqo_acceptance::ground::{Ground, MILAN};
use liqo_acceptance::tf::{self, Cli, Workdir, mirror};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use liqo_schema::liqo::labels;

use super::manifest::KUBERNETES_PROVIDER_VERSION;
use super::{Report, WRAPPER, list_ms, median, ms, ratio};

/// Traced runs of the configuration with the data source; each component's median is reported.
const TRACED_RUNS: usize = 5;

pub async fn plan_overhead(args: &super::Args, ground: &Ground, wrapper_dir: &Path, report: &mut Report) -> Result<()> {
    let baseline_tf = "output \"cluster_id\" {\n  value = \"milan\"\n}\n";
    let provider_tf = format!(
        "{}\nprovider \"liqo\" {{\n  kubernetes = {{\n    config_path    = \"{}\"\n    config_context = \"{MILAN}\"\n  }}\n}}\n\n\
         data \"liqo_cluster\" \"this\" {{}}\n\noutput \"cluster_id\" {{\n  value = data.liqo_cluster.this.cluster_id\n}}\n",
        tf::required_providers(),
        ground.kubeconfig(MILAN).display()
    );
    let cli = args.cli;
    let mirror_config = mirror::get()?.cli_config.clone();
    let baseline = Workdir::new(cli, baseline_tf).await?;
    let with_provider = Workdir::new(cli, &provider_tf).await?;
    let overridden = DevOverrides::new(wrapper_dir, &provider_tf)?;
    let as_shipped = ShippedBinary::new(
        cli,
        &Package {
            binary: &args.provider_bin,
            name: "terraform-provider-liqo",
            version: tf::PROVIDER_VERSION,
            addresses: ["registry.terraform.io/liqotech/liqo", "registry.opentofu.org/liqotech/liqo"],
        },
        &provider_tf,
    )?;
    // The ecosystem's reference, when the bench has it: hashicorp/kubernetes reading one object of the same
    // cluster, installed the same way. Its trace split shows which part of the overhead any provider pays.
    let reference = match &args.kubernetes_provider_bin {
        Some(binary) => Some(ShippedBinary::new(
            cli,
            &Package {
                binary,
                name: "terraform-provider-kubernetes",
                version: KUBERNETES_PROVIDER_VERSION,
                addresses: ["registry.terraform.io/hashicorp/kubernetes", "registry.opentofu.org/hashicorp/kubernetes"],
            },
            &reference_tf(ground.kubeconfig(MILAN)),
        )?),
        None => None,
    };

    let (mut base, mut ours, mut dev, mut shipped, mut other) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // One unmeasured warm-up each (page cache, the API server's first discovery).
    timed_plan(cli, &baseline.path(), &mirror_config, &[]).await?;
    timed_plan(cli, &with_provider.path(), &mirror_config, &[]).await?;
    timed_plan(cli, overridden.path(), &overridden.cli_config, &[]).await?;
    timed_plan(cli, &as_shipped.config, &as_shipped.cli_config, &[]).await?;
    if let Some(r) = &reference {
        timed_plan(cli, &r.config, &r.cli_config, &[]).await?;
    }
    for _ in 0..args.plan_runs {
        base.push(timed_plan(cli, &baseline.path(), &mirror_config, &[]).await?);
        ours.push(timed_plan(cli, &with_provider.path(), &mirror_config, &[]).await?);
        dev.push(timed_plan(cli, overridden.path(), &overridden.cli_config, &[]).await?);
        shipped.push(timed_plan(cli, &as_shipped.config, &as_shipped.cli_config, &[]).await?);
        if let Some(r) = &reference {
            other.push(timed_plan(cli, &r.config, &r.cli_config, &[]).await?);
        }
    }
    let (b, o, d, u) = (median(&base), median(&ours), median(&dev), median(&shipped));
    let overhead = o.saturating_sub(b);
    report.add("overhead", format!("`{cli} plan`, no provider (median of {})", base.len()), ms(b), "", None);
    report.add(
        "overhead",
        format!("`{cli} plan`, 1 `liqo_cluster` data source (median of {})", ours.len()),
        ms(o),
        "",
        None,
    );
    report.add(
        "overhead",
        "provider overhead, wrapper in the mirror (difference of medians)",
        format!("+{} ({:.2}×)", ms(overhead), ratio(o, b)),
        "≤ +40 ms",
        Some(overhead <= Duration::from_millis(40)),
    );
    let user_overhead = u.saturating_sub(b);
    report.add(
        "overhead",
        format!("provider overhead, release binary in the mirror as users install it (median of {})", shipped.len()),
        format!("+{} ({:.2}×)", ms(user_overhead), ratio(u, b)),
        "≤ +40 ms",
        Some(user_overhead <= Duration::from_millis(40)),
    );
    report.add(
        "overhead",
        format!("same plan, provider via `dev_overrides` (no package check; median of {})", dev.len()),
        format!("{} (+{} over no provider)", ms(d), ms(d.saturating_sub(b))),
        "",
        None,
    );
    report.add(
        "overhead",
        "the CLI's check of the installed package: wrapper (mirror − dev_overrides) / release binary (vs. wrapper)",
        format!("{} / {}", ms(o.saturating_sub(d)), ms(u.saturating_sub(o))),
        "",
        None,
    );
    if !other.is_empty() {
        let r = median(&other);
        report.add(
            "overhead",
            format!(
                "reference: hashicorp/kubernetes {KUBERNETES_PROVIDER_VERSION} from a mirror, 1 \
                 `kubernetes_config_map_v1` data source of the same cluster (median of {})",
                other.len()
            ),
            format!("+{} ({:.2}×)", ms(r.saturating_sub(b)), ratio(r, b)),
            "",
            None,
        );
    }
    report.notes.push(format!(
        "overhead runs (ms), no provider: {}; wrapper from the mirror: {}; wrapper via dev_overrides: {}; release \
         binary from the mirror: {}; hashicorp/kubernetes from the mirror: {}",
        list_ms(&base),
        list_ms(&ours),
        list_ms(&dev),
        list_ms(&shipped),
        if other.is_empty() { "not run (no --kubernetes-provider-bin)".to_owned() } else { list_ms(&other) }
    ));

    let splits = traced_plans(cli, &with_provider.path(), &mirror_config).await?;
    report.notes.push(format!("overhead split (liqo, wrapper in the mirror): {}", TraceSplit::summary(&splits)));
    report.add(
        "overhead",
        "of which the CLI starting the provider processes (client certificate + exec → handshake + dial, sums of the \
         traced medians)",
        ms(TraceSplit::startup_total(&splits)),
        "",
        None,
    );
    if let Some(r) = &reference {
        let splits = traced_plans(cli, &r.config, &r.cli_config).await?;
        report.notes.push(format!("overhead split (hashicorp/kubernetes): {}", TraceSplit::summary(&splits)));
        report.add(
            "overhead",
            "reference: the same start-up steps for hashicorp/kubernetes",
            ms(TraceSplit::startup_total(&splits)),
            "",
            None,
        );
    }

    // The wrapper adds one /bin/sh start to every provider process of the bench; measured so it can be discounted.
    let wrapper = wrapper_dir.join(WRAPPER);
    let (mut direct, mut wrapped) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        direct.push(time_process(Command::new(&args.provider_bin))?);
        wrapped.push(time_process(Command::new(&wrapper))?);
    }
    let cost = median(&wrapped).saturating_sub(median(&direct));
    report.notes.push(format!(
        "the bench installs the provider through a /bin/sh wrapper (for peak RSS); its cost per provider process, \
         median of 20: {} — included in the overhead figures above",
        ms(cost)
    ));
    Ok(())
}

/// [`TRACED_RUNS`] plans of the configuration in `dir` with `TF_LOG=trace`, each split by its log's timestamps.
async fn traced_plans(cli: Cli, dir: &Path, cli_config: &Path) -> Result<Vec<TraceSplit>> {
    let mut splits = Vec::new();
    for run in 0..TRACED_RUNS {
        let log = dir.join(format!("trace-{run}.log"));
        let log_path = log.display().to_string();
        let env = [("TF_LOG", "trace"), ("TF_LOG_PATH", log_path.as_str())];
        timed_plan(cli, dir, cli_config, &env).await?;
        let text = std::fs::read_to_string(&log).with_context(|| format!("reading {}", log.display()))?;
        splits.push(TraceSplit::parse(&text).with_context(|| format!("trace {}", log.display()))?);
    }
    Ok(splits)
}

/// hashicorp/kubernetes reading Liqo's cluster-ID ConfigMap: one object of the cluster `liqo_cluster` reads
/// (which reads three).
fn reference_tf(kubeconfig: &Path) -> String {
    format!(
        "terraform {{\n  required_providers {{\n    kubernetes = {{\n      source  = \"hashicorp/kubernetes\"\n      \
         version = \"{KUBERNETES_PROVIDER_VERSION}\"\n    }}\n  }}\n}}\n\nprovider \"kubernetes\" {{\n  config_path    = \
         \"{}\"\n  config_context = \"{MILAN}\"\n}}\n\ndata \"kubernetes_config_map_v1\" \"cluster_id\" {{\n  metadata {{\n    \
         name      = \"{}\"\n    namespace = \"{}\"\n  }}\n}}\n\noutput \"cluster_id\" {{\n  value = \
         data.kubernetes_config_map_v1.cluster_id.data[\"{}\"]\n}}\n",
        kubeconfig.display(),
        labels::CLUSTER_ID_CONFIGMAP,
        labels::DEFAULT_LIQO_NAMESPACE,
        labels::CLUSTER_ID_KEY,
    )
}

/// A root module whose `liqotech/liqo` comes from `dev_overrides` (the wrapper's directory): no `init`, no lock
/// file, so no package check. Removed on drop.
struct DevOverrides {
    /// Keeps the directory alive (removed on drop).
    _dir: tempfile::TempDir,
    config: PathBuf,
    cli_config: PathBuf,
}

impl DevOverrides {
    fn new(wrapper_dir: &Path, main_tf: &str) -> Result<DevOverrides> {
        let dir = tempfile::Builder::new().prefix("bench-dev-overrides-").tempdir()?;
        let config = dir.path().join("config");
        std::fs::create_dir_all(&config)?;
        std::fs::write(config.join("main.tf"), main_tf)?;
        let cli_config = dir.path().join("cli.tfrc");
        std::fs::write(
            &cli_config,
            format!(
                "provider_installation {{\n  dev_overrides {{\n    \"{}\" = \"{}\"\n  }}\n  direct {{}}\n}}\n",
                tf::PROVIDER_SOURCE,
                wrapper_dir.display()
            ),
        )?;
        Ok(DevOverrides { _dir: dir, config, cli_config })
    }

    fn path(&self) -> &Path {
        &self.config
    }
}

/// What a filesystem mirror serves: one provider binary under its registry addresses (Terraform's and OpenTofu's).
struct Package<'a> {
    binary: &'a Path,
    /// `terraform-provider-<type>`; the mirror names the file `<name>_v<version>`.
    name: &'a str,
    version: &'a str,
    addresses: [&'a str; 2],
}

/// A root module whose provider is a binary from an unpacked filesystem mirror (the layout `terraform providers
/// mirror` writes), initialised once, as users install it. Removed on drop.
struct ShippedBinary {
    _dir: tempfile::TempDir,
    config: PathBuf,
    cli_config: PathBuf,
}

impl ShippedBinary {
    fn new(cli: Cli, package: &Package, main_tf: &str) -> Result<ShippedBinary> {
        let dir = tempfile::Builder::new().prefix("bench-shipped-").tempdir()?;
        let mirror = dir.path().join("mirror");
        let addresses = package.addresses;
        for address in addresses {
            let target = mirror.join(address).join(package.version).join("linux_amd64");
            std::fs::create_dir_all(&target)?;
            std::fs::copy(package.binary, target.join(format!("{}_v{}", package.name, package.version)))
                .with_context(|| format!("copying {} into the mirror", package.binary.display()))?;
        }
        let cli_config = dir.path().join("cli.tfrc");
        let include = addresses.map(|a| format!("\"{a}\"")).join(", ");
        std::fs::write(
            &cli_config,
            format!(
                "provider_installation {{\n  filesystem_mirror {{\n    path    = \"{}\"\n    include = [{include}]\n  }}\n}}\n",
                mirror.display()
            ),
        )?;
        let config = dir.path().join("config");
        std::fs::create_dir_all(&config)?;
        std::fs::write(config.join("main.tf"), main_tf)?;
        let init = Command::new(cli.program()?)
            .args(["init", "-input=false", "-no-color"])
            .current_dir(&config)
            .env("TF_CLI_CONFIG_FILE", &cli_config)
            .env("TOFU_CLI_CONFIG_FILE", &cli_config)
            .env("CHECKPOINT_DISABLE", "1")
            .stdin(Stdio::null())
            .output()?;
        if !init.status.success() {
            bail!(
                "init with the mirror of {} failed:\n{}",
                package.binary.display(),
                String::from_utf8_lossy(&init.stderr)
            );
        }
        Ok(ShippedBinary { _dir: dir, config, cli_config })
    }
}

/// Where one traced `plan` spent its time, from the CLI's log timestamps (millisecond resolution).
#[derive(Debug, PartialEq)]
struct TraceSplit {
    total: Duration,
    /// After the CLI found the installed package until its next log line: hashing it against the lock file.
    package_check: Option<Duration>,
    /// `starting plugin` → `plugin process exited`, per provider process, in start order.
    processes: Vec<Duration>,
    /// Per provider process, in start order, the CLI's and the provider's steps before the first RPC (below).
    startups: Vec<Startup>,
    /// `ReadDataSource` request → the CLI writes the data source's state.
    read_data_source: Option<Duration>,
}

/// The steps from the CLI deciding to start a provider process to its first RPC, from go-plugin's log lines.
#[derive(Debug, PartialEq, Default, Clone, Copy)]
struct Startup {
    /// `configuring client automatic mTLS` → `starting plugin`: the CLI generates its P-521 client certificate
    /// (go-plugin's AutoMTLS, one per process, whatever the provider).
    client_certificate: Option<Duration>,
    /// `starting plugin` → `using plugin`: exec, the provider's start and its handshake line on stdout.
    handshake: Option<Duration>,
    /// `using plugin` → the first `GRPCProvider.v6:` call: the CLI's gRPC dial with TLS 1.3 and mutual
    /// certificates (go-plugin dials blocking).
    dial: Option<Duration>,
}

/// The RPC a `GRPCProvider` log line of the CLI names: `GRPCProvider.v6: X` (protocol 6, this provider) or
/// `GRPCProvider: X` (protocol 5, e.g. hashicorp/kubernetes).
fn grpc_call(line: &str) -> Option<&str> {
    let (_, rest) = line.split_once("GRPCProvider.v6: ").or_else(|| line.split_once("GRPCProvider: "))?;
    rest.split_whitespace().next()
}

impl TraceSplit {
    fn parse(log: &str) -> Result<TraceSplit> {
        let lines: Vec<(OffsetDateTime, &str)> = log
            .lines()
            .filter_map(|l| {
                let stamp = l.get(..24)?;
                Some((OffsetDateTime::parse(stamp, &Rfc3339).ok()?, l.get(24..).unwrap_or_default()))
            })
            .collect();
        let (Some(first), Some(last)) = (lines.first(), lines.last()) else { bail!("no timestamped lines") };
        let between = |a: OffsetDateTime, b: OffsetDateTime| -> Duration { (b - a).try_into().unwrap_or_default() };
        let after = |k: usize| lines.get(k + 1).map(|(t, _)| between(lines[k].0, *t));

        let package_check =
            lines.iter().rposition(|(_, l)| l.contains("providercache.fillMetaCache: including")).and_then(after);
        let mut processes = Vec::new();
        let mut startups = Vec::new();
        let mut started: Option<OffsetDateTime> = None;
        // The steps of the process being started: mTLS line, start, handshake, first RPC.
        let (mut mtls, mut used, mut step) = (None, None, Startup::default());
        for (t, l) in &lines {
            if l.contains("provider: configuring client automatic mTLS") {
                mtls = Some(*t);
            } else if l.contains("provider: starting plugin:") {
                started = Some(*t);
                step = Startup { client_certificate: mtls.take().map(|m| between(m, *t)), ..Startup::default() };
            } else if l.contains("provider: using plugin:")
                && let Some(s) = started
            {
                used = Some(*t);
                step.handshake = Some(between(s, *t));
            } else if grpc_call(l).is_some()
                && let Some(u) = used.take()
            {
                step.dial = Some(between(u, *t));
                startups.push(step);
            } else if l.contains("provider: plugin process exited")
                && let Some(s) = started.take()
            {
                processes.push(between(s, *t));
            }
        }
        let read_data_source = lines.iter().position(|(_, l)| grpc_call(l) == Some("ReadDataSource")).and_then(|k| {
            let done = lines[k..].iter().find(|(_, l)| l.contains("writeResourceInstanceState"))?;
            Some(between(lines[k].0, done.0))
        });
        Ok(TraceSplit { total: between(first.0, last.0), package_check, processes, startups, read_data_source })
    }

    /// One start-up step's median over `splits`, per provider process in start order (as many as the first split
    /// has); `None` where no split logged that step.
    fn startup_medians(splits: &[TraceSplit], pick: fn(&Startup) -> Option<Duration>) -> Vec<Option<Duration>> {
        let counted = splits.first().map(|s| s.startups.len()).unwrap_or(0);
        (0..counted)
            .map(|k| {
                let values: Vec<Duration> = splits.iter().filter_map(|s| s.startups.get(k).and_then(pick)).collect();
                (!values.is_empty()).then(|| median(&values))
            })
            .collect()
    }

    /// The CLI's start-up of every provider process (client certificate, exec → handshake, dial), summed over
    /// the processes of a plan, each step the median over `splits`.
    fn startup_total(splits: &[TraceSplit]) -> Duration {
        [|s: &Startup| s.client_certificate, |s: &Startup| s.handshake, |s: &Startup| s.dial]
            .into_iter()
            .flat_map(|pick| Self::startup_medians(splits, pick))
            .flatten()
            .sum()
    }

    fn summary(splits: &[TraceSplit]) -> String {
        let med = |pick: &dyn Fn(&TraceSplit) -> Option<Duration>| -> String {
            let values: Vec<Duration> = splits.iter().filter_map(pick).collect();
            if values.is_empty() { "not in the log".to_owned() } else { ms(median(&values)) }
        };
        let count = splits.first().map(|s| s.processes.len()).unwrap_or(0);
        let per_process: Vec<String> = (0..count).map(|k| med(&|s: &TraceSplit| s.processes.get(k).copied())).collect();
        let step = |pick: fn(&Startup) -> Option<Duration>| -> String {
            Self::startup_medians(splits, pick)
                .into_iter()
                .map(|m| m.map(ms).unwrap_or_else(|| "not in the log".to_owned()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "medians of {} `TF_LOG=trace` plans (trace logging slows the CLI itself): whole plan {}; \
             package check of the installed binary {}; {count} provider processes, start → exit: {}; per process, the \
             CLI's P-521 client certificate (mTLS → start): {}; exec → handshake line: {}; the CLI's gRPC/TLS dial \
             → first RPC: {}; ReadDataSource (kube client, TLS to the API server, reads) {}",
            splits.len(),
            med(&|s: &TraceSplit| Some(s.total)),
            med(&|s: &TraceSplit| s.package_check),
            per_process.join(", "),
            step(|s| s.client_certificate),
            step(|s| s.handshake),
            step(|s| s.dial),
            med(&|s: &TraceSplit| s.read_data_source),
        )
    }
}

/// One `plan` (with extra environment), timed from process start to exit; it must succeed.
pub async fn timed_plan(cli: Cli, dir: &Path, cli_config: &Path, env: &[(&str, &str)]) -> Result<Duration> {
    let mut command = Command::new(cli.program()?);
    command
        .args(["plan", "-input=false", "-no-color", "-lock=false"])
        .current_dir(dir)
        .env("TF_CLI_CONFIG_FILE", cli_config)
        .env("TOFU_CLI_CONFIG_FILE", cli_config)
        .env("TF_IN_AUTOMATION", "1")
        .env("CHECKPOINT_DISABLE", "1")
        .env_remove("TF_LOG")
        .env_remove("TF_CLI_ARGS")
        .env_remove("TF_PLUGIN_CACHE_DIR");
    for (key, value) in env {
        command.env(key, value);
    }
    let dir = dir.display().to_string();
    tokio::task::spawn_blocking(move || time_process(command)).await?.with_context(|| format!("plan in {dir}"))
}

/// Wall time of one process; for `plan` it must succeed (the provider's own usage message exits 1 by design).
pub fn time_process(mut command: Command) -> Result<Duration> {
    let started = Instant::now();
    let output = command.stdin(Stdio::null()).output().context("starting the command")?;
    let elapsed = started.elapsed();
    let is_plan = command.get_args().next().is_some_and(|a| a == "plan");
    if is_plan && !output.status.success() {
        bail!(
            "{:?} failed ({}):\n{}{}",
            command,
            output.status,
            String::from_utf8_lossy(&output.stderr),
            String::from_utf8_lossy(&output.stdout)
        );
    }
    Ok(elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_a_plan_trace_into_package_check_processes_and_the_data_source_read() {
        let log = "2026-11-22T02:43:27.414Z [INFO]  Terraform version: 1.11.4\n\
                   2026-11-22T02:43:27.417Z [TRACE] providercache.fillMetaCache: including .terraform/providers/x as a candidate\n\
                   2026-11-22T02:43:27.476Z [DEBUG] checking for provisioner in \".\"\n\
                   2026-11-22T02:43:27.477Z [INFO]  provider: configuring client automatic mTLS\n\
                   2026-11-22T02:43:27.480Z [DEBUG] provider: starting plugin: path=x\n\
                   2026-11-22T02:43:27.482Z [DEBUG] provider: using plugin: version=6\n\
                   2026-11-22T02:43:27.486Z [TRACE] GRPCProvider.v6: GetProviderSchema\n\
                   2026-11-22T02:43:27.490Z [INFO]  provider: plugin process exited: plugin=x id=1\n\
                   2026-11-22T02:43:27.500Z [DEBUG] provider: starting plugin: path=x\n\
                   2026-11-22T02:43:27.505Z [TRACE] GRPCProvider.v6: ReadDataSource\n\
                   continuation line without a timestamp\n\
                   2026-11-22T02:43:27.514Z [TRACE] NodeAbstractResouceInstance.writeResourceInstanceState to refreshState\n\
                   2026-11-22T02:43:27.523Z [INFO]  provider: plugin process exited: plugin=x id=2\n\
                   2026-11-22T02:43:27.530Z [TRACE] statemgr.Filesystem: unlocking terraform.tfstate\n";
        let split = TraceSplit::parse(log).unwrap();
        let d = Duration::from_millis;
        assert_eq!(
            split,
            TraceSplit {
                total: d(116),
                package_check: Some(d(59)),
                processes: vec![d(10), d(23)],
                startups: vec![Startup { client_certificate: Some(d(3)), handshake: Some(d(2)), dial: Some(d(4)) }],
                read_data_source: Some(d(9)),
            }
        );
        let summary = TraceSplit::summary(&[split]);
        assert!(summary.contains("package check of the installed binary 59 ms"), "{summary}");
        assert!(summary.contains("P-521 client certificate (mTLS → start): 3 ms"), "{summary}");
        assert_eq!(TraceSplit::startup_total(&[split_of(log)]), d(9));
    }

    fn split_of(log: &str) -> TraceSplit {
        TraceSplit::parse(log).unwrap()
    }

    #[test]
    fn protocol_5_calls_count_as_the_first_rpc_and_startups_add_up_over_processes() {
        // hashicorp/kubernetes speaks protocol 5: the CLI logs `GRPCProvider: …` without `.v6`.
        let log = "2026-11-22T02:43:27.400Z [INFO]  provider: configuring client automatic mTLS\n\
                   2026-11-22T02:43:27.407Z [DEBUG] provider: starting plugin: path=k\n\
                   2026-11-22T02:43:27.412Z [DEBUG] provider: using plugin: version=5\n\
                   2026-11-22T02:43:27.416Z [TRACE] GRPCProvider: GetProviderSchema\n\
                   2026-11-22T02:43:27.430Z [INFO]  provider: plugin process exited: plugin=k id=1\n\
                   2026-11-22T02:43:27.431Z [INFO]  provider: configuring client automatic mTLS\n\
                   2026-11-22T02:43:27.434Z [DEBUG] provider: starting plugin: path=k\n\
                   2026-11-22T02:43:27.438Z [DEBUG] provider: using plugin: version=5\n\
                   2026-11-22T02:43:27.441Z [TRACE] GRPCProvider: ReadDataSource\n\
                   2026-11-22T02:43:27.452Z [TRACE] NodeAbstractResouceInstance.writeResourceInstanceState to refreshState\n\
                   2026-11-22T02:43:27.460Z [INFO]  provider: plugin process exited: plugin=k id=2\n";
        let split = split_of(log);
        let d = Duration::from_millis;
        assert_eq!(split.startups.len(), 2);
        assert_eq!(split.read_data_source, Some(d(11)));
        // (7 + 5 + 4) + (3 + 4 + 3)
        assert_eq!(TraceSplit::startup_total(&[split]), d(26));
    }
}
