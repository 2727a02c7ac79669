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
  value       = try(liqo_virtual_node.this[0].name, liqo_peer.this.virtual_node_name)
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

output "remapped_cidrs" {
  description = "Where each cluster reaches the other's pods and external CIDR, as its Liqo remapped them (liqo_gateway's remapped_pod_cidrs and remapped_external_cidr): on_consumer is the provider as the consumer sees it, on_provider the consumer as the provider sees it."
  value = {
    on_consumer = { pod_cidrs = liqo_gateway.client.remapped_pod_cidrs, external_cidr = liqo_gateway.client.remapped_external_cidr }
    on_provider = { pod_cidrs = liqo_gateway.server.remapped_pod_cidrs, external_cidr = liqo_gateway.server.remapped_external_cidr }
  }
}
