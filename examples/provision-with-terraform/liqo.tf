# Liqo on each cluster: `helm install liqo liqo/liqo --namespace liqo --version v1.2.0` with the values
# `liqoctl install kind` passes (the cluster's ID and CIDRs; kind's fabric setting).
#
# The namespace is a resource of its own, not `create_namespace = true`: Helm never deletes a namespace it created,
# and with it `terraform destroy` removes every trace of Liqo. On destroy Helm first runs Liqo's uninstaller (the
# chart's pre-delete Job), which needs the peering gone: the peering module depends on both releases, so it is
# destroyed before them.
locals {
  liqo_settings = {
    for name, cluster in var.clusters : name => [
      { name = "discovery.config.clusterID", value = name },
      { name = "ipam.podCIDR", value = cluster.pod_cidr },
      { name = "ipam.serviceCIDR", value = cluster.service_cidr },
      { name = "networking.fabric.config.gatewayMasqueradeBypass", value = "true" },
    ]
  }
  liqo_values = { for name, _ in var.clusters : name => [for f in lookup(var.liqo_values_files, name, []) : file(f)] }
}

resource "kubernetes_namespace_v1" "liqo_milan" {
  provider = kubernetes.milan
  metadata {
    name = "liqo"
  }
}

resource "kubernetes_namespace_v1" "liqo_rome" {
  provider = kubernetes.rome
  metadata {
    name = "liqo"
  }
}

resource "helm_release" "liqo_milan" {
  provider   = helm.milan
  name       = "liqo"
  repository = var.liqo_repository
  chart      = var.liqo_chart
  version    = var.liqo_version
  namespace  = kubernetes_namespace_v1.liqo_milan.metadata[0].name
  values     = local.liqo_values["milan"]
  set        = local.liqo_settings["milan"]
}

resource "helm_release" "liqo_rome" {
  provider   = helm.rome
  name       = "liqo"
  repository = var.liqo_repository
  chart      = var.liqo_chart
  version    = var.liqo_version
  namespace  = kubernetes_namespace_v1.liqo_rome.metadata[0].name
  values     = local.liqo_values["rome"]
  set        = local.liqo_settings["rome"]
}
