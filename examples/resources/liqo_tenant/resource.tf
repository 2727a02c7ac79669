# Authentication of the consumer cluster "rome" on the provider cluster "milan".
# liqo_tenant runs with the provider block of the PROVIDER cluster.

# The tenant namespace on milan for rome (liqo_tenant does not create it).
resource "liqo_generate" "milan" {
  provider          = liqo.milan
  remote_cluster_id = liqo_generate.rome.cluster_id
}

# rome's control-plane key, made on rome: only its CSR reaches milan (see the liqo_consumer_key example).
resource "liqo_consumer_key" "rome" {
  provider            = liqo.rome
  tenant_namespace    = liqo_generate.rome.tenant_namespace
  provider_cluster_id = liqo_generate.milan.cluster_id
}

resource "liqo_tenant" "rome" {
  provider            = liqo.milan
  tenant_namespace    = liqo_generate.milan.tenant_namespace
  consumer_cluster_id = liqo_generate.rome.cluster_id
  csr                 = liqo_consumer_key.rome.csr # public: the key never leaves rome

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

# The consumer side joins the signed certificate to its key inside rome; the references also order destroy
# correctly: the peering (and its ResourceSlices) is removed before the tenant.
resource "liqo_peer" "rome_to_milan" {
  provider                  = liqo.rome
  tenant_namespace          = liqo_generate.rome.tenant_namespace
  provider_cluster_id       = liqo_generate.milan.cluster_id
  provider_tenant_namespace = liqo_tenant.rome.tenant_namespace
  api_server_url            = liqo_tenant.rome.api_server_url
  cluster_ca_certificate    = liqo_tenant.rome.cluster_ca_certificate
  client_certificate        = liqo_tenant.rome.client_certificate
  client_key_secret         = liqo_consumer_key.rome.key_secret_name
  resources                 = { cpu = "4", memory = "8Gi", pods = "110" }
}

output "rome_certificate_expires_at" {
  value = liqo_tenant.rome.certificate_expires_at
}
