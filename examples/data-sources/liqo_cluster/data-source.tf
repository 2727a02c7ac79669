# This cluster's Liqo identity, e.g. to pass to a peer managed in another Terraform configuration.
data "liqo_cluster" "milan" {
  provider = liqo.milan
}

output "milan_identity" {
  value = {
    cluster_id     = data.liqo_cluster.milan.cluster_id
    pod_cidrs      = data.liqo_cluster.milan.pod_cidrs
    external_cidr  = data.liqo_cluster.milan.external_cidr
    api_server_url = data.liqo_cluster.milan.api_server_url
    liqo_version   = data.liqo_cluster.milan.liqo_version # null when not discoverable
  }
}
