# The peer bringing its own kubeconfig (tests/peer.rs, brought_kubeconfig): merged into the full chain's liqo_peer
# (src/chain/full_chain.tf) while the test has it in place. The issued-certificate flow's four attributes are unset
# (null) for `kubeconfig_wo`, read from byo.kubeconfig (written by the test); the test fills in its version. This is a
# file of its own rather than conditionals on a variable: while validating, a variable is unknown, and the provider
# takes unknown values for both flows as both being set.
resource "liqo_peer" "rome_to_milan" {
  api_server_url         = null
  cluster_ca_certificate = null
  client_certificate     = null
  client_key_secret      = null
  kubeconfig_wo          = file("byo.kubeconfig")
  kubeconfig_wo_version  = var.kubeconfig_wo_version
}
