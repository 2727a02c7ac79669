# Import ID: the name of the tenant namespace on the resource's cluster. The remote cluster ID is read from the
# namespace's liqo.io/remote-cluster-id label; the namespace must hold the WireGuard key Secret gw-keys.
terraform import liqo_generate.milan liqo-tenant-rome

# An imported namespace counts as adopted unless it carries app.kubernetes.io/managed-by=terraform-provider-liqo
# (set when this provider created it): adopted namespaces are kept on destroy.
