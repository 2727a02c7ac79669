# One block of each provider per cluster, all configured from the cluster's kubeconfig.
provider "kubernetes" {
  alias       = "milan"
  config_path = local.kubeconfig["milan"]
}

provider "kubernetes" {
  alias       = "rome"
  config_path = local.kubeconfig["rome"]
}

provider "helm" {
  alias      = "milan"
  kubernetes = { config_path = local.kubeconfig["milan"] }
}

provider "helm" {
  alias      = "rome"
  kubernetes = { config_path = local.kubeconfig["rome"] }
}

provider "liqo" {
  alias      = "milan"
  kubernetes = { config_path = local.kubeconfig["milan"] }
}

provider "liqo" {
  alias      = "rome"
  kubernetes = { config_path = local.kubeconfig["rome"] }
}
