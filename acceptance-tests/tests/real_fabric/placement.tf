# tests/real_fabric.rs, `virtual_node_placement_reaches_the_pods_and_taints_keep_others_off`: beside the full chain
# (src/chain/full_chain.tf), a second ResourceSlice of rome on milan, `milan-gpu`, whose virtual node is a
# liqo_virtual_node with an annotation and a taint, and a selector of milan's nodes, a RuntimeClass and a
# toleration for the pods' copies on milan, a required and a preferred node affinity, a label and an annotation kept
# off them, two storage classes of milan, its virtual kubelet made from VkOptionsTemplate liqo/gpu (which the test
# makes on rome); and a namespace offloaded remotely.
resource "liqo_peer" "rome_to_milan_gpu" {
  provider                  = liqo.rome
  tenant_namespace          = liqo_generate.rome.tenant_namespace
  provider_cluster_id       = liqo_generate.milan.cluster_id
  provider_tenant_namespace = liqo_tenant.rome.tenant_namespace
  api_server_url            = liqo_tenant.rome.api_server_url
  cluster_ca_certificate    = liqo_tenant.rome.cluster_ca_certificate
  client_certificate        = liqo_tenant.rome.client_certificate
  client_key_secret         = liqo_consumer_key.rome.key_secret_name
  resource_slice_name       = "milan-gpu"
  create_virtual_node       = false
  resources                 = { cpu = "1", memory = "2Gi", pods = "20" }
  depends_on                = [liqo_gateway.client]
}

resource "liqo_virtual_node" "gpu" {
  provider            = liqo.rome
  name                = "milan-gpu"
  tenant_namespace    = liqo_peer.rome_to_milan_gpu.tenant_namespace
  provider_cluster_id = liqo_peer.rome_to_milan_gpu.provider_cluster_id
  resource_slice_name = liqo_peer.rome_to_milan_gpu.resource_slice_name
  resources           = liqo_peer.rome_to_milan_gpu.accepted_resources
  labels              = { "example.com/accelerator" = "gpu" }
  annotations         = { "example.com/owner" = "gpu-team" }
  taints              = [{ key = "example.com/gpu", value = "true", effect = "NoSchedule" }]
  node_selector       = { "kubernetes.io/os" = "linux" }
  runtime_class_name  = "gvisor"
  tolerations         = [{ key = "example.com/dedicated", operator = "Equal", value = "liqo", effect = "NoSchedule" }]

  required_node_affinity = [{
    match_expressions = [{ key = "kubernetes.io/os", operator = "In", values = ["linux"] }]
  }]
  preferred_node_affinity = [{
    weight            = 50
    match_expressions = [{ key = "example.com/pool", operator = "Exists" }]
  }]
  storage_classes = ["fast", "slow"]

  vk_options_template       = "liqo/gpu"
  labels_not_reflected      = ["example.com/internal"]
  annotations_not_reflected = ["example.com/audit"]
}

resource "liqo_offload" "placement" {
  provider                = liqo.rome
  namespace               = "placement"
  create_namespace        = true
  pod_offloading_strategy = "Remote"
  depends_on              = [liqo_peer.rome_to_milan, liqo_virtual_node.gpu]
}
