# The liqo blocks of Liqo's "Provision with Terraform" tutorial (liqotech/liqo examples/provision-with-terraform,
# written for the Go provider 0.0.2), in its shape: its kind clusters and Helm releases are left out, and the
# kubeconfig paths its provider blocks took from `kind_cluster` are variables.
variable "rome_kubeconfig" {
  default = "rome.kubeconfig"
}
variable "milan_kubeconfig" {
  default = "milan.kubeconfig"
}

provider "liqo" {
  alias = "rome"
  kubernetes = {
    config_path = var.rome_kubeconfig
  }
}

provider "liqo" {
  alias = "milan"
  kubernetes = {
    config_path = var.milan_kubeconfig
  }
}

resource "liqo_generate" "generate" {
  provider = liqo.milan
}

resource "liqo_peer" "peer" {
  provider        = liqo.rome
  cluster_id      = liqo_generate.generate.cluster_id
  cluster_name    = liqo_generate.generate.cluster_name
  cluster_authurl = liqo_generate.generate.auth_ep
  cluster_token   = liqo_generate.generate.local_token
}

resource "liqo_offload" "offload" {
  depends_on = [liqo_peer.peer]
  provider   = liqo.rome
  namespace  = "liqo-demo"
}
