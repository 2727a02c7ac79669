# The offloadings of tests/offload.rs, appended to the full chain (src/chain/full_chain.tf): liqo_offload.demo
# (creating its namespace), liqo_offload.own on the namespace the test creates, and, while the test asks for it,
# liqo_offload.clash. The test fills in the variables below step by step; null leaves the attribute unset.
variable "pod_offloading_strategy" {
  description = "liqo_offload.demo's pod_offloading_strategy; null = not set."
  type        = string
  default     = null
}

variable "selected_clusters" {
  description = "Cluster IDs liqo_offload.demo's cluster_selector asks for; null = no cluster_selector."
  type        = list(string)
  default     = null
}

variable "namespace_mapping_strategy" {
  description = "liqo_offload.demo's namespace_mapping_strategy; null = not set."
  type        = string
  default     = null
}

variable "clash" {
  description = "Whether liqo_offload.clash exists: a SelectedName offloading whose remote name is taken on milan."
  type        = bool
  default     = false
}

resource "liqo_offload" "demo" {
  provider                   = liqo.rome
  namespace                  = "liqo-demo"
  create_namespace           = true
  pod_offloading_strategy    = var.pod_offloading_strategy
  namespace_mapping_strategy = var.namespace_mapping_strategy
  cluster_selector = var.selected_clusters == null ? null : [{
    match_expressions = [{ key = "liqo.io/remote-cluster-id", operator = "In", values = var.selected_clusters }]
  }]
  depends_on = [liqo_peer.rome_to_milan]
}

resource "liqo_offload" "own" {
  provider   = liqo.rome
  namespace  = "user-owned"
  depends_on = [liqo_peer.rome_to_milan]
}

# The test creates the namespace taken-on-milan on milan first, so Liqo cannot create it there.
resource "liqo_offload" "clash" {
  count                      = var.clash ? 1 : 0
  provider                   = liqo.rome
  namespace                  = "liqo-clash"
  create_namespace           = true
  namespace_mapping_strategy = "SelectedName"
  remote_namespace_name      = "taken-on-milan"
  depends_on                 = [liqo_peer.rome_to_milan]
}
