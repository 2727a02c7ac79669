# tests/renamed_liqo.rs: milan admits one consumer with liqo_tenant on a Liqo whose control-plane role was renamed.
# The test fills in the consumer's cluster ID (one per client) and writes the consumer's CSR to consumer.csr; the
# ground's provider blocks come from liqo_acceptance::tf::provider_config.
variable "consumer_cluster_id" {
  description = "Cluster ID of the consumer the test plays (it keeps the key and writes consumer.csr)."
  type        = string
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
}
