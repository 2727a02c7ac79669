# The key Secrets this provider made on the consumer rome for the provider milan, as `terraform query` lists them
# (Terraform 1.14 and later); `terraform query -generate-config-out=generated.tf` writes a resource and an import
# block for each. A peering made with `liqoctl peer` has none.
list "liqo_consumer_key" "rome" {
  provider = liqo.rome
  config {
    remote_cluster_id = "milan"
  }
}
