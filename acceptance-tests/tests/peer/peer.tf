# The peer's outputs, and the variables of chain_override.tf and brought_kubeconfig_override.tf (tests/peer.rs,
# beside the full chain of src/chain/full_chain.tf). The test fills in the variables for the steps that cordon the
# tenant, break the tunnel or bring a kubeconfig; left null, the chain is the contract's example as it is.
output "virtual_node_name" {
  value = liqo_peer.rome_to_milan.virtual_node_name
}

output "accepted_resources" {
  value = liqo_peer.rome_to_milan.accepted_resources
}

variable "tenant_condition" {
  description = "liqo_tenant.rome's tenant_condition; null = not set."
  type        = string
  default     = null
}

variable "client_remote_public_key" {
  description = "The WireGuard key liqo_gateway.client trusts for milan; null = milan's real key."
  type        = string
  default     = null
}

variable "client_wait_for_connection" {
  description = "liqo_gateway.client's wait_for_connection; null = not set."
  type        = bool
  default     = null
}

variable "peer_create_timeout" {
  description = "liqo_peer.rome_to_milan's create timeout; null = no timeouts block."
  type        = string
  default     = null
}

variable "kubeconfig_wo_version" {
  description = "liqo_peer.rome_to_milan's kubeconfig_wo_version while brought_kubeconfig_override.tf is in place."
  type        = number
  default     = null
}
