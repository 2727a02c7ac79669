# Hub and spoke: one provider cluster (milan) shares resources with three consumers (rome, turin, naples).
# Providers cannot use for_each, so each consumer has its own provider block and module call.
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
  description = "Path of a kubeconfig for the consumer cluster rome."
  type        = string
}

variable "turin_kubeconfig" {
  description = "Path of a kubeconfig for the consumer cluster turin."
  type        = string
}

variable "naples_kubeconfig" {
  description = "Path of a kubeconfig for the consumer cluster naples."
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

provider "liqo" {
  alias      = "turin"
  kubernetes = { config_path = var.turin_kubeconfig }
}

provider "liqo" {
  alias      = "naples"
  kubernetes = { config_path = var.naples_kubeconfig }
}

module "rome" {
  source    = "../modules/peering"
  providers = { liqo.provider = liqo.milan, liqo.consumer = liqo.rome }
  resources = { cpu = "2", memory = "4Gi", pods = "50" }
}

module "turin" {
  source    = "../modules/peering"
  providers = { liqo.provider = liqo.milan, liqo.consumer = liqo.turin }
  resources = { cpu = "2", memory = "4Gi", pods = "50" }
}

module "naples" {
  source    = "../modules/peering"
  providers = { liqo.provider = liqo.milan, liqo.consumer = liqo.naples }
  resources = { cpu = "2", memory = "4Gi", pods = "50" }
}

output "virtual_nodes" {
  value = {
    rome   = module.rome.virtual_node_name
    turin  = module.turin.virtual_node_name
    naples = module.naples.virtual_node_name
  }
}
