# tests/real_fabric.rs, `overlapping_pod_cidrs_are_remapped_and_reported`: the peer's CIDRs as each cluster's Liqo
# remapped them, from both liqo_gateway resources of the full chain (src/chain/full_chain.tf) and from liqo_peering
# on both sides, in one output the test compares with the Configurations' status.
data "liqo_peering" "on_milan" {
  provider          = liqo.milan
  remote_cluster_id = "rome"
  depends_on        = [liqo_peer.rome_to_milan]
}

data "liqo_peering" "on_rome" {
  provider          = liqo.rome
  remote_cluster_id = "milan"
  depends_on        = [liqo_peer.rome_to_milan]
}

output "remapped" {
  value = {
    server   = { pods = liqo_gateway.server.remapped_pod_cidrs, external = liqo_gateway.server.remapped_external_cidr }
    client   = { pods = liqo_gateway.client.remapped_pod_cidrs, external = liqo_gateway.client.remapped_external_cidr }
    on_milan = { pods = data.liqo_peering.on_milan.remapped_pod_cidrs, external = data.liqo_peering.on_milan.remapped_external_cidr }
    on_rome  = { pods = data.liqo_peering.on_rome.remapped_pod_cidrs, external = data.liqo_peering.on_rome.remapped_external_cidr }
  }
}
