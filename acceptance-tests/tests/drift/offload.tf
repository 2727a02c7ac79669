# tests/drift.rs: a liqo_offload on rome beside the full chain (src/chain/full_chain.tf), so that its
# NamespaceOffloading is one of the objects deleted and changed out of band. The test fills in the namespace.
variable "offloaded_namespace" {
  description = "Namespace rome offloads to milan (created by liqo_offload)."
  type        = string
}

resource "liqo_offload" "demo" {
  provider                = liqo.rome
  namespace               = var.offloaded_namespace
  create_namespace        = true
  pod_offloading_strategy = "LocalAndRemote"
  depends_on              = [liqo_peer.rome_to_milan]
}
