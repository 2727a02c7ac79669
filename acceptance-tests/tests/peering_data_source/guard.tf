# tests/peering_data_source.rs: a second liqo_peering of the same peer (var.peer, in peering.tf), guarded like the
# documented example, so that the run stops when the peering is not healthy.
data "liqo_peering" "guarded" {
  provider          = liqo.milan
  remote_cluster_id = var.peer

  lifecycle {
    postcondition {
      condition = self.healthy
      error_message = join("\n", concat(["The peering with ${var.peer} is not healthy:"], [
        for c in concat(self.networking.conditions, self.authentication.conditions, self.offloading.conditions) :
        "${c.type} is ${c.status}${c.message == null ? "" : ": ${c.message}"}"
        if !contains(["Established", "Ready"], c.status)
      ]))
    }
  }
}
