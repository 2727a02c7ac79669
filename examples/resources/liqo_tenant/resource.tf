# Authentication of the consumer cluster "rome" on the provider cluster "milan".
# liqo_tenant runs with the provider block of the PROVIDER cluster.

# The tenant namespace on milan for rome (liqo_tenant does not create it).
resource "liqo_generate" "milan" {
  provider          = liqo.milan
  remote_cluster_id = liqo_generate.rome.cluster_id
}

resource "liqo_tenant" "rome" {
  provider            = liqo.milan
  tenant_namespace    = liqo_generate.milan.tenant_namespace
  consumer_cluster_id = liqo_generate.rome.cluster_id

  # Optional:
  # tenant_condition     = "Cordoned"                  # Active (default) | Cordoned | Drained, updated in place
  # api_server_url       = "https://203.0.113.10:6443" # default: the address the liqo.milan provider block uses
  # certificate_validity = "8760h"                     # requested certificate lifetime
  # renew_before         = "720h"                      # the plan proposes a new certificate this long before expiry

  timeouts {
    create = "5m"
    delete = "5m"
  }
}

# The consumer side uses the credentials through the reference, which also orders destroy correctly:
# the peering (and its ResourceSlices) is removed before the tenant.
resource "liqo_peer" "rome_to_milan" {
  provider                  = liqo.rome
  tenant_namespace          = liqo_generate.rome.tenant_namespace
  provider_cluster_id       = liqo_generate.milan.cluster_id
  provider_tenant_namespace = liqo_tenant.rome.tenant_namespace
  kubeconfig                = liqo_tenant.rome.kubeconfig
  resources                 = { cpu = "4", memory = "8Gi", pods = "110" }
}

output "rome_certificate_expires_at" {
  value = liqo_tenant.rome.certificate_expires_at
}
