# The gateways of tests/gateway.rs: liqo_generate on both sides, the WireGuard server on milan and the client on
# rome. The test fills in the MTU of both and, for the steps that break the tunnel, the key the client trusts.
variable "mtu" {
  description = "The MTU of both gateways."
  type        = number
}

variable "server_template" {
  description = "The gateway template of the server; null = Liqo's own."
  type        = string
  default     = null
}

variable "client_remote_public_key" {
  description = "The WireGuard key the client trusts for the server; null = milan's real key."
  type        = string
  default     = null
}

resource "liqo_generate" "milan" {
  provider          = liqo.milan
  remote_cluster_id = "rome"
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
  key_secret_name      = liqo_generate.milan.key_secret_name
  mtu                  = var.mtu
  server               = { service_type = "NodePort", node_port = 30742, template_name = var.server_template }
}

resource "liqo_gateway" "client" {
  provider             = liqo.rome
  tenant_namespace     = liqo_generate.rome.tenant_namespace
  remote_cluster_id    = liqo_generate.milan.cluster_id
  remote_pod_cidrs     = liqo_generate.milan.pod_cidrs
  remote_external_cidr = liqo_generate.milan.external_cidr
  remote_public_key    = var.client_remote_public_key == null ? liqo_generate.milan.wireguard_public_key : var.client_remote_public_key
  key_secret_name      = liqo_generate.rome.key_secret_name
  mtu                  = var.mtu
  client               = { addresses = liqo_gateway.server.endpoint_addresses, port = liqo_gateway.server.endpoint_port }
}
