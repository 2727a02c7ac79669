# A provider block whose kubeconfig path comes from a resource created in the same apply, so it is unknown while
# planning, as when the cluster itself is created there (tests/generate.rs,
# a_provider_block_known_only_at_apply_works_and_explains_two_step_applies). The test fills in the path (changing
# its spelling to make the block unknown again) and the remote cluster's ID.
variable "kubeconfig_path" {
  description = "milan's admin kubeconfig, passed through terraform_data.cluster."
  type        = string
}

variable "remote_cluster_id" {
  description = "The remote cluster's ID (one per client)."
  type        = string
}

resource "terraform_data" "cluster" {
  input = var.kubeconfig_path
}

provider "liqo" {
  alias = "late"
  kubernetes = {
    config_path    = terraform_data.cluster.output
    config_context = "milan"
  }
}

resource "liqo_generate" "peer" {
  provider          = liqo.late
  remote_cluster_id = var.remote_cluster_id
}
