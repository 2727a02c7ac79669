# A liqo_generate whose provider block points at a loopback port nobody listens on (tests/generate.rs,
# missing_liqo_and_unreachable_clusters_are_named). The test fills in the port and the remote cluster's ID.
variable "api_server_port" {
  description = "A closed loopback port, where the provider block says the API server is."
  type        = number
}

variable "remote_cluster_id" {
  description = "The remote cluster's ID (one per client)."
  type        = string
}

provider "liqo" {
  alias = "nowhere"
  kubernetes = {
    host     = "https://127.0.0.1:${var.api_server_port}"
    token    = "unused"
    insecure = true
  }
}

resource "liqo_generate" "peer" {
  provider          = liqo.nowhere
  remote_cluster_id = var.remote_cluster_id
}

output "generate" {
  value = liqo_generate.peer
}
