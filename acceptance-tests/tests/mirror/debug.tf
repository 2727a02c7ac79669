# tests/mirror.rs, `the_debug_mode_line_attaches_every_cli`: a configuration that init and validate can only load
# through a provider attached with TF_REATTACH_PROVIDERS. The kubeconfig path does not exist: validate never
# connects. The test puts liqo_acceptance::tf::required_providers before it; nothing is filled in.
provider "liqo" {
  kubernetes = { config_path = "/nonexistent/kubeconfig" }
}

resource "liqo_generate" "rome" {
  remote_cluster_id = "rome"
}
