output "provider_cluster_id" {
  description = "Cluster ID of the provider cluster."
  value       = data.liqo_cluster.provider.cluster_id
}

output "consumer_cluster_id" {
  description = "Cluster ID of the consumer cluster."
  value       = data.liqo_cluster.consumer.cluster_id
}

output "virtual_node_name" {
  description = "Name of the virtual node on the consumer cluster that stands for the provider."
  value       = liqo_peer.this.virtual_node_name
}

output "accepted_resources" {
  description = "Resources the provider accepted for this consumer."
  value       = liqo_peer.this.accepted_resources
}

output "gateway_endpoint" {
  description = "WireGuard endpoint of the provider's gateway (addresses and port) as the consumer dials it."
  value       = local.gateway_endpoint
}

output "status" {
  description = "Peering status: the tunnel as the consumer's gateway reports it, the tenant condition and the offloaded namespaces."
  value = {
    connection       = liqo_gateway.client.connection_status
    tenant_condition = liqo_tenant.this.tenant_condition
    offloaded_namespaces = {
      for ns, o in liqo_offload.this : ns => {
        remote_namespace = o.remote_namespace_name
        phase            = o.offloading_phase
      }
    }
  }
}
