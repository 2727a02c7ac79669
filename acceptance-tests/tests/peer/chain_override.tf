# What the steps of tests/peer.rs change in the full chain (src/chain/full_chain.tf): Terraform merges each block
# here into the chain's block of the same address (an override file; a block the chain no longer has is an error).
# With the variables of peer.tf left null, every argument here has the chain's own value.
resource "liqo_tenant" "rome" {
  tenant_condition = var.tenant_condition
}

resource "liqo_gateway" "client" {
  remote_public_key   = var.client_remote_public_key == null ? liqo_generate.milan.wireguard_public_key : var.client_remote_public_key
  wait_for_connection = var.client_wait_for_connection
}

resource "liqo_peer" "rome_to_milan" {
  dynamic "timeouts" {
    for_each = var.peer_create_timeout == null ? [] : [var.peer_create_timeout]
    content {
      create = timeouts.value
    }
  }
}
