# The control-plane key of the consumer cluster "rome" for the provider cluster "milan".
# liqo_consumer_key runs with the provider block of the CONSUMER cluster.
#
# The private key is made by the provider plugin and written straight to a Secret in rome's tenant namespace for
# milan; only the certificate signing request (public) is an output. milan's liqo_tenant signs it, and rome's
# liqo_peer joins the certificate to the key inside rome. No private key enters the Terraform state.
resource "liqo_consumer_key" "rome" {
  provider            = liqo.rome
  tenant_namespace    = liqo_generate.rome.tenant_namespace
  provider_cluster_id = liqo_generate.milan.cluster_id
}

# To rotate the key: terraform apply -replace=liqo_consumer_key.rome
# (a new key and CSR; liqo_tenant signs it and liqo_peer rewrites the identity Secret in the same apply).

output "rome_csr" {
  value = liqo_consumer_key.rome.csr
}
