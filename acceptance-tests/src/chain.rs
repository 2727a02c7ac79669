//! The full peering of the contract's example as HCL: liqo_generate on both clusters → liqo_gateway (server on
//! `milan`, client on `rome`) → liqo_consumer_key on rome → liqo_tenant on milan → liqo_peer on rome. Tests that
//! need a working peering append their own resources to it. Also the shipped examples, copied into a working
//! directory as a user would run them.
use anyhow::{Context, Result, ensure};

use crate::Ground;
use crate::ground::MILAN;
use crate::tf::{self, Cli, Workdir};

/// Address of the peering's liqo_peer (`rome` consumes `milan`'s resources).
pub const PEER: &str = "liqo_peer.rome_to_milan";

/// The providers and the whole chain, with the peer asking for `resources` (an HCL map such as
/// `{ cpu = "4", memory = "8Gi" }`).
pub fn full_chain(ground: &Ground, resources: &str) -> String {
    format!(
        r#"{providers}
resource "liqo_generate" "milan" {{
  provider          = liqo.milan
  remote_cluster_id = liqo_generate.rome.cluster_id
}}

resource "liqo_generate" "rome" {{
  provider          = liqo.rome
  remote_cluster_id = "{MILAN}"
}}

resource "liqo_gateway" "server" {{
  provider             = liqo.milan
  tenant_namespace     = liqo_generate.milan.tenant_namespace
  remote_cluster_id    = liqo_generate.rome.cluster_id
  remote_pod_cidrs     = liqo_generate.rome.pod_cidrs
  remote_external_cidr = liqo_generate.rome.external_cidr
  remote_public_key    = liqo_generate.rome.wireguard_public_key
  server = {{ service_type = "NodePort", port = 51840, node_port = 30742 }}
}}

resource "liqo_gateway" "client" {{
  provider             = liqo.rome
  tenant_namespace     = liqo_generate.rome.tenant_namespace
  remote_cluster_id    = liqo_generate.milan.cluster_id
  remote_pod_cidrs     = liqo_generate.milan.pod_cidrs
  remote_external_cidr = liqo_generate.milan.external_cidr
  remote_public_key    = liqo_generate.milan.wireguard_public_key
  client = {{ addresses = liqo_gateway.server.endpoint_addresses, port = liqo_gateway.server.endpoint_port }}
}}

resource "liqo_consumer_key" "rome" {{
  provider            = liqo.rome
  tenant_namespace    = liqo_generate.rome.tenant_namespace
  provider_cluster_id = liqo_generate.milan.cluster_id
}}

resource "liqo_tenant" "rome" {{
  provider            = liqo.milan
  tenant_namespace    = liqo_generate.milan.tenant_namespace
  consumer_cluster_id = liqo_generate.rome.cluster_id
  csr                 = liqo_consumer_key.rome.csr
}}

resource "liqo_peer" "rome_to_milan" {{
  provider                  = liqo.rome
  tenant_namespace          = liqo_generate.rome.tenant_namespace
  provider_cluster_id       = liqo_generate.milan.cluster_id
  provider_tenant_namespace = liqo_tenant.rome.tenant_namespace
  api_server_url            = liqo_tenant.rome.api_server_url
  cluster_ca_certificate    = liqo_tenant.rome.cluster_ca_certificate
  client_certificate        = liqo_tenant.rome.client_certificate
  client_key_secret         = liqo_consumer_key.rome.key_secret_name
  resources                 = {resources}
  depends_on                = [liqo_gateway.client]
}}
"#,
        providers = tf::provider_config(ground)
    )
}

/// A peering without networking between `provider` and `consumer` (what runs on the real-Liqo ground, where gateways
/// do not run yet): liqo_generate on both, liqo_consumer_key, liqo_tenant with `certificate_validity = "VALIDITY"`
/// (replace the placeholder with a duration), liqo_peer asking for 2 CPUs, and the output `accepted`.
pub fn without_networking(ground: &Ground, provider: &str, consumer: &str) -> String {
    format!(
        r#"{providers}
resource "liqo_generate" "provider" {{
  provider          = liqo.{provider}
  remote_cluster_id = "{consumer}"
}}

resource "liqo_generate" "consumer" {{
  provider          = liqo.{consumer}
  remote_cluster_id = "{provider}"
}}

resource "liqo_consumer_key" "this" {{
  provider            = liqo.{consumer}
  tenant_namespace    = liqo_generate.consumer.tenant_namespace
  provider_cluster_id = liqo_generate.provider.cluster_id
}}

resource "liqo_tenant" "this" {{
  provider             = liqo.{provider}
  tenant_namespace     = liqo_generate.provider.tenant_namespace
  consumer_cluster_id  = liqo_generate.consumer.cluster_id
  csr                  = liqo_consumer_key.this.csr
  certificate_validity = "VALIDITY"
}}

resource "liqo_peer" "this" {{
  provider                  = liqo.{consumer}
  tenant_namespace          = liqo_generate.consumer.tenant_namespace
  provider_cluster_id       = liqo_generate.provider.cluster_id
  provider_tenant_namespace = liqo_tenant.this.tenant_namespace
  api_server_url            = liqo_tenant.this.api_server_url
  cluster_ca_certificate    = liqo_tenant.this.cluster_ca_certificate
  client_certificate        = liqo_tenant.this.client_certificate
  client_key_secret         = liqo_consumer_key.this.key_secret_name
  resources                 = {{ cpu = "2", memory = "4Gi", pods = "50" }}
}}

output "accepted" {{
  value = liqo_peer.this.accepted_resources
}}
"#,
        providers = tf::provider_config(ground)
    )
}

/// Copies `examples/<name>` and the peering module into a fresh working directory, with the module source
/// rewritten to the copy and the kubeconfig variables set for `clusters`, then initialises it.
pub async fn example(cli: Cli, name: &str, ground: &Ground, clusters: &[&str]) -> Result<Workdir> {
    let examples = crate::ground::repository_root().join("examples");
    let work = Workdir::new(cli, "").await?;
    let module_dir = work.path().join("modules/peering");
    std::fs::create_dir_all(&module_dir)?;
    for entry in std::fs::read_dir(examples.join("modules/peering"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "tf") {
            std::fs::copy(&path, module_dir.join(path.file_name().context("file name")?))?;
        }
    }
    let main = std::fs::read_to_string(examples.join(name).join("main.tf"))?;
    work.write("main.tf", &main.replace("\"../modules/peering\"", "\"./modules/peering\""))?;
    let vars: String =
        clusters.iter().map(|c| format!("{c}_kubeconfig = \"{}\"\n", ground.kubeconfig(c).display())).collect();
    work.write("terraform.tfvars", &vars)?;
    let init = work.run(&["init", "-input=false", "-no-color"]).await?;
    ensure!(init.success(), "init of examples/{name} failed:\n{init}");
    Ok(work)
}

/// A WireGuard public key that belongs to no cluster of any ground: a gateway given it never connects.
pub fn stranger_public_key() -> String {
    use base64::Engine as _;
    let secret = x25519_dalek::StaticSecret::from(rand::random::<[u8; 32]>());
    base64::engine::general_purpose::STANDARD.encode(x25519_dalek::PublicKey::from(&secret).as_bytes())
}
