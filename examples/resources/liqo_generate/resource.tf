# Each cluster prepares its side of the peering with the other: a tenant namespace for the peer and a WireGuard
# key pair (the private key is written straight to the cluster; only the public key is an output).
resource "liqo_generate" "milan" {
  provider          = liqo.milan
  remote_cluster_id = liqo_generate.rome.cluster_id # rome's ID, read from rome's Liqo installation
}

resource "liqo_generate" "rome" {
  provider          = liqo.rome
  remote_cluster_id = "milan" # a literal works too (the resources would otherwise reference each other)

  # tenant_namespace = "liqo-tenant-milan"   # default: liqo-tenant-<remote_cluster_id>
  timeouts {
    delete = "10m"
  }
}

# What each side hands to the other: the peer's liqo_gateway takes the CIDRs and the public key, liqo_tenant and
# liqo_peer take the cluster IDs and tenant namespaces.
output "milan" {
  value = {
    cluster_id           = liqo_generate.milan.cluster_id
    pod_cidrs            = liqo_generate.milan.pod_cidrs
    external_cidr        = liqo_generate.milan.external_cidr
    api_server_url       = liqo_generate.milan.api_server_url
    wireguard_public_key = liqo_generate.milan.wireguard_public_key
    tenant_namespace     = liqo_generate.milan.tenant_namespace
  }
}
