//! Running real Terraform and OpenTofu against the ground, with the provider installed from a filesystem
//! mirror of its release archive.
//!
//! ```no_run
//! # async fn example() -> anyhow::Result<()> {
//! use liqo_acceptance::{Ground, tf::{self, Cli, Workdir}};
//! let ground = Ground::shared();
//! for cli in Cli::available() {   // Terraform 1.16.4 and OpenTofu 1.11.7, pinned
//!     let config = format!("{}\nresource \"liqo_generate\" \"rome\" {{ provider = liqo.milan, remote_cluster_id = \"rome\" }}\n",
//!         tf::provider_config(ground));
//!     let work = Workdir::new(cli, &config).await?;   // writes main.tf, runs init
//!     work.apply().await?;
//!     assert!(work.plan().await?.is_empty(), "a second plan must be empty");
//!     work.destroy().await?;
//! }
//! # Ok(()) }
//! ```
pub mod assignment;
mod counting;
pub mod mirror;

use std::fmt;
use std::fs::File;
use std::path::PathBuf;
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tempfile::TempDir;

use crate::ground::{Ground, LiqoMode, Upstream, pool, process};
pub use counting::CountingApiServer;
pub use mirror::{PROVIDER_SOURCE, PROVIDER_VERSION};

/// A single Terraform command may not take longer than this (the provider's own timeouts are shorter).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// Which command-line client runs the configuration. Each is pinned and built from its Go module by
/// `scripts/build-upstream.sh` into the ground's cache; a `terraform` or `tofu` on PATH is never used, so every
/// machine proves the same versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cli {
    /// Terraform 1.16.4, the newest release: the whole suite.
    Terraform,
    /// Terraform 1.0.11: protocol 6 arrived in 1.0, so it is the oldest Terraform line that can load the
    /// provider (what is proved with it: README, "Supported versions").
    Terraform10,
    /// OpenTofu 1.11.7, the newest release: the whole suite.
    OpenTofu,
    /// Terraform 1.16.4 built with its experiments allowed, the one Terraform CLI that takes `-allow-deferral`
    /// (HCP Terraform Stacks always allows deferral): the deferral path of `tests/one_run.rs`.
    TerraformExperiments,
}

impl Cli {
    /// The clients a test runs with: Terraform 1.16.4 and OpenTofu 1.11.7; for a real-Liqo test in a run of each
    /// scenario once (`LIQO_TEST_MATRIX=one`), the ones [`assignment`] gives it. `LIQO_TEST_CLIENTS` (names,
    /// comma-separated: `terraform`, `terraform10`, `tofu`) replaces either, so CI can give a client a job of its own.
    ///
    /// Terraform 1.0 is not in the default list: some tests use language features of later releases
    /// (`terraform_data`, postconditions). The tests that hold on it use [`Cli::all`].
    pub fn available() -> Vec<Cli> {
        named_clients().unwrap_or_else(|| assignment::clients_for_current_test(vec![Cli::Terraform, Cli::OpenTofu]))
    }

    /// [`Cli::available`] plus Terraform 1.0.11, the oldest client line the provider supports; the assignment and
    /// `LIQO_TEST_CLIENTS` still decide when they apply.
    pub fn all() -> Vec<Cli> {
        named_clients().unwrap_or_else(|| {
            assignment::clients_for_current_test(vec![Cli::Terraform, Cli::Terraform10, Cli::OpenTofu])
        })
    }

    /// A short name, also used in Kubernetes object names (so a DNS label: no dots).
    pub fn name(self) -> &'static str {
        match self {
            Cli::Terraform => "terraform",
            Cli::Terraform10 => "terraform10",
            Cli::OpenTofu => "tofu",
            Cli::TerraformExperiments => "terraform-experiments",
        }
    }

    pub fn program(self) -> Result<PathBuf> {
        let upstream = Upstream::locate()?;
        Ok(match self {
            Cli::Terraform => upstream.terraform,
            Cli::Terraform10 => upstream.terraform_1_0,
            Cli::OpenTofu => upstream.tofu,
            Cli::TerraformExperiments => upstream.terraform_experiments,
        })
    }

    /// The registry a bare `source = "liqotech/liqo"` resolves to, i.e. the host part of the provider address
    /// in the lock file, in `providers schema -json` and in `TF_REATTACH_PROVIDERS`.
    pub fn registry_host(self) -> &'static str {
        match self {
            Cli::Terraform | Cli::Terraform10 | Cli::TerraformExperiments => "registry.terraform.io",
            Cli::OpenTofu => "registry.opentofu.org",
        }
    }

    /// `terraform version` / `tofu version`, first line (e.g. `Terraform v1.16.4`).
    pub fn version(self) -> Result<String> {
        // A CLI configuration file named in the environment but absent would make it warn first.
        let output = Command::new(self.program()?)
            .arg("version")
            .env("CHECKPOINT_DISABLE", "1")
            .env_remove("TF_CLI_CONFIG_FILE")
            .env_remove("TOFU_CLI_CONFIG_FILE")
            .output()?;
        Ok(String::from_utf8_lossy(&output.stdout).lines().next().unwrap_or_default().to_owned())
    }
}

