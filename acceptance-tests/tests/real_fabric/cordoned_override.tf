# tests/real_fabric.rs, `a_cordoned_tenant_denies_the_slice_with_liqos_reason`: an override file (Terraform merges
# it into src/chain/full_chain.tf's block, and fails if that block is gone) admitting rome with a cordoned tenant.
# Nothing is filled in.
resource "liqo_tenant" "rome" {
  tenant_condition = "Cordoned"
}
