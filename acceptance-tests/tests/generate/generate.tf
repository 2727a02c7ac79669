# One liqo_generate on milan with every output exported (tests/generate.rs: the lifecycle, adoption and held
# namespace tests). The test fills in the remote cluster's ID and, per test, the tenant namespace to adopt and the
# delete timeout.
variable "remote_cluster_id" {
  description = "The remote cluster's ID (one per test and client, so that no run sees what another left behind)."
  type        = string
}

variable "tenant_namespace" {
  description = "liqo_generate's tenant_namespace; null = not set (Liqo's default name)."
  type        = string
  default     = null
}

variable "delete_timeout" {
  description = "liqo_generate's delete timeout; null = no timeouts block."
  type        = string
  default     = null
}

resource "liqo_generate" "peer" {
  provider          = liqo.milan
  remote_cluster_id = var.remote_cluster_id
  tenant_namespace  = var.tenant_namespace

  dynamic "timeouts" {
    for_each = var.delete_timeout == null ? [] : [var.delete_timeout]
    content {
      delete = timeouts.value
    }
  }
}

output "generate" {
  value = liqo_generate.peer
}
