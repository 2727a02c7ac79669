//! Locating the upstream binaries (the ground's etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
//! kubectl and the pinned clients), building them with `scripts/build-upstream.sh` when the version-keyed cache does
//! not have them yet.
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// Paths of the upstream binaries the ground and the tests run.
#[derive(Clone, Debug)]
pub struct Upstream {
    pub etcd: PathBuf,
    pub kube_apiserver: PathBuf,
    pub kube_controller_manager: PathBuf,
    /// Places the pods of real Liqo's Deployments on the fake node (real-Liqo grounds).
    pub kube_scheduler: PathBuf,
    /// What the provider's warnings tell a user to run (a cleanup after a cluster gone for good).
    pub kubectl: PathBuf,
    /// Terraform 1.16.4.
    pub terraform: PathBuf,
    /// Terraform 1.0.11.
    pub terraform_1_0: PathBuf,
    /// OpenTofu 1.11.7.
    pub tofu: PathBuf,
    /// Terraform 1.16.4 with its experiments allowed (`-allow-deferral`).
    pub terraform_experiments: PathBuf,
}

const NAMES: [&str; 9] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "terraform",
    "terraform-1.0",
    "tofu",
    "terraform-experiments",
];

impl Upstream {
    /// Finds the binaries in the cache (`$LIQO_TEST_CACHE/bin`, default `~/.cache/terraform-provider-liqo/bin`),
    /// running the build script first if any is missing (the first run takes several minutes).
    pub fn locate() -> Result<Upstream> {
        let bin = cache_bin_dir()?;
        if NAMES.iter().all(|name| bin.join(name).is_file()) {
            return Ok(Upstream::in_dir(&bin));
        }
        let script = crate::ground::repository_root().join("acceptance-tests/scripts/build-upstream.sh");
        eprintln!("[ground] upstream binaries missing in {}; running {}", bin.display(), script.display());
        let output = Command::new(&script)
            .stderr(Stdio::inherit())
            .output()
            .with_context(|| format!("running {}", script.display()))?;
        if !output.status.success() {
            bail!("{} failed ({}); its output above says which build broke", script.display(), output.status);
        }
        let printed = String::from_utf8_lossy(&output.stdout);
        let dir = PathBuf::from(printed.lines().last().unwrap_or_default().trim());
        for name in NAMES {
            if !dir.join(name).is_file() {
                bail!(
                    "{} finished but {} is missing; check the script's output",
                    script.display(),
                    dir.join(name).display()
                );
            }
        }
        Ok(Upstream::in_dir(&dir))
    }

    fn in_dir(dir: &Path) -> Upstream {
        Upstream {
            etcd: dir.join("etcd"),
            kube_apiserver: dir.join("kube-apiserver"),
            kube_controller_manager: dir.join("kube-controller-manager"),
            kube_scheduler: dir.join("kube-scheduler"),
            kubectl: dir.join("kubectl"),
            terraform: dir.join("terraform"),
            terraform_1_0: dir.join("terraform-1.0"),
            tofu: dir.join("tofu"),
            terraform_experiments: dir.join("terraform-experiments"),
        }
    }
}

/// The same directory `build-upstream.sh` (and `build-liqo.sh`) uses.
pub fn cache_bin_dir() -> Result<PathBuf> {
    Ok(cache_dir()?.join("bin"))
}

/// The test cache: `$LIQO_TEST_CACHE`, default `~/.cache/terraform-provider-liqo`.
pub fn cache_dir() -> Result<PathBuf> {
    Ok(match std::env::var_os("LIQO_TEST_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").context("HOME is not set and LIQO_TEST_CACHE is not set")?)
            .join(".cache/terraform-provider-liqo"),
    })
}

/// The directory of `module@version` in Go's module cache, downloaded first if it is not there
/// (`go mod download -json`, as the build scripts do): Liqo's chart, say, without building Liqo.
pub fn go_module_dir(module: &str, version: &str) -> Result<PathBuf> {
    let spec = format!("{module}@{version}");
    // Outside any Go module, so that no go.mod around the working directory takes part.
    let output = Command::new("go")
        .args(["mod", "download", "-json", &spec])
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running `go mod download {spec}` (Go is needed: README, Needs)"))?;
    let info: serde_json::Value = serde_json::from_slice(&output.stdout).with_context(|| {
        format!("`go mod download -json {spec}` printed no JSON: {}", String::from_utf8_lossy(&output.stderr))
    })?;
    if let Some(error) = info["Error"].as_str() {
        bail!("go mod download {spec}: {error}");
    }
    let dir = info["Dir"].as_str().with_context(|| format!("go mod download {spec}: no Dir in {info}"))?;
    Ok(PathBuf::from(dir))
}
