# Offloads the namespace "liqo-demo" of the consumer cluster "rome" to its virtual nodes.
# liqo_offload runs with the provider block of the CONSUMER cluster.

# The namespace belongs to you: create it with the kubernetes provider (or `kubectl create namespace liqo-demo`),
# or let liqo_offload create and delete it with `create_namespace = true` (see below).
resource "kubernetes_namespace" "demo" {
  metadata {
    name = "liqo-demo"
  }

  # Liqo labels the namespaces it offloads; without this, every later plan would propose removing the label.
  lifecycle {
    ignore_changes = [metadata[0].labels["liqo.io/scheduling-enabled"]]
  }
}

resource "liqo_offload" "demo" {
  provider                = liqo.rome
  namespace               = kubernetes_namespace.demo.metadata[0].name
  pod_offloading_strategy = "LocalAndRemote" # LocalAndRemote (default) | Local | Remote, updated in place

  # Optional, replace the resource when changed (Liqo makes them immutable):
  # namespace_mapping_strategy = "SelectedName"  # DefaultName (default) | EnforceSameName | SelectedName
  # remote_namespace_name      = "demo-on-milan" # only (and required) with SelectedName

  # Optional, updated in place; omit it to offload to every virtual node.
  cluster_selector = [{
    match_expressions = [{
      key      = "liqo.io/remote-cluster-id"
      operator = "In"
      values   = [liqo_generate.milan.cluster_id]
    }]
  }]

  # The virtual node must exist first; pods created before the offloading stay Pending, so workloads should
  # depend on this resource (or be created after it).
  depends_on = [liqo_peer.rome_to_milan]
}

# Without the kubernetes provider: liqo_offload creates the namespace and deletes it (with its content) on destroy.
resource "liqo_offload" "scratch" {
  provider         = liqo.rome
  namespace        = "liqo-scratch"
  create_namespace = true
  depends_on       = [liqo_peer.rome_to_milan]
}

output "remote_namespace_name" {
  value = liqo_offload.demo.remote_namespace_name
}
