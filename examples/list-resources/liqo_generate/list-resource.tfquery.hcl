# Tenant namespaces (and WireGuard key Secrets) for the peer rome on milan, as `terraform query` lists them (Terraform 1.14 and later);
# `terraform query -generate-config-out=generated.tf` writes a resource and an import block for each.
list "liqo_generate" "milan" {
  provider = liqo.milan
  config {
    remote_cluster_id = "rome"
  }
}
