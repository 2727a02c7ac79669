# A peering without networking (src/chain.rs, `without_networking`): the capitalised aliases after `liqo.` become
# the provider and consumer clusters' names; the certificate lifetime's placeholder is the test's to replace. The
# ground's provider blocks come before it all.
resource "liqo_generate" "provider" {
  provider          = liqo.PROVIDER
  remote_cluster_id = "CONSUMER"
}

resource "liqo_generate" "consumer" {
  provider          = liqo.CONSUMER
  remote_cluster_id = "PROVIDER"
}

resource "liqo_consumer_key" "this" {
  provider            = liqo.CONSUMER
  tenant_namespace    = liqo_generate.consumer.tenant_namespace
  provider_cluster_id = liqo_generate.provider.cluster_id
}

resource "liqo_tenant" "this" {
  provider             = liqo.PROVIDER
  tenant_namespace     = liqo_generate.provider.tenant_namespace
  consumer_cluster_id  = liqo_generate.consumer.cluster_id
  csr                  = liqo_consumer_key.this.csr
  certificate_validity = "VALIDITY"
}

resource "liqo_peer" "this" {
  provider                  = liqo.CONSUMER
  tenant_namespace          = liqo_generate.consumer.tenant_namespace
  provider_cluster_id       = liqo_generate.provider.cluster_id
  provider_tenant_namespace = liqo_tenant.this.tenant_namespace
  api_server_url            = liqo_tenant.this.api_server_url
  cluster_ca_certificate    = liqo_tenant.this.cluster_ca_certificate
  client_certificate        = liqo_tenant.this.client_certificate
  client_key_secret         = liqo_consumer_key.this.key_secret_name
  resources                 = { cpu = "2", memory = "4Gi", pods = "50" }
}

output "accepted" {
  value = liqo_peer.this.accepted_resources
}
