//! The full peering of the contract's example as HCL: liqo_generate on both clusters → liqo_gateway (server on
//! `milan`, client on `rome`) → liqo_consumer_key on rome → liqo_tenant on milan → liqo_peer on rome. Tests that
//! need a working peering append their own resources to it. Also the shipped examples, copied into a working
//! directory as a user would run them.
use anyhow::{Context, Result, ensure};

use crate::Ground;
use crate::tf::{self, Cli, Workdir};

const FULL_CHAIN: &str = include_str!("chain/full_chain.tf");
const WITHOUT_NETWORKING: &str = include_str!("chain/without_networking.tf");

/// Address of the peering's liqo_peer (`rome` consumes `milan`'s resources).
pub const PEER: &str = "liqo_peer.rome_to_milan";

/// The providers and the whole chain, with the peer asking for `resources` (an HCL map such as
/// `{ cpu = "4", memory = "8Gi" }`).
pub fn full_chain(ground: &Ground, resources: &str) -> String {
    // The chain is plain HCL in chain/full_chain.tf; only the resource map is filled in.
    format!("{}\n{}", tf::provider_config(ground), FULL_CHAIN.replace("RESOURCES", resources))
}

/// A peering without networking between `provider` and `consumer` (what runs on the real-Liqo ground, where gateways
/// do not run yet): liqo_generate on both, liqo_consumer_key, liqo_tenant with `certificate_validity = "VALIDITY"`
/// (replace the placeholder with a duration), liqo_peer asking for 2 CPUs, and the output `accepted`.
pub fn without_networking(ground: &Ground, provider: &str, consumer: &str) -> String {
    // The chain is plain HCL in chain/without_networking.tf; only the two clusters' names are filled in.
    let chain = WITHOUT_NETWORKING.replace("PROVIDER", provider).replace("CONSUMER", consumer);
    format!("{}\n{chain}", tf::provider_config(ground))
}

/// Copies `examples/<name>` and the peering module into a fresh working directory, with the module source
/// rewritten to the copy and the kubeconfig variables set for `clusters`, then initialises it.
pub async fn example(cli: Cli, name: &str, ground: &Ground, clusters: &[&str]) -> Result<Workdir> {
    let work = Workdir::new(cli, "").await?;
    copy_example(&work, name)?;
    let vars: String =
        clusters.iter().map(|c| format!("{c}_kubeconfig = \"{}\"\n", ground.kubeconfig(c).display())).collect();
    work.write("terraform.tfvars", &vars)?;
    let init = work.run(&["init", "-input=false", "-no-color"]).await?;
    ensure!(init.success(), "init of examples/{name} failed:\n{init}");
    Ok(work)
}

/// Writes the `.tf` files of `examples/<name>` and the peering module into `work`, the module source rewritten to
/// the copy. Returns the example's files, relative to `examples/`.
pub fn copy_example(work: &Workdir, name: &str) -> Result<Vec<String>> {
    let examples = crate::ground::repository_root().join("examples");
    let module_dir = work.path().join("modules/peering");
    std::fs::create_dir_all(&module_dir)?;
    for path in tf_files(&examples.join("modules/peering"))? {
        std::fs::copy(&path, module_dir.join(path.file_name().context("file name")?))?;
    }
    let mut copied = Vec::new();
    for path in tf_files(&examples.join(name))? {
        let file = path.file_name().context("file name")?.to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        work.write(&file, &text.replace("\"../modules/peering\"", "\"./modules/peering\""))?;
        copied.push(format!("{name}/{file}"));
    }
    ensure!(!copied.is_empty(), "examples/{name} holds no .tf file");
    Ok(copied)
}

/// The `.tf` files directly in `dir`, sorted.
fn tf_files(dir: &std::path::Path) -> Result<Vec<std::path::PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "tf") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// A WireGuard public key that belongs to no cluster of any ground: a gateway given it never connects.
pub fn stranger_public_key() -> String {
    use base64::Engine as _;
    let secret = x25519_dalek::StaticSecret::from(rand::random::<[u8; 32]>());
    base64::engine::general_purpose::STANDARD.encode(x25519_dalek::PublicKey::from(&secret).as_bytes())
}
