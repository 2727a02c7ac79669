//! The full peering of the contract's example as HCL: liqo_generate on both clusters → liqo_gateway (server on
//! `milan`, client on `rome`) → liqo_tenant on milan → liqo_peer on rome. Tests that need a working peering
//! append their own resources to it.
use crate::Ground;
use crate::ground::MILAN;
use crate::tf;

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

resource "liqo_tenant" "rome" {{
  provider            = liqo.milan
  tenant_namespace    = liqo_generate.milan.tenant_namespace
  consumer_cluster_id = liqo_generate.rome.cluster_id
}}

resource "liqo_peer" "rome_to_milan" {{
  provider                  = liqo.rome
  tenant_namespace          = liqo_generate.rome.tenant_namespace
  provider_cluster_id       = liqo_generate.milan.cluster_id
  provider_tenant_namespace = liqo_tenant.rome.tenant_namespace
  kubeconfig                = liqo_tenant.rome.kubeconfig
  resources                 = {resources}
  depends_on                = [liqo_gateway.client]
}}
"#,
        providers = tf::provider_config(ground)
    )
}
