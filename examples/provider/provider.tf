terraform {
  required_providers {
    liqo = {
      source = "liqotech/liqo"
    }
  }
}

# One provider block per cluster, told apart by `alias`; every liqo_* resource names the cluster it manages
# with `provider = liqo.<alias>`.

# milan shares its resources (the Liqo "provider" cluster): a context of a kubeconfig file.
provider "liqo" {
  alias = "milan"
  kubernetes = {
    config_path    = "~/.kube/milan.kubeconfig"
    config_context = "milan-admin"
  }
  # liqo_namespace = "liqo"   # where Liqo is installed (default)
}

# rome consumes them: API server address and credentials given directly, e.g. from the outputs of the module
# that created the cluster (PEM text; kubeconfig `*-data` fields need base64decode()).
provider "liqo" {
  alias = "rome"
  kubernetes = {
    host                   = var.rome_host
    cluster_ca_certificate = base64decode(var.rome_ca_data)
    client_certificate     = base64decode(var.rome_client_certificate_data)
    client_key             = base64decode(var.rome_client_key_data)
  }
}

# Other ways to authenticate, as in the hashicorp/kubernetes provider:
#   kubernetes = { host = "https://203.0.113.10:6443", cluster_ca_certificate = file("ca.pem"), token = var.token }
#   kubernetes = {
#     host                   = module.eks.cluster_endpoint
#     cluster_ca_certificate = base64decode(module.eks.cluster_certificate_authority_data)
#     exec = {
#       api_version = "client.authentication.k8s.io/v1beta1"
#       command     = "aws"
#       args        = ["eks", "get-token", "--cluster-name", module.eks.cluster_name]
#     }
#   }
# Every connection attribute also falls back to a KUBE_* environment variable (KUBE_CONFIG_PATH, KUBE_CTX,
# KUBE_HOST, KUBE_TOKEN, ...). The KUBECONFIG variable is NOT read: name the file with config_path.

variable "rome_host" {
  type = string
}

variable "rome_ca_data" {
  type = string
}

variable "rome_client_certificate_data" {
  type = string
}

variable "rome_client_key_data" {
  type      = string
  sensitive = true
}
