# One declarative peering, as in Liqo's documentation: `rome` (consumer) gets a virtual node backed by `milan`
# (provider). Point the two variables at kubeconfigs with cluster-admin rights on each cluster.
terraform {
  required_version = ">= 1.0.5"
  required_providers {
    liqo = {
      source = "liqotech/liqo"
    }
  }
}

variable "milan_kubeconfig" {
  description = "Path of a kubeconfig for the provider cluster (milan)."
  type        = string
}

variable "rome_kubeconfig" {
  description = "Path of a kubeconfig for the consumer cluster (rome)."
  type        = string
}

# Only to destroy the peering when one of the two clusters is gone for good (deleted, or cut off for ever): which
# one (`milan` or `rome`) and its Liqo cluster ID, e.g.
#   terraform destroy -var 'gone_for_good={cluster="milan", cluster_id="<milan cluster ID>"}'
# The other cluster is then unpeered as `liqoctl force unpeer` does; see docs/guides/day-2.md.
variable "gone_for_good" {
  description = "The cluster (milan or rome) that is gone for good, and its Liqo cluster ID; null while both answer."
  type        = object({ cluster = string, cluster_id = string })
  default     = null
}

locals {
  gone = var.gone_for_good == null ? "" : var.gone_for_good.cluster
}

provider "liqo" {
  alias                         = "milan"
  kubernetes                    = { config_path = var.milan_kubeconfig }
  permanently_unreachable       = local.gone == "milan"
  permanently_unreachable_peers = local.gone == "rome" ? [var.gone_for_good.cluster_id] : []
}

provider "liqo" {
  alias                         = "rome"
  kubernetes                    = { config_path = var.rome_kubeconfig }
  permanently_unreachable       = local.gone == "rome"
  permanently_unreachable_peers = local.gone == "milan" ? [var.gone_for_good.cluster_id] : []
}

module "rome_to_milan" {
  source = "../modules/peering"
  providers = {
    liqo.provider = liqo.milan
    liqo.consumer = liqo.rome
  }

  resources                 = { cpu = "4", memory = "8Gi", pods = "110" }
  offload_namespaces        = ["liqo-demo"]
  create_offload_namespaces = true
}

output "virtual_node_name" {
  value = module.rome_to_milan.virtual_node_name
}

output "accepted_resources" {
  value = module.rome_to_milan.accepted_resources
}

output "gateway_endpoint" {
  value = module.rome_to_milan.gateway_endpoint
}

output "status" {
  value = module.rome_to_milan.status
}
