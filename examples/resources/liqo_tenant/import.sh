# Import ID: <tenant_namespace>/<consumer cluster id> (the Tenant's namespace and name on the provider cluster).
terraform import liqo_tenant.rome liqo-tenant-rome/rome

# The issued certificate is not kept on the cluster, so the next plan signs the configured `csr` again: an in-place
# update of `client_certificate` (and `cluster_ca_certificate`, `certificate_expires_at`), and of the liqo_peer that
# takes them, nothing else. Apply it once.
