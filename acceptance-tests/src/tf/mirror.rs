//! Installing the provider under test the way users get it: its release archive (made by `release.sh
//! package`) in a filesystem mirror, selected by a CLI configuration file. Built once per test process.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Context, Result, bail};

use crate::ground::repository_root;

/// The provider's version: the workspace version, which this crate shares.
pub const PROVIDER_VERSION: &str = env!("CARGO_PKG_VERSION");
/// `source` in `required_providers`.
pub const PROVIDER_SOURCE: &str = "liqotech/liqo";
/// Terraform resolves `liqotech/liqo` on registry.terraform.io, OpenTofu on registry.opentofu.org; the mirror
/// serves the same archive under both.
const ADDRESSES: [&str; 2] = ["registry.terraform.io/liqotech/liqo", "registry.opentofu.org/liqotech/liqo"];
const BINARY: &str = "terraform-provider-liqo";

/// A HashiCorp provider that users run beside this one, built from its Go source by a script of the test command
/// (cached by version) and served by the mirror as `hashicorp/<name>` under both clients' default registries.
pub struct Companion {
    /// The provider's type name: `hashicorp/<name>`, binary `terraform-provider-<name>`.
    pub name: &'static str,
    /// The version its script builds and the mirror serves.
    pub version: &'static str,
    /// What builds it (`acceptance-tests/test` runs it; by hand, run it once).
    pub build_script: &'static str,
    /// Names another binary of that version instead of the cache's (the test command sets it to what it built).
    pub env: &'static str,
}

/// hashicorp/kubernetes (`kubernetes_namespace` in `examples/resources/liqo_offload` and in
/// `examples/provision-with-terraform`); the version is also the benchmark's.
pub const KUBERNETES: Companion = Companion {
    name: "kubernetes",
    version: "3.2.1",
    build_script: "acceptance-tests/scripts/build-kubernetes-provider.sh",
    env: "LIQO_KUBERNETES_PROVIDER_BIN",
};

/// hashicorp/helm (`helm_release` in `examples/provision-with-terraform`, Liqo's tutorial).
pub const HELM: Companion = Companion {
    name: "helm",
    version: "3.1.2",
    build_script: "acceptance-tests/scripts/build-helm-provider.sh",
    env: "LIQO_HELM_PROVIDER_BIN",
};

const COMPANIONS: [&Companion; 2] = [&KUBERNETES, &HELM];

impl Companion {
    fn addresses(&self) -> [String; 2] {
        ["registry.terraform.io", "registry.opentofu.org"].map(|host| format!("{host}/hashicorp/{}", self.name))
    }

    /// The binary its script built into the cache (`terraform-provider-<name>-<version>`), or the one its
    /// environment variable names; `None` when there is none.
    pub fn binary(&self) -> Option<PathBuf> {
        let path = match std::env::var_os(self.env) {
            Some(path) => PathBuf::from(path),
            None => {
                crate::ground::cache_bin_dir().ok()?.join(format!("terraform-provider-{}-{}", self.name, self.version))
            }
        };
        path.is_file().then_some(path)
    }
}

/// A filesystem mirror holding the provider archive and the CLI configuration that installs from it.
pub struct Mirror {
    pub dir: PathBuf,
    pub cli_config: PathBuf,
    /// The release archive for this machine's platform, as `release.sh` wrote it.
    pub zip: PathBuf,
    /// `release.sh`'s `terraform-provider-liqo_VERSION_SHA256SUMS` covering [`Mirror::zip`].
    pub sha256sums: PathBuf,
    /// The companion providers the mirror serves (those built; see [`Companion::binary`]), by name.
    serves: Vec<&'static str>,
}

impl Mirror {
    /// Fails, naming the script that builds it, unless the mirror serves `companion` (it serves those built).
    pub fn require(&self, companion: &Companion) -> Result<()> {
        if !self.serves.contains(&companion.name) {
            bail!(
                "this needs hashicorp/{} {}, which the test mirror serves only once built: run {}",
                companion.name,
                companion.version,
                companion.build_script
            );
        }
        Ok(())
    }
}

/// This machine's platform in Terraform's `OS_ARCH` spelling (Go's names), e.g. `linux_amd64`: the archive
/// must be built for it, or no client would install it.
pub fn platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "arm" => "arm",
        other => other,
    };
    format!("{}_{arch}", std::env::consts::OS)
}

/// The process's mirror, built on first use.
pub fn get() -> Result<&'static Mirror> {
    static MIRROR: OnceLock<Result<Mirror, String>> = OnceLock::new();
    MIRROR.get_or_init(|| build().map_err(|e| format!("{e:#}"))).as_ref().map_err(|e| anyhow::anyhow!("{e}"))
}

