# tests/real_fabric.rs, `a_wrong_remote_public_key_fails_the_apply_with_the_real_connection_error`: an override
# file (Terraform merges it into src/chain/full_chain.tf's block, and fails if that block is gone) giving rome's
# gateway client a public key that is not milan's. The key is the variable of stranger_key.tf.
resource "liqo_gateway" "client" {
  remote_public_key = var.stranger_public_key
}
