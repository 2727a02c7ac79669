# The full peering of the contract's example, rome consuming milan's resources (src/chain.rs, `full_chain`):
# liqo_generate on both clusters, liqo_gateway (server on milan, client on rome), liqo_consumer_key on rome,
# liqo_tenant on milan, liqo_peer on rome. `full_chain` puts the map of resources the peer asks for in place of
# the capitalised word after `resources =`, and the ground's provider blocks before it all.
resource "liqo_generate" "milan" {
  provider          = liqo.milan
  remote_cluster_id = liqo_generate.rome.cluster_id
}

resource "liqo_generate" "rome" {
  provider          = liqo.rome
  remote_cluster_id = "milan"
}

resource "liqo_gateway" "server" {
  provider             = liqo.milan
  tenant_namespace     = liqo_generate.milan.tenant_namespace
  remote_cluster_id    = liqo_generate.rome.cluster_id
  remote_pod_cidrs     = liqo_generate.rome.pod_cidrs
  remote_external_cidr = liqo_generate.rome.external_cidr
  remote_public_key    = liqo_generate.rome.wireguard_public_key
  server = { service_type = "NodePort", port = 51840, node_port = 30742 }
}

resource "liqo_gateway" "client" {
  provider             = liqo.rome
  tenant_namespace     = liqo_generate.rome.tenant_namespace
  remote_cluster_id    = liqo_generate.milan.cluster_id
  remote_pod_cidrs     = liqo_generate.milan.pod_cidrs
  remote_external_cidr = liqo_generate.milan.external_cidr
  remote_public_key    = liqo_generate.milan.wireguard_public_key
  client = { addresses = liqo_gateway.server.endpoint_addresses, port = liqo_gateway.server.endpoint_port }
}

resource "liqo_consumer_key" "rome" {
  provider            = liqo.rome
  tenant_namespace    = liqo_generate.rome.tenant_namespace
  provider_cluster_id = liqo_generate.milan.cluster_id
}

resource "liqo_tenant" "rome" {
  provider            = liqo.milan
  tenant_namespace    = liqo_generate.milan.tenant_namespace
  consumer_cluster_id = liqo_generate.rome.cluster_id
  csr                 = liqo_consumer_key.rome.csr
}

resource "liqo_peer" "rome_to_milan" {
  provider                  = liqo.rome
  tenant_namespace          = liqo_generate.rome.tenant_namespace
  provider_cluster_id       = liqo_generate.milan.cluster_id
  provider_tenant_namespace = liqo_tenant.rome.tenant_namespace
  api_server_url            = liqo_tenant.rome.api_server_url
  cluster_ca_certificate    = liqo_tenant.rome.cluster_ca_certificate
  client_certificate        = liqo_tenant.rome.client_certificate
  client_key_secret         = liqo_consumer_key.rome.key_secret_name
  resources                 = RESOURCES
  depends_on                = [liqo_gateway.client]
}
