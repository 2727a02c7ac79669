# The network half of a peering between the provider cluster "milan" and the consumer cluster "rome": milan runs
# the WireGuard server, rome dials it. Each liqo_gateway runs with the provider block of its own cluster and takes
# the PEER's facts from the peer's liqo_generate (see the liqo_generate example).

resource "liqo_gateway" "server" {
  provider             = liqo.milan
  tenant_namespace     = liqo_generate.milan.tenant_namespace # milan's namespace for rome
  remote_cluster_id    = liqo_generate.rome.cluster_id
  remote_pod_cidrs     = liqo_generate.rome.pod_cidrs
  remote_external_cidr = liqo_generate.rome.external_cidr
  remote_public_key    = liqo_generate.rome.wireguard_public_key
  key_secret_name      = liqo_generate.milan.key_secret_name # milan's own keys ("gw-keys")

  server = {
    service_type = "NodePort" # NodePort | LoadBalancer (default) | ClusterIP
    port         = 51840      # WireGuard listen port (default)
    node_port    = 30742      # optional: a fixed node port makes the endpoint predictable
    # load_balancer_ip    = "203.0.113.7"                     # LoadBalancer only
    # service_annotations = { "service.beta.kubernetes.io/aws-load-balancer-type" = "nlb" }
  }

  # mtu = 1340   # default; must be equal on both sides
}

resource "liqo_gateway" "client" {
  provider             = liqo.rome
  tenant_namespace     = liqo_generate.rome.tenant_namespace # rome's namespace for milan
  remote_cluster_id    = liqo_generate.milan.cluster_id
  remote_pod_cidrs     = liqo_generate.milan.pod_cidrs
  remote_external_cidr = liqo_generate.milan.external_cidr
  remote_public_key    = liqo_generate.milan.wireguard_public_key
  key_secret_name      = liqo_generate.rome.key_secret_name

  # The endpoint the server reports; behind NAT, give the address and port the client can reach instead.
  client = {
    addresses = liqo_gateway.server.endpoint_addresses
    port      = liqo_gateway.server.endpoint_port
    protocol  = "UDP"
  }

  # wait_for_connection = true   # default: apply waits until the tunnel is Connected

  timeouts {
    create = "5m"
  }
}

# The server's connection_status is empty when it is created (the client connects afterwards) and read again by
# every refresh: an output of it would change on the first plan after apply. The client's is "Connected" after apply.
output "tunnel" {
  value = {
    endpoint = "${liqo_gateway.server.endpoint_addresses[0]}:${liqo_gateway.server.endpoint_port}"
    rome     = liqo_gateway.client.connection_status
  }
}
