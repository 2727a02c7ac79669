//! The other side of the peering comparison: `acceptance-tests/bench-configs/kubernetes-manifest/main.tf`, the
//! same Liqo objects written with hashicorp/kubernetes (`kubernetes_manifest` + `wait`), built from its Go module
//! by `acceptance-tests/scripts/build-kubernetes-provider.sh` and installed from a filesystem mirror.
//!
//! What its user would do by hand is done here, before the timed runs, and written to `terraform.tfvars.json`:
//! the clusters' IDs, CIDRs, API server URL and CA, two WireGuard key pairs, the consumer's key and CSR, the
//! provider node's address the gateway client dials.
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use liqo_acceptance::ground::{Ground, repository_root};
use liqo_acceptance::tf::Cli;

/// The version the mirror serves and `main.tf` requires; the build script names its binary after it.
pub const KUBERNETES_PROVIDER_VERSION: &str = liqo_acceptance::tf::mirror::KUBERNETES.version;
/// hashicorp/kubernetes under both CLIs' default registries.
const ADDRESSES: [&str; 2] =
    ["registry.terraform.io/hashicorp/kubernetes", "registry.opentofu.org/hashicorp/kubernetes"];
/// The gateway's node port: the client dials it, and on this side the user has to pick it and copy it.
pub const GATEWAY_NODE_PORT: u16 = 30742;

/// A root module with the kubernetes_manifest configuration, initialised against the mirror.
pub struct ManifestSide {
    cli: Cli,
    root: tempfile::TempDir,
    cli_config: PathBuf,
}

/// One finished command.
pub struct Finished {
    pub duration: Duration,
}

impl ManifestSide {
    /// `provider_bin`: the hashicorp/kubernetes binary (or a wrapper around it) to install from the mirror.
    pub fn new(
        cli: Cli,
        ground: &Ground,
        provider_bin: &Path,
        provider: &str,
        consumer: &str,
        offload_namespace: &str,
    ) -> Result<ManifestSide> {
        let root = tempfile::Builder::new().prefix("bench-kubernetes-manifest-").tempdir()?;
        let mirror = root.path().join("mirror");
        for address in ADDRESSES {
            let dir = mirror.join(address).join(KUBERNETES_PROVIDER_VERSION).join("linux_amd64");
            std::fs::create_dir_all(&dir)?;
            let target = dir.join(format!("terraform-provider-kubernetes_v{KUBERNETES_PROVIDER_VERSION}"));
            std::fs::copy(provider_bin, &target)
                .with_context(|| format!("copying {} into the mirror", provider_bin.display()))?;
        }
        let cli_config = root.path().join("cli.tfrc");
        let addresses = ADDRESSES.iter().map(|a| format!("\"{a}\"")).collect::<Vec<_>>().join(", ");
        std::fs::write(
            &cli_config,
            format!(
                "provider_installation {{\n  filesystem_mirror {{\n    path    = \"{}\"\n    include = [{addresses}]\n  }}\n}}\n",
                mirror.display()
            ),
        )?;
        let config = root.path().join("config");
        std::fs::create_dir_all(&config)?;
        let source = repository_root().join("acceptance-tests/bench-configs/kubernetes-manifest/main.tf");
        std::fs::copy(&source, config.join("main.tf")).with_context(|| format!("copying {}", source.display()))?;
        let vars = variables(ground, provider, consumer, offload_namespace)?;
        std::fs::write(config.join("terraform.tfvars.json"), serde_json::to_vec_pretty(&vars)?)?;
        let side = ManifestSide { cli, root, cli_config };
        side.run(&["init", "-input=false", "-no-color"])?;
        Ok(side)
    }

    pub fn apply(&self) -> Result<Finished> {
        self.run(&["apply", "-auto-approve", "-input=false", "-no-color"])
    }

    pub fn destroy(&self) -> Result<Finished> {
        self.run(&["destroy", "-auto-approve", "-input=false", "-no-color"])
    }

