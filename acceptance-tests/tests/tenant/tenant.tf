# The tenant of tests/tenant.rs on milan: liqo_generate makes the tenant namespace for the consumer and
# liqo_tenant authenticates the consumer with the CSR in consumer.csr (both written by the test). The test fills in
# the consumer's ID and, per test and step, the tenant's condition, the CA file and the create timeout.
# tests/renamed_liqo.rs uses it too, with the consumer's ID only.
variable "consumer_cluster_id" {
  description = "The consumer's cluster ID (one per client, so that no client sees what another left behind)."
  type        = string
}

variable "tenant_condition" {
  description = "liqo_tenant's tenant_condition; null = not set."
  type        = string
  default     = null
}

variable "api_server_ca_file" {
  description = "The file (written by the test) whose CA liqo_tenant's api_server_ca is; null = not set."
  type        = string
  default     = null
}

variable "create_timeout" {
  description = "liqo_tenant's create timeout; null = no timeouts block."
  type        = string
  default     = null
}

resource "liqo_generate" "ns" {
  provider          = liqo.milan
  remote_cluster_id = var.consumer_cluster_id
}

resource "liqo_tenant" "consumer" {
  provider            = liqo.milan
  tenant_namespace    = liqo_generate.ns.tenant_namespace
  consumer_cluster_id = var.consumer_cluster_id
  csr                 = file("consumer.csr")
  tenant_condition    = var.tenant_condition
  api_server_ca       = var.api_server_ca_file == null ? null : file(var.api_server_ca_file)

  dynamic "timeouts" {
    for_each = var.create_timeout == null ? [] : [var.create_timeout]
    content {
      create = timeouts.value
    }
  }
}
