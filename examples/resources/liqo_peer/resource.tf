# Resource negotiation: the consumer cluster "rome" asks the provider cluster "milan" for resources and gets a
# virtual node. liqo_peer runs with the provider block of the CONSUMER cluster.
#
# It uses the tenant namespaces made by liqo_generate on both sides, rome's key from liqo_consumer_key (it never
# leaves rome) and the certificate liqo_tenant had milan sign for it (see those examples). With networking configured, Liqo keeps the virtual node
# NotReady until the Connection to milan is Connected, so liqo_peer (which waits for a Ready node) comes after the
# client gateway, whose create waits for Connected: hence the depends_on.
resource "liqo_peer" "rome_to_milan" {
  provider                  = liqo.rome
  tenant_namespace          = liqo_generate.rome.tenant_namespace
  provider_cluster_id       = liqo_generate.milan.cluster_id
  provider_tenant_namespace = liqo_tenant.rome.tenant_namespace
  api_server_url            = liqo_tenant.rome.api_server_url
  cluster_ca_certificate    = liqo_tenant.rome.cluster_ca_certificate
  client_certificate        = liqo_tenant.rome.client_certificate
  client_key_secret         = liqo_consumer_key.rome.key_secret_name # the key is read inside rome

  # Updated in place; waits until milan has granted the new request.
  resources = {
    cpu    = "4"
    memory = "8Gi"
    pods   = "110"
    # "nvidia.com/gpu" = "1"   # any extended resource
  }

  # Optional:
  # class                 = "default"  # ResourceSlice class (replaces the resource when changed)
  # create_virtual_node   = true       # let Liqo create a virtual node for the slice
  # resource_slice_name   = "milan"    # default: the provider cluster ID
  # wait_for_virtual_node = true       # also wait for the VirtualNode and its Node to be Ready

  timeouts {
    create = "10m"
    delete = "10m"
  }

  depends_on = [liqo_gateway.client]
}

# For a provider cluster that cannot issue client certificates (e.g. EKS), bring a kubeconfig instead of the four
# attributes above. It is write-only (Terraform 1.11 / OpenTofu 1.11 and later): never stored in state or plans,
# but it does pass through Terraform, so read it from an ephemeral source where you can. Bump the version to push
# a new kubeconfig.
#
#   kubeconfig_wo         = file("milan-liqo.kubeconfig")
#   kubeconfig_wo_version = 1

output "virtual_node_name" {
  value = liqo_peer.rome_to_milan.virtual_node_name
}

output "accepted_resources" {
  value = liqo_peer.rome_to_milan.accepted_resources
}
