//! Liqo's own Helm chart, installed and upgraded by real Helm — `helm upgrade --install`, the command Liqo's docs
//! give — as it is, with the values of [`super::adapt::values`].
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use kube::Client;

use crate::ground::bootstrap;

/// Helm release name, as in Liqo's documentation (`helm install liqo liqo/liqo --namespace liqo`).
pub const RELEASE: &str = "liqo";
/// How long Helm may take over one install or upgrade (it does not wait for pods: no `--wait`).
const HELM_TIMEOUT: &str = "5m";

/// Helm, pointed at one cluster's Liqo release.
pub struct Helm<'a> {
    pub helm: &'a Path,
    pub kubeconfig: &'a Path,
    pub namespace: &'a str,
    /// Where the values, Helm's output and its own caches go (the cluster's `liqo-chart/`).
    pub work_dir: &'a Path,
}

impl Helm<'_> {
    /// Runs `helm <args> --namespace NS --kubeconfig K`; its output is kept in `helm-<verb>.log`.
    fn run(&self, args: &[&std::ffi::OsStr]) -> Result<Vec<u8>> {
        std::fs::create_dir_all(self.work_dir).with_context(|| format!("creating {}", self.work_dir.display()))?;
        let output = Command::new(self.helm)
            .args(args)
            .args(["--namespace", self.namespace])
            .arg("--kubeconfig")
            .arg(self.kubeconfig)
            // Helm keeps caches and repository settings under these; the ground's directory, not the user's home.
            .env("HELM_CACHE_HOME", self.work_dir.join("helm/cache"))
            .env("HELM_CONFIG_HOME", self.work_dir.join("helm/config"))
            .env("HELM_DATA_HOME", self.work_dir.join("helm/data"))
            .output()
            .with_context(|| format!("running {}", self.helm.display()))?;
        let verb = args.first().map(|a| a.to_string_lossy().into_owned()).unwrap_or_default();
        let log = self.work_dir.join(format!("helm-{verb}.log"));
        std::fs::write(&log, [output.stdout.as_slice(), output.stderr.as_slice()].concat())
            .with_context(|| format!("writing {}", log.display()))?;
        if !output.status.success() {
            let line: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
            bail!(
                "`helm {}` failed ({}): {}",
                line.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(output.stdout)
    }

    /// The names of the releases in the namespace, in any state (`helm list --all`).
    pub fn releases(&self) -> Result<Vec<String>> {
        let out = self.run(&["list".as_ref(), "--all".as_ref(), "--output".as_ref(), "json".as_ref()])?;
        let listed: Vec<serde_json::Value> = serde_json::from_slice(&out).context("parsing `helm list` output")?;
        Ok(listed.iter().filter_map(|r| r["name"].as_str().map(str::to_owned)).collect())
    }

    /// The values the release was installed or last upgraded with (`helm get values liqo`).
    pub fn values(&self) -> Result<serde_json::Value> {
        let out =
            self.run(&["get".as_ref(), "values".as_ref(), RELEASE.as_ref(), "--output".as_ref(), "json".as_ref()])?;
        serde_json::from_slice(&out).context("parsing `helm get values` output")
    }

    /// Installs the release, or upgrades it to `chart` and `values` when it is installed. The chart's CRDs (the
    /// `liqo-crds` subchart's `crds/`) are the ground's to apply first, as Liqo's FAQ has users do on an upgrade
    /// ([`apply_crds`]; on a new cluster, see `ground::crd_seed`): Helm creates a `crds/` directory's CRDs on the
    /// first install only, and its create of a CRD that exists still has the API server validate the whole schema.
    pub fn upgrade_install(&self, chart: &Path, values: &serde_json::Value) -> Result<()> {
        std::fs::create_dir_all(self.work_dir).with_context(|| format!("creating {}", self.work_dir.display()))?;
        let values_file = self.work_dir.join("values.json");
        std::fs::write(&values_file, serde_json::to_vec_pretty(values)?)
            .with_context(|| format!("writing {}", values_file.display()))?;
        // No `--create-namespace`: the ground has made Liqo's namespace already (`adapt::seed_webhook_certificate`),
        // and with the flag Helm checks the Namespace it would create against the API server's OpenAPI v3 schema
        // whatever `--disable-openapi-validation` says (two reads of `/openapi/v3`, the core group's document
        // among them), then creates it and is told it exists (the API servers' audit logs of a ground's start).
        let args: [&std::ffi::OsStr; 10] = [
            "upgrade".as_ref(),
            "--install".as_ref(),
            RELEASE.as_ref(),
            chart.as_ref(),
            "--skip-crds".as_ref(),
            // Helm checks the rendered objects against the API server's OpenAPI schemas before sending them, which
            // the API server does again when it stores them. Skipping the client's check changes nothing that is
            // installed and halves Helm's CPU (measured with `helm upgrade` on a ground: Helm 1.45 → 0.75
            // CPU-seconds, its API server 0.4–0.8 → 0.27), over a hundred installs a test run.
            "--disable-openapi-validation".as_ref(),
            "--timeout".as_ref(),
            HELM_TIMEOUT.as_ref(),
            "--values".as_ref(),
            values_file.as_ref(),
        ];
        self.run(&args).map(|_| ())
    }
}

/// Applies the chart's CRDs (`charts/liqo-crds/crds/*.yaml`) with server-side apply and waits until each is
/// Established: what a user runs before `helm upgrade` (`kubectl apply --server-side --force-conflicts -f
/// <chart>/charts/liqo-crds/crds`), since Helm never upgrades the CRDs of a `crds/` directory — Liqo's FAQ,
/// "Upgrade the Liqo version installed on a cluster".
pub async fn apply_crds(client: &Client, chart: &Path, field_manager: &str) -> Result<()> {
    bootstrap::apply_crd_files(client, &crd_files(chart)?, field_manager).await
}

/// The chart's CRD files, `charts/liqo-crds/crds/*.yaml`.
pub fn crd_files(chart: &Path) -> Result<Vec<PathBuf>> {
    let dir = chart.join("charts/liqo-crds/crds");
    let files = bootstrap::yaml_files(&dir).with_context(|| format!("reading {}", dir.display()))?;
    if files.is_empty() {
        bail!("{} holds no CRDs; is {} Liqo's chart?", dir.display(), chart.display());
    }
    Ok(files)
}
