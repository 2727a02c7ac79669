# The clusters, their provider blocks and the peering in one configuration (tests/one_run.rs). terraform_data stands
# in for the resources that create the clusters (kind_cluster, a cloud module): their kubeconfig path is known only
# once they are applied, so both provider blocks are unknown while the first plan is made.
terraform {
  required_providers {
    liqo = {
      source = "liqotech/liqo"
    }
  }
}

variable "milan_kubeconfig" {
  type = string
}

variable "rome_kubeconfig" {
  type = string
}

resource "terraform_data" "milan" {
  input = var.milan_kubeconfig
}

resource "terraform_data" "rome" {
  input = var.rome_kubeconfig
}

provider "liqo" {
  alias      = "milan"
  kubernetes = { config_path = terraform_data.milan.output }
}

provider "liqo" {
  alias      = "rome"
  kubernetes = { config_path = terraform_data.rome.output }
}

module "rome_to_milan" {
  source = "./modules/peering"
  providers = {
    liqo.provider = liqo.milan
    liqo.consumer = liqo.rome
  }
  resources                 = { cpu = "2", memory = "4Gi", pods = "50" }
  offload_namespaces        = ["liqo-demo"]
  create_offload_namespaces = true
  # The virtual node made by liqo_virtual_node, with a label workloads select and where its pods land on milan.
  virtual_node = {
    labels        = { "example.com/pool" = "one-run" }
    node_selector = { "kubernetes.io/os" = "linux" }
  }

  depends_on = [terraform_data.milan, terraform_data.rome]
}

output "virtual_node_name" {
  value = module.rome_to_milan.virtual_node_name
}
