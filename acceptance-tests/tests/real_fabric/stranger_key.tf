# tests/real_fabric.rs, `a_wrong_remote_public_key_fails_the_apply_with_the_real_connection_error`: the key that
# stranger_key_override.tf gives rome's gateway. The test fills in a fresh WireGuard public key of no cluster.
variable "stranger_public_key" {
  description = "A WireGuard public key that belongs to no cluster of the ground."
  type        = string
}