    fn run(&self, args: &[&str]) -> Result<Finished> {
        let mut command = Command::new(self.cli.program()?);
        command
            .args(args)
            .current_dir(self.root.path().join("config"))
            .env("TF_CLI_CONFIG_FILE", &self.cli_config)
            .env("TOFU_CLI_CONFIG_FILE", &self.cli_config)
            .env("TF_IN_AUTOMATION", "1")
            .env("CHECKPOINT_DISABLE", "1")
            .env_remove("TF_LOG")
            .env_remove("TF_CLI_ARGS")
            .env_remove("TF_PLUGIN_CACHE_DIR")
            .stdin(Stdio::null());
        let started = Instant::now();
        let output = command.output().with_context(|| format!("running {} {}", self.cli, args.join(" ")))?;
        let duration = started.elapsed();
        if !output.status.success() {
            bail!(
                "`{} {}` (kubernetes_manifest configuration in {}) failed ({}):\n{}\n{}",
                self.cli,
                args.join(" "),
                self.root.path().display(),
                output.status,
                String::from_utf8_lossy(&output.stderr),
                String::from_utf8_lossy(&output.stdout)
            );
        }
        Ok(Finished { duration })
    }
}

/// The values the user of hashicorp/kubernetes supplies by hand (variable names of `main.tf`).
fn variables(ground: &Ground, provider: &str, consumer: &str, offload_namespace: &str) -> Result<serde_json::Value> {
    let (p, c) = (ground.cluster(provider), ground.cluster(consumer));
    let (provider_private, provider_public) = wireguard_keys();
    let (consumer_private, consumer_public) = wireguard_keys();
    let key = rcgen::KeyPair::generate().context("generating the consumer's key")?;
    let mut params = rcgen::CertificateParams::default();
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::CommonName, consumer);
    dn.push(rcgen::DnType::OrganizationName, "liqo.io");
    params.distinguished_name = dn;
    let csr = params.serialize_request(&key).context("encoding the consumer's CSR")?.pem()?;
    Ok(serde_json::json!({
        "provider_kubeconfig": ground.provider_kubeconfig(provider),
        "provider_context": provider,
        "consumer_kubeconfig": ground.provider_kubeconfig(consumer),
        "consumer_context": consumer,
        "provider_cluster_id": provider,
        "consumer_cluster_id": consumer,
        "provider_pod_cidr": p.pod_cidr,
        "provider_external_cidr": p.external_cidr,
        "consumer_pod_cidr": c.pod_cidr,
        "consumer_external_cidr": c.external_cidr,
        "provider_api_server": p.api_server,
        "provider_ca_data": STANDARD.encode(ground.ca_certificate(provider)?),
        "provider_wireguard_private_key": provider_private,
        "provider_wireguard_public_key": provider_public,
        "consumer_wireguard_private_key": consumer_private,
        "consumer_wireguard_public_key": consumer_public,
        "consumer_key_pem": key.serialize_pem(),
        "consumer_csr_pem": csr,
        "gateway_node_port": GATEWAY_NODE_PORT,
        "gateway_server_address": ground.node_address(provider).to_string(),
        "offload_namespace": offload_namespace,
    }))
}

/// A WireGuard key pair as `wg genkey | wg pubkey` prints it: base64 of the raw 32-byte X25519 keys.
fn wireguard_keys() -> (String, String) {
    let private = x25519_dalek::StaticSecret::from(rand::random::<[u8; 32]>());
    let public = x25519_dalek::PublicKey::from(&private);
    (STANDARD.encode(private.to_bytes()), STANDARD.encode(public.as_bytes()))
}

/// The binary the build script made: `--kubernetes-provider-bin`, checked against the version the mirror serves.
pub fn check_binary(path: &Path) -> Result<PathBuf> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    ensure!(
        name.ends_with(KUBERNETES_PROVIDER_VERSION),
        "--kubernetes-provider-bin {}: expected the binary of hashicorp/kubernetes {KUBERNETES_PROVIDER_VERSION} that \
         acceptance-tests/scripts/build-kubernetes-provider.sh builds (terraform-provider-kubernetes-{KUBERNETES_PROVIDER_VERSION})",
        path.display()
    );
    path.canonicalize().with_context(|| format!("--kubernetes-provider-bin {}", path.display()))
}
