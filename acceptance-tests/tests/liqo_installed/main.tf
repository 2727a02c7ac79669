# Liqo installed and peered in one configuration (tests/liqo_installed.rs): the clusters (terraform_data stands in
# for kind_cluster or a cloud module, so both provider blocks are unknown at the first plan), Liqo's chart installed
# on each by Helm, then the peering module and an offloaded namespace. Liqo's tutorial installs the chart with
# hashicorp/helm's helm_release; here Helm's own command line does the same `helm upgrade --install` (see the test
# for why). The module depends on both installs: it is created once Liqo is installed, and destroyed before Liqo
# is uninstalled (Liqo's finalizers need its controllers).
terraform {
  required_providers {
    liqo = {
      source = "liqotech/liqo"
    }
  }
}

variable "clusters" {
  description = "Per cluster: its kubeconfig and the Helm values file of its Liqo."
  type        = map(object({ kubeconfig = string, values = string }))
}

variable "helm" {
  description = "The helm command."
  type        = string
}

variable "liqo_chart" {
  description = "Liqo's chart: a directory, or liqo/liqo with the liqo repository added."
  type        = string
}

resource "terraform_data" "cluster" {
  for_each = var.clusters
  input    = each.value.kubeconfig
}

resource "terraform_data" "liqo" {
  for_each = var.clusters
  input = {
    kubeconfig = terraform_data.cluster[each.key].output
    helm       = var.helm
    chart      = var.liqo_chart
    values     = each.value.values
  }

  provisioner "local-exec" {
    command = "\"$HELM\" upgrade --install liqo \"$CHART\" --namespace liqo --create-namespace --values \"$VALUES\" --kubeconfig \"$KUBECONFIG\""
    environment = {
      HELM       = self.input.helm
      CHART      = self.input.chart
      VALUES     = self.input.values
      KUBECONFIG = self.input.kubeconfig
    }
  }

  provisioner "local-exec" {
    when    = destroy
    command = "\"$HELM\" uninstall liqo --namespace liqo --wait --kubeconfig \"$KUBECONFIG\""
    environment = {
      HELM       = self.input.helm
      KUBECONFIG = self.input.kubeconfig
    }
  }
}

provider "liqo" {
  alias      = "milan"
  kubernetes = { config_path = terraform_data.cluster["milan"].output }
}

provider "liqo" {
  alias      = "rome"
  kubernetes = { config_path = terraform_data.cluster["rome"].output }
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

  depends_on = [terraform_data.liqo]
}

output "virtual_node_name" {
  value = module.rome_to_milan.virtual_node_name
}
