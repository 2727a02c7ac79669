# The ResourceSlices rome asks the provider milan for, as `terraform query` lists them (Terraform 1.14 and later);
# `terraform query -generate-config-out=generated.tf` writes a resource and an import block for each.
list "liqo_peer" "rome" {
  provider = liqo.rome
  config {
    remote_cluster_id = "milan"
  }
}
