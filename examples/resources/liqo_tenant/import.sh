# Import ID: <tenant_namespace>/<consumer cluster id> (the Tenant's namespace and name on the provider cluster).
terraform import liqo_tenant.rome liqo-tenant-rome/rome

# The private key of an existing certificate cannot be read back from the cluster, so the next plan proposes
# new credentials for `kubeconfig` and `certificate_expires_at` (and nothing else). Apply it once.
