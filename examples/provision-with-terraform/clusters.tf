# The two clusters. On your machine kind makes them, as in Liqo's tutorial (provider tehcyx/kind, added to
# versions.tf as `kind = { source = "tehcyx/kind" }`):
#
#   resource "kind_cluster" "this" {
#     for_each       = var.clusters
#     name           = each.key
#     node_image     = "kindest/node:v1.34.0"
#     wait_for_ready = true
#     kind_config {
#       kind        = "Cluster"
#       api_version = "kind.x-k8s.io/v1alpha4"
#       networking {
#         pod_subnet     = each.value.pod_cidr
#         service_subnet = each.value.service_cidr
#       }
#       node {
#         role = "control-plane"
#       }
#       node {
#         role = "worker"
#       }
#     }
#   }
#
#   locals {
#     kubeconfig = { for name, cluster in kind_cluster.this : name => cluster.kubeconfig_path }
#   }
#
# Here terraform_data stands in for kind_cluster: this project's tests run the example on clusters of their own
# (real API servers, no container runtime), whose kubeconfigs var.kubeconfigs names. Like kind_cluster, it leaves
# every kubeconfig path unknown until apply, so the provider blocks are configured once the clusters exist.
resource "terraform_data" "cluster" {
  for_each = var.clusters
  input    = var.kubeconfigs[each.key]
}

locals {
  kubeconfig = { for name, cluster in terraform_data.cluster : name => cluster.output }
}