fn build() -> Result<Mirror> {
    let root = crate::session::dir()?.join("provider");
    std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    let binary = provider_binary()?;
    // The test command hands every test process the same copy of its build, which does not change during its run,
    // and names a directory for its archive ($LIQO_PROVIDER_PACKAGE_DIR): made once there, by the first process
    // (stripping and zipping a debug build costs about 2.5 CPU-seconds, and a run has dozens of test processes).
    // Otherwise each process packages the build it was given.
    let package_dir = std::env::var_os("LIQO_PROVIDER_PACKAGE_DIR").map_or_else(|| root.clone(), PathBuf::from);
    let platform = platform();
    let (slim, dist, zip) = packaged(&binary, &package_dir, &platform)?;
    let file_name = zip.file_name().context("release.sh printed no archive path")?;

    let dir = root.join("mirror");
    for address in ADDRESSES {
        let target = dir.join(address);
        std::fs::create_dir_all(&target).with_context(|| format!("creating {}", target.display()))?;
        std::fs::hard_link(&zip, target.join(file_name))
            .or_else(|_| std::fs::copy(&zip, target.join(file_name)).map(|_| ()))
            .with_context(|| format!("copying {} into the mirror", zip.display()))?;
    }
    let mut serves = Vec::new();
    let mut also = Vec::new();
    for companion in COMPANIONS {
        let Some(binary) = companion.binary() else {
            also.push(format!("not hashicorp/{} (not built: {})", companion.name, companion.build_script));
            continue;
        };
        // The unpacked layout (HOST/NAMESPACE/TYPE/VERSION/OS_ARCH/terraform-provider-TYPE_vVERSION): no archive
        // to make of a binary of ~70 MB.
        for address in companion.addresses() {
            let target = dir.join(address).join(companion.version).join(&platform);
            std::fs::create_dir_all(&target).with_context(|| format!("creating {}", target.display()))?;
            let file = target.join(format!("terraform-provider-{}_v{}", companion.name, companion.version));
            std::fs::hard_link(&binary, &file)
                .or_else(|_| std::fs::copy(&binary, &file).map(|_| ()))
                .with_context(|| format!("copying {} into the mirror", binary.display()))?;
        }
        serves.push(companion.name);
        also.push(format!("hashicorp/{} {} from {}", companion.name, companion.version, binary.display()));
    }
    let cli_config = root.join("cli.tfrc");
    std::fs::write(&cli_config, cli_config_text(&dir)).with_context(|| format!("writing {}", cli_config.display()))?;
    // Which clients (and versions) the tests of this process may run is part of their result (each real-Liqo test
    // runs the ones tf::assignment gives it; this may run on a thread of no test, so not Cli::all).
    use super::Cli;
    let clients: Vec<String> = super::named_clients()
        .unwrap_or_else(|| vec![Cli::Terraform, Cli::Terraform10, Cli::OpenTofu])
        .into_iter()
        .map(|cli| cli.version().unwrap_or_else(|e| format!("{cli}: {e}")))
        .collect();
    eprintln!(
        "[tf] provider {PROVIDER_VERSION} from {} mirrored; {}; clients: {}",
        slim.display(),
        also.join("; "),
        clients.join(", ")
    );
    let sha256sums = dist.join(format!("{BINARY}_{PROVIDER_VERSION}_SHA256SUMS"));
    Ok(Mirror { dir, cli_config, zip, sha256sums, serves })
}

/// The binary packaged (`binary` without debug info, or `binary` itself where it could not be stripped), the
/// release archive of it for `platform` (`release.sh package`) and that archive's directory, made in `dir` unless
/// a process made them there already: an exclusive lock on `<dir>.lock` lets one process make them while others
/// wait, and `<dir>/made` (the binary's and the archive's paths, one per line) says they are complete.
fn packaged(binary: &Path, dir: &Path, platform: &str) -> Result<(PathBuf, PathBuf, PathBuf)> {
    let lock_path = dir.with_extension("lock");
    let lock = std::fs::File::create(&lock_path).with_context(|| format!("creating {}", lock_path.display()))?;
    lock.lock().with_context(|| format!("locking {}", lock_path.display()))?;
    let (slim, dist, made) = (dir.join(BINARY), dir.join("dist"), dir.join("made"));
    if let Some((packed, zip)) = std::fs::read_to_string(&made).ok().as_deref().and_then(|m| m.split_once('\n')) {
        return Ok((PathBuf::from(packed), dist, PathBuf::from(zip)));
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let slim = without_debug_info(binary, &slim);
    let script = repository_root().join("release.sh");
    let (os, arch) = platform.split_once('_').expect("platform() is OS_ARCH");
    let output = Command::new("bash")
        .arg(&script)
        .args(["package", "--binary"])
        .arg(&slim)
        .arg("--out")
        .arg(&dist)
        .args(["--os", os, "--arch", arch])
        // Signing is release.sh's business on release machines; the mirror needs no signature.
        .env_remove("GPG_FINGERPRINT")
        .env_remove("GPG_KEY_ID")
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    if !output.status.success() {
        bail!("{} package failed ({}):\n{}", script.display(), output.status, String::from_utf8_lossy(&output.stderr));
    }
    let zip = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    std::fs::write(&made, format!("{}\n{zip}", slim.display()))
        .with_context(|| format!("writing {}", made.display()))?;
    Ok((slim, dist, PathBuf::from(zip)))
}

/// A copy of the binary at `slim` without DWARF debug info (symbols stay, so panics still name functions): a debug
/// build is ~250 MB, which every `init` would unzip and hash. Falls back to the binary itself without `strip`.
fn without_debug_info(binary: &Path, slim: &Path) -> PathBuf {
    let stripped = Command::new("strip").arg("--strip-debug").arg("-o").arg(slim).arg(binary).status();
    match stripped {
        Ok(status) if status.success() => slim.to_path_buf(),
        _ => binary.to_path_buf(),
    }
}

/// The provider and its companions come only from the mirror (if a companion was not built, a configuration that
/// needs it fails at `init` instead of downloading it); anything else would come from the registries directly
/// (the tests use no other provider, so nothing is ever downloaded).
fn cli_config_text(mirror: &Path) -> String {
    let addresses = ADDRESSES
        .map(str::to_owned)
        .into_iter()
        .chain(COMPANIONS.iter().flat_map(|c| c.addresses()))
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "provider_installation {{\n  filesystem_mirror {{\n    path    = \"{}\"\n    include = [{addresses}]\n  }}\n  \
         direct {{\n    exclude = [{addresses}]\n  }}\n}}\n",
        mirror.display()
    )
}

