# tests/real_fabric.rs, `provider_peering_connects_over_a_real_tunnel`: liqo_peering read on both sides of the
# full chain's working peering (src/chain/full_chain.tf, whose provider aliases are also the clusters' IDs), all of
# it in one output the test compares with what Liqo wrote. Nothing is filled in.
data "liqo_peering" "on_rome" {
  provider          = liqo.rome
  remote_cluster_id = "milan"
}

data "liqo_peering" "on_milan" {
  provider          = liqo.milan
  remote_cluster_id = "rome"
}

output "peerings" {
  value = { on_rome = data.liqo_peering.on_rome, on_milan = data.liqo_peering.on_milan }
}
