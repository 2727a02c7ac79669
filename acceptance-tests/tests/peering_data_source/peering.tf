# tests/peering_data_source.rs: one liqo_peering on milan, exported whole as output `peering`. The test fills in the
# peer's cluster ID (made up per test and client, or an invalid one) and writes the ground's provider blocks beside.
variable "peer" {
  description = "remote_cluster_id of the peering to read."
  type        = string
}

data "liqo_peering" "peer" {
  provider          = liqo.milan
  remote_cluster_id = var.peer
}

output "peering" {
  value = data.liqo_peering.peer
}