/// `$LIQO_PROVIDER_BIN` (`acceptance-tests/test` sets it to the build it made before running the tests), else
/// the debug build, brought up to date with `cargo build` (when a test binary is run by hand).
pub fn provider_binary() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("LIQO_PROVIDER_BIN") {
        return Ok(PathBuf::from(path));
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(&cargo);
    // `cargo test` gives the test process the variables it sets for the crate under test (CARGO_MANIFEST_DIR,
    // CARGO_PKG_NAME, …). Passed on, they change what some build scripts watch (ring's declares
    // `rerun-if-env-changed=CARGO_MANIFEST_DIR`), so this build ran ring's build script again and rebuilt ring,
    // rustls, kube and the provider (about 75 CPU-seconds), and the next `cargo test` rebuilt them back.
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_for_the_crate) {
            build.env_remove(&name);
        }
    }
    let status = build
        .args(["build", "--quiet", "-p", BINARY, "--bin", BINARY])
        .current_dir(repository_root())
        .status()
        .context("running cargo build for the provider")?;
    if !status.success() {
        bail!("cargo build -p {BINARY} failed ({status}); fix the build or set LIQO_PROVIDER_BIN to a built provider");
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| repository_root().join("target"));
    let binary = target.join("debug").join(BINARY);
    if !binary.is_file() {
        bail!("cargo built the provider but {} does not exist; set LIQO_PROVIDER_BIN to the binary", binary.display());
    }
    Ok(binary)
}

/// Whether `name` is one of the variables Cargo sets for the crate it builds or runs (the Cargo book, "Environment
/// variables Cargo sets for crates"), as opposed to Cargo's own configuration (CARGO_HOME, CARGO_TARGET_DIR, …).
fn set_by_cargo_for_the_crate(name: &str) -> bool {
    const PREFIXES: [&str; 3] = ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_BIN_EXE_"];
    const NAMES: [&str; 5] = [
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p)) || NAMES.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_config_mirrors_every_provider_at_both_registries_and_excludes_them_from_direct() {
        let text = cli_config_text(Path::new("/m"));
        assert!(text.contains("path    = \"/m\""), "{text}");
        let both = "[\"registry.terraform.io/liqotech/liqo\", \"registry.opentofu.org/liqotech/liqo\", \
                    \"registry.terraform.io/hashicorp/kubernetes\", \"registry.opentofu.org/hashicorp/kubernetes\", \
                    \"registry.terraform.io/hashicorp/helm\", \"registry.opentofu.org/hashicorp/helm\"]";
        assert!(text.contains(&format!("include = {both}")), "{text}");
        assert!(text.contains(&format!("exclude = {both}")), "{text}");
    }

    #[test]
    fn the_provider_build_drops_the_crate_variables_of_cargo_test_and_keeps_cargos_configuration() {
        for name in
            ["CARGO_MANIFEST_DIR", "CARGO_MANIFEST_PATH", "CARGO_PKG_NAME", "CARGO_CRATE_NAME", "CARGO_BIN_EXE_x"]
        {
            assert!(set_by_cargo_for_the_crate(name), "{name}");
        }
        for name in ["CARGO", "CARGO_HOME", "CARGO_TARGET_DIR", "CARGO_INCREMENTAL", "CARGO_BUILD_JOBS", "PATH"] {
            assert!(!set_by_cargo_for_the_crate(name), "{name}");
        }
    }
}
