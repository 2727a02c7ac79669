# Import ID: <namespace> (the namespace holding the NamespaceOffloading "offloading" on the consumer cluster).
# create_namespace is imported as true only if this provider created the namespace (label
# app.kubernetes.io/managed-by=terraform-provider-liqo).
terraform import liqo_offload.demo liqo-demo