impl fmt::Display for Cli {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The clients `LIQO_TEST_CLIENTS` names, if set.
fn named_clients() -> Option<Vec<Cli>> {
    let wanted = std::env::var("LIQO_TEST_CLIENTS").ok().filter(|v| !v.trim().is_empty())?;
    let all = [Cli::Terraform, Cli::Terraform10, Cli::OpenTofu, Cli::TerraformExperiments];
    let clis = wanted
        .split(',')
        .map(str::trim)
        .map(|name| {
            all.into_iter().find(|cli| cli.name() == name).unwrap_or_else(|| {
                panic!(
                    "LIQO_TEST_CLIENTS names {name:?}; known clients: terraform, terraform10, tofu, terraform-experiments"
                )
            })
        })
        .collect();
    Some(clis)
}

/// Appends `<client>\t<file>::<test>\t<lane>` to the file `LIQO_CLIENT_LEDGER` names (the test command sets it),
/// so that its summary can say how many tests each client ran and which client ran each real-Liqo scenario. The
/// lane is `LIQO_TEST_LANE` (`real` or `light`, set by `scripts/run-tests.py`).
fn record_use(cli: Cli) {
    let (file, test) = assignment::current_test();
    let lane = std::env::var("LIQO_TEST_LANE").unwrap_or_default();
    let line = format!("{}\t{file}::{test}\t{lane}\n", cli.name());
    crate::session::append_to_ledger("LIQO_CLIENT_LEDGER", &line, "the client");
}

/// Runs `run` once per client, all at once, each on a milan + rome ground of its own: the first client on
/// [`Ground::shared`] (so `LIQO_TEST_GROUND` reaches it), every other on a real-Liqo ground of its own (from the
/// test command's pool, else started for it: see [`crate::ground::pool`]). A test that builds the peering between
/// milan and rome cannot run two clients on one ground at the same time, and one after the other they were most of the test command's time. Fails with every
/// client's error, each named by its client.
pub async fn each_client_on_own_ground<F>(clients: Vec<Cli>, run: F) -> Result<()>
where
    F: for<'g> Fn(&'g Ground, Cli) -> futures::future::BoxFuture<'g, Result<()>>,
{
    let Some((&first, others)) = clients.split_first() else { return Ok(()) };
    let started = futures::future::join_all(others.iter().map(|_| pool::milan_rome(LiqoMode::real()))).await;
    let owned = started.into_iter().collect::<Result<Vec<Ground>>>()?;
    let grounds = std::iter::once(Ground::shared()).chain(owned.iter());
    let clients = std::iter::once(first).chain(others.iter().copied());
    each_client(clients.zip(grounds).map(|(cli, ground)| (cli, run(ground, cli)))).await.map(drop)
}

/// Runs every client's future side by side and waits for all of them, even after one failed, so that every
/// client's failure is reported (each "with <client>"), not only the first one's. The results come in order.
pub async fn each_client<T>(runs: impl IntoIterator<Item = (Cli, impl Future<Output = Result<T>>)>) -> Result<Vec<T>> {
    let runs = runs.into_iter().map(|(cli, run)| async move { run.await.with_context(|| format!("with {cli}")) });
    let (mut done, mut errors) = (Vec::new(), Vec::new());
    for result in futures::future::join_all(runs).await {
        match result {
            Ok(value) => done.push(value),
            Err(err) => errors.push(format!("{err:#}")),
        }
    }
    anyhow::ensure!(errors.is_empty(), "{}", errors.join("\n\n"));
    Ok(done)
}

/// `terraform { required_providers { liqo = { source = "liqotech/liqo", version = <this version> } } }`.
pub fn required_providers() -> String {
    format!(
        "terraform {{\n  required_providers {{\n    liqo = {{\n      source  = \"{PROVIDER_SOURCE}\"\n      \
         version = \"{PROVIDER_VERSION}\"\n    }}\n  }}\n}}\n"
    )
}

/// [`required_providers`] and one `provider "liqo"` block per ground cluster, aliased by the
/// cluster's name and pointing at its admin kubeconfig.
pub fn provider_config(ground: &Ground) -> String {
    let mut hcl = required_providers();
    for cluster in ground.clusters() {
        hcl.push_str(&format!(
            "\nprovider \"liqo\" {{\n  alias      = \"{name}\"\n  kubernetes = {{\n    config_path    = \"{path}\"\n    \
             config_context = \"{name}\"\n  }}\n}}\n",
            name = cluster.name,
            path = cluster.kubeconfig.display()
        ));
    }
    hcl
}

