# Import ID: <tenant_namespace>/<resource slice name> (the ResourceSlice on the consumer cluster).
# The kubeconfig is read back from the identity Secret kubeconfig-controlplane-<provider cluster id> in the same
# namespace and stored in the state as a sensitive value.
terraform import liqo_peer.rome_to_milan liqo-tenant-milan/milan
