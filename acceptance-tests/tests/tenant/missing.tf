# A liqo_tenant in a namespace that does not exist (tests/tenant.rs,
# a_missing_tenant_namespace_is_named_before_anything_is_signed); the test writes the CSR in consumer.csr.
resource "liqo_tenant" "missing" {
  provider            = liqo.milan
  tenant_namespace    = "tenant-ns-missing"
  consumer_cluster_id = "nobody"
  csr                 = file("consumer.csr")
}
