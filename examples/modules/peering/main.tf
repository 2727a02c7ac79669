# One Liqo peering: `consumer` gets a virtual node backed by `provider`'s resources.
# Order (Terraform derives it from the references): cluster facts -> per-peer namespaces and WireGuard keys on both
# sides -> gateway server (provider) -> gateway client (consumer) -> the consumer's key and CSR (consumer) ->
# tenant and its signed certificate (provider) -> peer (consumer) -> namespace offloading. Only public data
# crosses between the clusters: the consumer's private key stays in the consumer cluster and never enters the state.
# `terraform destroy` walks it backwards, waiting for Liqo's finalizers.

data "liqo_cluster" "provider" {
  provider = liqo.provider
}

data "liqo_cluster" "consumer" {
  provider = liqo.consumer
}

# Tenant namespace and WireGuard key pair on each side, one per peer.
resource "liqo_generate" "provider" {
  provider          = liqo.provider
  remote_cluster_id = data.liqo_cluster.consumer.cluster_id
}

resource "liqo_generate" "consumer" {
  provider          = liqo.consumer
  remote_cluster_id = data.liqo_cluster.provider.cluster_id
}

# Network fabric: the provider runs the WireGuard server, the consumer dials it.
resource "liqo_gateway" "server" {
  provider             = liqo.provider
  tenant_namespace     = liqo_generate.provider.tenant_namespace
  remote_cluster_id    = liqo_generate.consumer.cluster_id
  remote_pod_cidrs     = liqo_generate.consumer.pod_cidrs
  remote_external_cidr = liqo_generate.consumer.external_cidr
  remote_public_key    = liqo_generate.consumer.wireguard_public_key
  mtu                  = var.mtu
  server = {
    service_type     = var.gateway_service_type
    port             = var.gateway_port
    node_port        = var.gateway_node_port
    load_balancer_ip = var.gateway_load_balancer_ip
  }
}

# The endpoint the consumer dials: the server's published one unless the caller overrides it (e.g. behind NAT).
# A local rather than a reference into liqo_gateway.client.client, which Terraform 1.0 cannot resolve.
locals {
  gateway_endpoint = {
    addresses = coalesce(var.gateway_client_addresses, liqo_gateway.server.endpoint_addresses)
    port      = coalesce(var.gateway_client_port, liqo_gateway.server.endpoint_port)
  }
}

resource "liqo_gateway" "client" {
  provider             = liqo.consumer
  tenant_namespace     = liqo_generate.consumer.tenant_namespace
  remote_cluster_id    = liqo_generate.provider.cluster_id
  remote_pod_cidrs     = liqo_generate.provider.pod_cidrs
  remote_external_cidr = liqo_generate.provider.external_cidr
  remote_public_key    = liqo_generate.provider.wireguard_public_key
  mtu                  = var.mtu
  wait_for_connection  = var.wait_for_connection
  client = {
    addresses = local.gateway_endpoint.addresses
    port      = local.gateway_endpoint.port
    protocol  = "UDP"
  }
}

# Authentication: the consumer makes its control-plane key in its own cluster and sends only a CSR; the provider
# admits the consumer and signs the CSR. Rotate the key with `terraform apply -replace=...liqo_consumer_key.this`.
resource "liqo_consumer_key" "this" {
  provider            = liqo.consumer
  tenant_namespace    = liqo_generate.consumer.tenant_namespace
  provider_cluster_id = liqo_generate.provider.cluster_id
}

resource "liqo_tenant" "this" {
  provider            = liqo.provider
  tenant_namespace    = liqo_generate.provider.tenant_namespace
  consumer_cluster_id = liqo_generate.consumer.cluster_id
  csr                 = liqo_consumer_key.this.csr
  tenant_condition    = var.tenant_condition
  api_server_url      = var.provider_api_server_url
  api_server_ca       = var.provider_api_server_ca
  proxy_url           = var.proxy_url
}

# Resource negotiation: the consumer asks for resources and gets a virtual node; its identity Secret is assembled
# in the consumer cluster from the key Secret and the public parts below. The tenant is referenced, so it outlives
# the ResourceSlice on destroy (Liqo's finalizers need the credentials until the slice is gone).
resource "liqo_peer" "this" {
  provider                  = liqo.consumer
  tenant_namespace          = liqo_generate.consumer.tenant_namespace
  provider_cluster_id       = liqo_generate.provider.cluster_id
  provider_tenant_namespace = liqo_tenant.this.tenant_namespace
  api_server_url            = liqo_tenant.this.api_server_url
  cluster_ca_certificate    = liqo_tenant.this.cluster_ca_certificate
  client_certificate        = liqo_tenant.this.client_certificate
  client_key_secret         = liqo_consumer_key.this.key_secret_name
  proxy_url                 = var.proxy_url
  resources                 = var.resources
  class                     = var.resource_slice_class
  # With var.virtual_node, liqo_virtual_node below makes the node, so Liqo must not make one of its own.
  create_virtual_node = var.create_virtual_node && var.virtual_node == null

  # Liqo keeps the virtual node NotReady until the Connection is Connected (virtual kubelet
  # --node-check-network), and this resource waits for a Ready node: build the tunnel first (the client's create
  # waits for Connected) and tear it down last.
  depends_on = [liqo_gateway.client]
}

# The virtual node with the placement of var.virtual_node, for the slice liqo_peer made (as `liqoctl create
# virtualnode --resource-slice-name`). Like Liqo's own, it is NotReady until the tunnel is Connected.
resource "liqo_virtual_node" "this" {
  count                     = var.create_virtual_node && var.virtual_node != null ? 1 : 0
  provider                  = liqo.consumer
  name                      = coalesce(try(var.virtual_node.name, null), liqo_generate.provider.cluster_id)
  tenant_namespace          = liqo_peer.this.tenant_namespace
  provider_cluster_id       = liqo_peer.this.provider_cluster_id
  resource_slice_name       = liqo_peer.this.resource_slice_name
  resources                 = liqo_peer.this.accepted_resources
  labels                    = try(var.virtual_node.labels, null)
  annotations               = try(var.virtual_node.annotations, null)
  taints                    = try(var.virtual_node.taints, null)
  node_selector             = try(var.virtual_node.node_selector, null)
  tolerations               = try(var.virtual_node.tolerations, null)
  runtime_class_name        = try(var.virtual_node.runtime_class_name, null)
  labels_not_reflected      = try(var.virtual_node.labels_not_reflected, null)
  annotations_not_reflected = try(var.virtual_node.annotations_not_reflected, null)
  vk_options_template       = try(var.virtual_node.vk_options_template, null)
  required_node_affinity    = try(var.virtual_node.required_node_affinity, null)
  preferred_node_affinity   = try(var.virtual_node.preferred_node_affinity, null)
  storage_classes           = try(var.virtual_node.storage_classes, null)
  ingress_classes           = try(var.virtual_node.ingress_classes, null)
  load_balancer_classes     = try(var.virtual_node.load_balancer_classes, null)

  depends_on = [liqo_gateway.client]
}

resource "liqo_offload" "this" {
  for_each                   = toset(var.offload_namespaces)
  provider                   = liqo.consumer
  namespace                  = each.value
  create_namespace           = var.create_offload_namespaces
  pod_offloading_strategy    = var.pod_offloading_strategy
  namespace_mapping_strategy = var.namespace_mapping_strategy

  depends_on = [liqo_peer.this, liqo_virtual_node.this]
}
