# How the consumer cluster "rome" sees its peering with the provider cluster "milan", as `liqoctl info` reports
# it. depends_on makes Terraform read it after the peering objects exist: the ForeignCluster it reads is created
# by Liqo only then, so reading it at plan time would fail on a first apply.
data "liqo_peering" "milan" {
  provider          = liqo.rome
  remote_cluster_id = liqo_generate.milan.cluster_id

  depends_on = [liqo_peer.rome_to_milan]

  # Stop the run, with Liqo's own messages, when an enabled module is not healthy.
  lifecycle {
    postcondition {
      condition = self.healthy
      error_message = join("\n", concat(["The peering with milan is not healthy:"], [
        for c in concat(self.networking.conditions, self.authentication.conditions, self.offloading.conditions) :
        "${c.type} is ${c.status}${c.message == null ? "" : ": ${c.message}"}"
        if !contains(["Established", "Ready"], c.status)
      ]))
    }
  }
}

output "milan_peering" {
  value = {
    role           = data.liqo_peering.milan.role # "Provider": rome consumes milan's resources
    networking     = data.liqo_peering.milan.networking.status
    authentication = data.liqo_peering.milan.authentication.status
    offloading     = data.liqo_peering.milan.offloading.status
  }
}
