# A second slice of milan for GPU workloads, with a virtual node labelled for them. Both run with the provider
# block of the CONSUMER cluster (rome).
#
# Liqo gives each slice a virtual node of its own, which carries only Liqo's labels. Here the slice's liqo_peer
# says create_virtual_node = false and liqo_virtual_node makes the node, with the labels workloads select it by
# (nodeSelector, affinity, liqo_offload's cluster_selector). The slice shares the peering's credentials (see the
# liqo_peer example).
resource "liqo_peer" "rome_to_milan_gpu" {
  provider                  = liqo.rome
  tenant_namespace          = liqo_generate.rome.tenant_namespace
  provider_cluster_id       = liqo_generate.milan.cluster_id
  provider_tenant_namespace = liqo_tenant.rome.tenant_namespace
  api_server_url            = liqo_tenant.rome.api_server_url
  cluster_ca_certificate    = liqo_tenant.rome.cluster_ca_certificate
  client_certificate        = liqo_tenant.rome.client_certificate
  client_key_secret         = liqo_consumer_key.rome.key_secret_name

  resource_slice_name = "milan-gpu"
  create_virtual_node = false
  resources = {
    cpu    = "2"
    memory = "4Gi"
    pods   = "50"
    # "nvidia.com/gpu" = "1"
  }

  depends_on = [liqo_gateway.client]
}

resource "liqo_virtual_node" "gpu" {
  provider            = liqo.rome
  name                = "milan-gpu"
  tenant_namespace    = liqo_peer.rome_to_milan_gpu.tenant_namespace
  provider_cluster_id = liqo_peer.rome_to_milan_gpu.provider_cluster_id
  resource_slice_name = liqo_peer.rome_to_milan_gpu.resource_slice_name
  # What milan granted the slice: a resize of the slice updates the node in the same apply.
  resources = liqo_peer.rome_to_milan_gpu.accepted_resources

  # Updated in place: Liqo's virtual kubelet relabels the node.
  labels = {
    "example.com/accelerator" = "gpu"
  }
}

output "gpu_node" {
  value = liqo_virtual_node.gpu.name
}
