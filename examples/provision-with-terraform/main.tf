# The peering, once Liqo runs on both clusters: rome (consumer) gets a virtual node backed by milan (provider), and
# its namespace liqo-demo is offloaded there. `terraform destroy -target=module.rome_to_milan` unpeers and leaves
# Liqo installed.
module "rome_to_milan" {
  source = "../modules/peering"
  providers = {
    liqo.provider = liqo.milan
    liqo.consumer = liqo.rome
  }

  resources                 = { cpu = "2", memory = "4Gi", pods = "50" }
  offload_namespaces        = ["liqo-demo"]
  create_offload_namespaces = true

  depends_on = [helm_release.liqo_milan, helm_release.liqo_rome]
}

output "liqo" {
  description = "Liqo's release on each cluster: chart version and status (deployed)."
  value = {
    milan = { version = helm_release.liqo_milan.metadata.version, status = helm_release.liqo_milan.status }
    rome  = { version = helm_release.liqo_rome.metadata.version, status = helm_release.liqo_rome.status }
  }
}

output "virtual_node_name" {
  description = "The node on rome that stands for milan (kubectl get node <name>)."
  value       = module.rome_to_milan.virtual_node_name
}

output "status" {
  description = "The tunnel, the tenant and the offloaded namespace, as Liqo reports them."
  value       = module.rome_to_milan.status
}
