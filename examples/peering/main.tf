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

provider "liqo" {
  alias      = "milan"
  kubernetes = { config_path = var.milan_kubeconfig }
}

provider "liqo" {
  alias      = "rome"
  kubernetes = { config_path = var.rome_kubeconfig }
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
