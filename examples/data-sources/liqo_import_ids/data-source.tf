# What this provider could adopt on the consumer cluster "rome" from its peering with "milan", e.g. after
# `liqoctl peer`: the import IDs per resource type, for `import` blocks (OpenTofu has no `terraform query`).
data "liqo_import_ids" "rome" {
  provider          = liqo.rome
  remote_cluster_id = "milan"
}

output "adoptable" {
  # e.g. { liqo_gateway = [], liqo_generate = ["liqo-tenant-milan"], liqo_offload = ["demo"],
  #        liqo_peer = ["liqo-tenant-milan/milan"], liqo_tenant = [] }
  value = data.liqo_import_ids.rome.ids
}
