# Import ID: <tenant_namespace>/<provider cluster id> (the namespace of the key Secret on the consumer cluster, and
# the provider it is for). The CSR is read back from the Secret controlplane-key-<provider cluster id>.
terraform import liqo_consumer_key.rome liqo-tenant-milan/milan
