# Bidirectional peering: milan and rome each consume the other's resources. Liqo keeps one tenant namespace and
# one WireGuard tunnel per pair of clusters, so networking is declared once and authentication plus resource
# negotiation twice, once per direction.
terraform {
  required_version = ">= 1.0.5"
  required_providers {
    liqo = {
      source = "liqotech/liqo"
    }
  }
}

variable "milan_kubeconfig" {
  description = "Path of a kubeconfig for milan."
  type        = string
}

variable "rome_kubeconfig" {
  description = "Path of a kubeconfig for rome."
  type        = string
}

provider "liqo" {
  alias      = "milan"
  kubernetes = { config_path = var.milan_kubeconfig }
}

provider "liqo" {
  alias      = "rome"
  kubernetes = { config_path = var.rome_kubeconfig }
}

data "liqo_cluster" "milan" {
  provider = liqo.milan
}

data "liqo_cluster" "rome" {
  provider = liqo.rome
}

resource "liqo_generate" "milan" {
  provider          = liqo.milan
  remote_cluster_id = data.liqo_cluster.rome.cluster_id
}

resource "liqo_generate" "rome" {
  provider          = liqo.rome
  remote_cluster_id = data.liqo_cluster.milan.cluster_id
}

resource "liqo_gateway" "server" {
  provider             = liqo.milan
  tenant_namespace     = liqo_generate.milan.tenant_namespace
  remote_cluster_id    = liqo_generate.rome.cluster_id
  remote_pod_cidrs     = liqo_generate.rome.pod_cidrs
  remote_external_cidr = liqo_generate.rome.external_cidr
  remote_public_key    = liqo_generate.rome.wireguard_public_key
  server               = { service_type = "NodePort", port = 51840 }
}

resource "liqo_gateway" "client" {
  provider             = liqo.rome
  tenant_namespace     = liqo_generate.rome.tenant_namespace
  remote_cluster_id    = liqo_generate.milan.cluster_id
  remote_pod_cidrs     = liqo_generate.milan.pod_cidrs
  remote_external_cidr = liqo_generate.milan.external_cidr
  remote_public_key    = liqo_generate.milan.wireguard_public_key
  client = {
    addresses = liqo_gateway.server.endpoint_addresses
    port      = liqo_gateway.server.endpoint_port
    protocol  = "UDP"
  }
}

# rome consumes milan: rome's key stays on rome, milan signs its CSR.
resource "liqo_consumer_key" "rome_for_milan" {
  provider            = liqo.rome
  tenant_namespace    = liqo_generate.rome.tenant_namespace
  provider_cluster_id = liqo_generate.milan.cluster_id
}

resource "liqo_tenant" "rome_on_milan" {
  provider            = liqo.milan
  tenant_namespace    = liqo_generate.milan.tenant_namespace
  consumer_cluster_id = liqo_generate.rome.cluster_id
  csr                 = liqo_consumer_key.rome_for_milan.csr
}

resource "liqo_peer" "rome_to_milan" {
  provider                  = liqo.rome
  tenant_namespace          = liqo_generate.rome.tenant_namespace
  provider_cluster_id       = liqo_generate.milan.cluster_id
  provider_tenant_namespace = liqo_tenant.rome_on_milan.tenant_namespace
  api_server_url            = liqo_tenant.rome_on_milan.api_server_url
  cluster_ca_certificate    = liqo_tenant.rome_on_milan.cluster_ca_certificate
  client_certificate        = liqo_tenant.rome_on_milan.client_certificate
  client_key_secret         = liqo_consumer_key.rome_for_milan.key_secret_name
  resources                 = { cpu = "2", memory = "4Gi", pods = "50" }
  # The virtual node turns Ready only once the tunnel is Connected; the client gateway's create waits for that.
  depends_on = [liqo_gateway.client]
}

# milan consumes rome: milan's key stays on milan, rome signs its CSR.
resource "liqo_consumer_key" "milan_for_rome" {
  provider            = liqo.milan
  tenant_namespace    = liqo_generate.milan.tenant_namespace
  provider_cluster_id = liqo_generate.rome.cluster_id
}

resource "liqo_tenant" "milan_on_rome" {
  provider            = liqo.rome
  tenant_namespace    = liqo_generate.rome.tenant_namespace
  consumer_cluster_id = liqo_generate.milan.cluster_id
  csr                 = liqo_consumer_key.milan_for_rome.csr
}

resource "liqo_peer" "milan_to_rome" {
  provider                  = liqo.milan
  tenant_namespace          = liqo_generate.milan.tenant_namespace
  provider_cluster_id       = liqo_generate.rome.cluster_id
  provider_tenant_namespace = liqo_tenant.milan_on_rome.tenant_namespace
  api_server_url            = liqo_tenant.milan_on_rome.api_server_url
  cluster_ca_certificate    = liqo_tenant.milan_on_rome.cluster_ca_certificate
  client_certificate        = liqo_tenant.milan_on_rome.client_certificate
  client_key_secret         = liqo_consumer_key.milan_for_rome.key_secret_name
  resources                 = { cpu = "2", memory = "4Gi", pods = "50" }
  # Liqo keeps milan's virtual node NotReady until milan's Connection is Connected, which happens when rome's
  # client gateway dials in: depending on the server alone could start this wait before the tunnel is built.
  depends_on = [liqo_gateway.client]
}

output "virtual_nodes" {
  value = {
    on_rome  = liqo_peer.rome_to_milan.virtual_node_name
    on_milan = liqo_peer.milan_to_rome.virtual_node_name
  }
}
