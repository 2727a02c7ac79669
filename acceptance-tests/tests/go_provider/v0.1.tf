# The resources as the Go provider 0.1.x documents them (liqotech/terraform-provider-liqo, examples/resources):
# liqo_peer wraps `liqoctl peer`, liqo_offload names its selector `cluster_selector_terms`.
provider "liqo" {
  kubernetes = {
    config_path = "kubeconfig"
  }
}

resource "liqo_peer" "basic_peer" {
  remote_kubeconfig = "/path/to/remote/kubeconfig"
  cpu               = "4"
}

resource "liqo_offload" "offload" {
  namespace                  = "liqo-demo"
  pod_offloading_strategy    = "LocalAndRemote"
  namespace_mapping_strategy = "DefaultName"
  cluster_selector_terms = [
    {
      match_expressions = [
        {
          key      = "region"
          operator = "In"
          values   = ["europe"]
        },
      ]
    }
  ]
}
