# Written by tests/resource_examples.rs beside the assembled examples: the hashicorp/kubernetes provider that the
# liqo_offload example's namespace on rome needs and the examples leave to the user, made of the rome_* variables
# examples/provider/provider.tf already declares (the test fills them from rome's kubeconfig).
provider "kubernetes" {
  host                   = var.rome_host
  cluster_ca_certificate = base64decode(var.rome_ca_data)
  client_certificate     = base64decode(var.rome_client_certificate_data)
  client_key             = base64decode(var.rome_client_key_data)
}
