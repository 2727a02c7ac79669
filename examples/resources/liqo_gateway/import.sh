# Import ID: <tenant_namespace>/<gateway name>, where the gateway (GatewayServer or GatewayClient), the PublicKey and
# the Configuration are all named after the peer's cluster ID (liqoctl's and this provider's naming).
terraform import liqo_gateway.server liqo-tenant-rome/rome   # on milan: the GatewayServer for rome
terraform import liqo_gateway.client liqo-tenant-milan/milan # on rome: the GatewayClient for milan

# A `timeouts` block is configuration only, not read back by an import: the next plan adds it, an in-place update
# that changes nothing on the cluster.
