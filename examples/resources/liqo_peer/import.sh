# Import ID: <tenant_namespace>/<resource slice name> (the ResourceSlice on the consumer cluster).
# The public parts (api_server_url, cluster_ca_certificate, client_certificate) are read back from the identity
# Secret kubeconfig-controlplane-<provider cluster id> in the same namespace; the private key never is.
# client_key_secret is taken to be liqo_consumer_key's Secret, controlplane-key-<provider cluster id>.
terraform import liqo_peer.rome_to_milan liqo-tenant-milan/milan

# A `timeouts` block is configuration only, not read back by an import: the next plan adds it, an in-place update
# that changes nothing on the cluster.
