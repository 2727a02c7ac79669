# Virtual nodes of rome for milan made outside Liqo's own slices (by liqo_virtual_node or `liqoctl create
# virtualnode`), as `terraform query` lists them (Terraform 1.14 and later); `terraform query
# -generate-config-out=generated.tf` writes a resource and an import block for each.
list "liqo_virtual_node" "rome" {
  provider = liqo.rome
  config {
    remote_cluster_id = "milan"
  }
}
