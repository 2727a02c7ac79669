//! Liqo's own Helm chart, installed and upgraded by real Helm — `helm upgrade --install`, the command Liqo's docs
//! give — through the ground's post-renderer (see [`super::adapt::post_render`]).
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, Client};
use serde::Deserialize;

/// Helm release name, as in Liqo's documentation (`helm install liqo liqo/liqo --namespace liqo`).
pub const RELEASE: &str = "liqo";
/// How long Helm may take over one install or upgrade (it does not wait for pods: no `--wait`).
const HELM_TIMEOUT: &str = "5m";

/// One `helm upgrade --install` of Liqo's chart on a cluster.
pub struct Release<'a> {
    pub helm: &'a Path,
    /// The chart directory of the Liqo version to run (`$cache/bin/liqo-<version>/chart`).
    pub chart: &'a Path,
    pub kubeconfig: &'a Path,
    pub namespace: &'a str,
    pub values: &'a serde_json::Value,
    /// `liqo-ground`, run by Helm as `liqo-ground post-render <adaptation>`.
    pub post_renderer: &'a Path,
    pub adaptation: &'a Path,
    /// Where the values and Helm's own caches go (the cluster's `liqo-chart/`).
    pub work_dir: &'a Path,
}

impl Release<'_> {
    /// Installs the release, or upgrades it to this chart and values when it is installed. Helm installs the
    /// chart's CRDs (the `liqo-crds` subchart's `crds/`) on the first install only; see [`apply_crds`].
    pub fn install_or_upgrade(&self) -> Result<()> {
        std::fs::create_dir_all(self.work_dir).with_context(|| format!("creating {}", self.work_dir.display()))?;
        let values_file = self.work_dir.join("values.json");
        std::fs::write(&values_file, serde_json::to_vec_pretty(self.values)?)
            .with_context(|| format!("writing {}", values_file.display()))?;
        let output = Command::new(self.helm)
            .args(["upgrade", "--install", RELEASE])
            .arg(self.chart)
            .args(["--namespace", self.namespace, "--create-namespace", "--timeout", HELM_TIMEOUT])
            .arg("--kubeconfig")
            .arg(self.kubeconfig)
            .arg("--values")
            .arg(&values_file)
            .arg("--post-renderer")
            .arg(self.post_renderer)
            .args(["--post-renderer-args", "post-render", "--post-renderer-args"])
            .arg(self.adaptation)
            // Helm keeps caches and repository settings under these; the ground's directory, not the user's home.
            .env("HELM_CACHE_HOME", self.work_dir.join("helm/cache"))
            .env("HELM_CONFIG_HOME", self.work_dir.join("helm/config"))
            .env("HELM_DATA_HOME", self.work_dir.join("helm/data"))
            .output()
            .with_context(|| format!("running {} upgrade --install", self.helm.display()))?;
        let log = self.work_dir.join("helm.log");
        let mut text = output.stdout.clone();
        text.extend_from_slice(&output.stderr);
        std::fs::write(&log, &text).with_context(|| format!("writing {}", log.display()))?;
        if !output.status.success() {
            bail!(
                "`helm upgrade --install {RELEASE} {}` failed ({}): {}",
                self.chart.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(())
    }
}

/// The chart's CRD files: `charts/liqo-crds/crds/*.yaml`.
fn crd_files(chart: &Path) -> Result<Vec<PathBuf>> {
    let dir = chart.join("charts/liqo-crds/crds");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    files.retain(|f| f.extension().is_some_and(|e| e == "yaml" || e == "yml"));
    files.sort();
    if files.is_empty() {
        bail!("{} holds no CRDs; is {} Liqo's chart?", dir.display(), chart.display());
    }
    Ok(files)
}

/// Applies the chart's CRDs with server-side apply and waits until each is Established: what a user runs before
/// `helm upgrade` (`kubectl apply --server-side --force-conflicts -f <chart>/charts/liqo-crds/crds`), since Helm
/// never upgrades the CRDs of a `crds/` directory — Liqo's FAQ, "Upgrade the Liqo version installed on a cluster".
pub async fn apply_crds(client: &Client, chart: &Path, field_manager: &str) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut names = Vec::new();
    for file in crd_files(chart)? {
        let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        for document in serde_yaml::Deserializer::from_str(&text) {
            let value =
                serde_json::Value::deserialize(document).with_context(|| format!("parsing {}", file.display()))?;
            if value.is_null() {
                continue;
            }
            let crd: CustomResourceDefinition =
                serde_json::from_value(value).with_context(|| format!("{} holds a non-CRD", file.display()))?;
            let name = crd.metadata.name.clone().unwrap_or_default();
            api.patch(&name, &PatchParams::apply(field_manager).force(), &Patch::Apply(&crd))
                .await
                .with_context(|| format!("applying CRD {name}"))?;
            names.push(name);
        }
    }
    for name in names {
        let established = await_condition(api.clone(), &name, conditions::is_crd_established());
        tokio::time::timeout(Duration::from_secs(60), established)
            .await
            .map_err(|_| anyhow!("CRD {name} was not Established within 60s"))?
            .with_context(|| format!("watching CRD {name}"))?;
    }
    Ok(())
}
