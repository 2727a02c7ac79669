# A liqo_generate whose provider block points at milan but names a Liqo namespace with no Liqo in it
# (tests/generate.rs, missing_liqo_and_unreachable_clusters_are_named). The test fills in milan's kubeconfig and the
# remote cluster's ID.
variable "kubeconfig_path" {
  description = "milan's admin kubeconfig."
  type        = string
}

variable "remote_cluster_id" {
  description = "The remote cluster's ID (one per client)."
  type        = string
}

provider "liqo" {
  alias          = "elsewhere"
  liqo_namespace = "no-liqo-here"
  kubernetes = {
    config_path    = var.kubeconfig_path
    config_context = "milan"
  }
}

resource "liqo_generate" "peer" {
  provider          = liqo.elsewhere
  remote_cluster_id = var.remote_cluster_id
}

output "generate" {
  value = liqo_generate.peer
}
