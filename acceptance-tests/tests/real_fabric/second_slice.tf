# tests/real_fabric.rs, `one_cordoned_slice_refuses_new_pods_while_the_other_serves`: beside the full chain
# (src/chain/full_chain.tf, whose liqo_peer makes the slice and virtual node `milan`), a second ResourceSlice of rome
# on milan, `milan-b`, with its own virtual node, and a namespace offloaded to both. Nothing is filled in.
resource "liqo_peer" "rome_to_milan_b" {
  provider                  = liqo.rome
  tenant_namespace          = liqo_generate.rome.tenant_namespace
  provider_cluster_id       = liqo_generate.milan.cluster_id
  provider_tenant_namespace = liqo_tenant.rome.tenant_namespace
  api_server_url            = liqo_tenant.rome.api_server_url
  cluster_ca_certificate    = liqo_tenant.rome.cluster_ca_certificate
  client_certificate        = liqo_tenant.rome.client_certificate
  client_key_secret         = liqo_consumer_key.rome.key_secret_name
  resource_slice_name       = "milan-b"
  resources                 = { cpu = "1", memory = "2Gi", pods = "20" }
  depends_on                = [liqo_gateway.client]
}

resource "liqo_offload" "slices" {
  provider                = liqo.rome
  namespace               = "slice-cordon"
  create_namespace        = true
  pod_offloading_strategy = "Remote"
  depends_on              = [liqo_peer.rome_to_milan, liqo_peer.rome_to_milan_b]
}