/// What one command printed and how it ended.
#[derive(Debug)]
pub struct Run {
    /// e.g. `tofu apply -auto-approve …`
    pub command: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
    /// CPU time of the command and the processes it waited for (a CLI's provider processes); `None` where not
    /// measured.
    pub cpu: Option<Duration>,
}

impl Run {
    pub fn success(&self) -> bool {
        self.status.success()
    }

    fn into_result(self) -> Result<Run> {
        if self.success() { Ok(self) } else { bail!("{self}") }
    }
}

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` ended with {} after {:.1}s\n--- stderr ---\n{}\n--- stdout ---\n{}",
            self.command,
            self.status,
            self.duration.as_secs_f64(),
            self.stderr.trim_end(),
            self.stdout.trim_end()
        )
    }
}

/// Result of `plan -detailed-exitcode`.
#[derive(Debug)]
pub enum Plan {
    /// Exit code 0: infrastructure matches the configuration.
    NoChanges(Run),
    /// Exit code 2: the plan has changes (shown in `stdout`).
    Changes(Run),
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        matches!(self, Plan::NoChanges(_))
    }

    pub fn run(&self) -> &Run {
        match self {
            Plan::NoChanges(run) | Plan::Changes(run) => run,
        }
    }
}

/// A Terraform working directory: `config/` (the root module, `main.tf`) and `runs/` (each command's output,
/// kept for debugging until the value is dropped). Initialised once, when created.
pub struct Workdir {
    cli: Cli,
    program: PathBuf,
    cli_config: PathBuf,
    root: TempDir,
    runs: AtomicUsize,
    /// Set for every later command ([`Workdir::set_env`]).
    env: std::sync::Mutex<Vec<(String, std::ffi::OsString)>>,
}

impl Workdir {
    /// Writes `main_tf` and runs `init` (installing the provider from the mirror).
    pub async fn new(cli: Cli, main_tf: &str) -> Result<Workdir> {
        let work = Workdir::uninitialised(cli).await?;
        work.write("main.tf", main_tf)?;
        work.run(&["init", "-input=false", "-no-color"]).await?.into_result()?;
        Ok(work)
    }

    /// An empty root module set up for the mirror, without `init`: for tests that place files (a lock file,
    /// say) before the first `init`, which they run themselves.
    pub async fn uninitialised(cli: Cli) -> Result<Workdir> {
        let mirror = tokio::task::spawn_blocking(mirror::get).await.context("preparing the provider mirror")??;
        let root = tempfile::Builder::new()
            .prefix(&format!("tf-{}-", cli.name()))
            .tempdir_in(crate::session::dir()?)
            .context("creating a Terraform working directory")?;
        std::fs::create_dir_all(root.path().join("config"))?;
        std::fs::create_dir_all(root.path().join("runs"))?;
        Ok(Workdir {
            cli,
            program: {
                record_use(cli);
                cli.program()?
            },
            cli_config: mirror.cli_config.clone(),
            root,
            runs: AtomicUsize::new(0),
            env: std::sync::Mutex::new(Vec::new()),
        })
    }

    pub fn cli(&self) -> Cli {
        self.cli
    }

    /// The root module directory (where `main.tf` and the state live).
    pub fn path(&self) -> PathBuf {
        self.root.path().join("config")
    }

    /// Sets an environment variable for every later command (e.g. `HOME`, for a configuration that names
    /// `~/.kube/…`); set after the variables the commands clear, so it may be a `TF_VAR_…` too.
    pub fn set_env(&self, key: &str, value: impl Into<std::ffi::OsString>) {
        self.env.lock().expect("environment list").push((key.to_owned(), value.into()));
    }

    /// Writes (or replaces) one file of the root module; the provider set must stay the same (no re-init).
    pub fn write(&self, file: &str, content: &str) -> Result<()> {
        let path = self.path().join(file);
        std::fs::write(&path, content).with_context(|| format!("writing {}", path.display()))
    }

    /// Writes (or replaces) `terraform.tfvars.json`: the values of the root module's variables, which is how a
    /// test fills in the HCL files kept beside it (a variable left out keeps its default, `null` for
    /// "attribute not set").
    pub fn write_vars(&self, vars: &serde_json::Value) -> Result<()> {
        self.write("terraform.tfvars.json", &serde_json::to_string_pretty(vars)?)
    }

    /// `apply -auto-approve`; fails with the command's output unless it succeeds.
    pub async fn apply(&self) -> Result<Run> {
        self.apply_with(&[]).await
    }

    /// `apply -auto-approve` with extra arguments (`-target=…`, `-var=…`, `-refresh-only`, …).
    pub async fn apply_with(&self, extra: &[&str]) -> Result<Run> {
        self.run(&with(&["apply", "-auto-approve", "-input=false", "-no-color"], extra)).await?.into_result()
    }

    /// `apply -auto-approve` that must fail; returns its output (the diagnostics are in `stderr`).
    pub async fn apply_fails(&self) -> Result<Run> {
        let run = self.run(&["apply", "-auto-approve", "-input=false", "-no-color"]).await?;
        if run.success() {
            bail!("expected apply to fail, but it succeeded:\n{run}");
        }
        Ok(run)
    }

    /// `plan -detailed-exitcode`.
    pub async fn plan(&self) -> Result<Plan> {
        self.plan_with(&[]).await
    }

    pub async fn plan_with(&self, extra: &[&str]) -> Result<Plan> {
        let run = self.run(&with(&["plan", "-detailed-exitcode", "-input=false", "-no-color"], extra)).await?;
        match run.status.code() {
            Some(0) => Ok(Plan::NoChanges(run)),
            Some(2) => Ok(Plan::Changes(run)),
            _ => bail!("{run}"),
        }
    }

    /// `destroy -auto-approve`.
    pub async fn destroy(&self) -> Result<Run> {
        self.destroy_with(&[]).await
    }

    /// `destroy -auto-approve` with extra arguments (e.g. `-target=liqo_peer.rome_to_milan`).
    pub async fn destroy_with(&self, extra: &[&str]) -> Result<Run> {
        self.run(&with(&["destroy", "-auto-approve", "-input=false", "-no-color"], extra)).await?.into_result()
    }

    /// `import ADDRESS ID`.
    pub async fn import(&self, address: &str, id: &str) -> Result<Run> {
        self.run(&["import", "-input=false", "-no-color", address, id]).await?.into_result()
    }

    /// `show -json` (the state; with a plan file argument use [`Workdir::run`]).
    pub async fn show_json(&self) -> Result<serde_json::Value> {
        let run = self.run(&["show", "-json", "-no-color"]).await?.into_result()?;
        serde_json::from_str(&run.stdout).with_context(|| format!("`{}` printed no JSON:\n{}", run.command, run.stdout))
    }

    /// `output -json`: `{name: {value, type, sensitive}}`.
    pub async fn output_json(&self) -> Result<serde_json::Value> {
        let run = self.run(&["output", "-json", "-no-color"]).await?.into_result()?;
        serde_json::from_str(&run.stdout).with_context(|| format!("`{}` printed no JSON:\n{}", run.command, run.stdout))
    }

    /// Runs `<cli> args…` in the root module and returns whatever happened (no status check).
    pub async fn run(&self, args: &[&str]) -> Result<Run> {
        let seq = self.runs.fetch_add(1, Ordering::SeqCst);
        let label = format!("{seq:02}-{}", args.first().copied().unwrap_or("run"));
        let out_path = self.root.path().join("runs").join(format!("{label}.stdout"));
        let err_path = self.root.path().join("runs").join(format!("{label}.stderr"));
        let mut command = Command::new(&self.program);
        command
            .args(args)
            .current_dir(self.path())
            .stdin(std::process::Stdio::null())
            .stdout(File::create(&out_path)?)
            .stderr(File::create(&err_path)?)
            .env("TF_CLI_CONFIG_FILE", &self.cli_config)
            .env("TOFU_CLI_CONFIG_FILE", &self.cli_config)
            .env("TF_IN_AUTOMATION", "1")
            .env("TF_INPUT", "0")
            .env("CHECKPOINT_DISABLE", "1")
            // A plugin cache conflicts with mirrors, and these would silently change what runs.
            .env_remove("TF_PLUGIN_CACHE_DIR")
            .env_remove("TF_DATA_DIR")
            .env_remove("TF_WORKSPACE")
            .env_remove("TF_CLI_ARGS");
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("TF_CLI_ARGS_") || key.to_string_lossy().starts_with("TF_VAR_") {
                command.env_remove(key);
            }
        }
        for (key, value) in self.env.lock().expect("environment list").iter() {
            command.env(key, value);
        }
        let description = format!("{} {}", self.cli.name(), args.join(" "));
        let started = Instant::now();
        let (status, cpu) = process::run_to_completion(command, COMMAND_TIMEOUT)
            .await
            .with_context(|| format!("running `{description}` in {}", self.path().display()))?;
        Ok(Run {
            command: description,
            status,
            stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
            stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
            duration: started.elapsed(),
            cpu: Some(cpu),
        })
    }
}

fn with<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(extra).copied().collect()
}
