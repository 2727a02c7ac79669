# A liqo_generate on milan (tests/generate.rs, missing_liqo_and_unreachable_clusters_are_named), whose provider
# block the test points at a kubeconfig context that does not exist.
resource "liqo_generate" "peer" {
  provider          = liqo.milan
  remote_cluster_id = "x"
}
