# Terraform 1.14 and later: what `liqoctl peer` made between milan (provider) and rome (consumer), found on each
# cluster by the provider's list resources. Run `terraform query -generate-config-out=generated.tf` next to the
# two provider blocks (aliases milan and rome).
list "liqo_generate" "milan" {
  provider = liqo.milan
  config {
    remote_cluster_id = "rome"
  }
}

list "liqo_gateway" "milan" {
  provider = liqo.milan
  config {
    remote_cluster_id = "rome"
  }
}

list "liqo_tenant" "milan" {
  provider = liqo.milan
  config {
    remote_cluster_id = "rome"
  }
}

list "liqo_generate" "rome" {
  provider = liqo.rome
  config {
    remote_cluster_id = "milan"
  }
}

list "liqo_gateway" "rome" {
  provider = liqo.rome
  config {
    remote_cluster_id = "milan"
  }
}

# Key Secrets this provider made; a liqoctl peering has none (Liqo keeps its key in its own Secret).
list "liqo_consumer_key" "rome" {
  provider = liqo.rome
  config {
    remote_cluster_id = "milan"
  }
}

list "liqo_peer" "rome" {
  provider = liqo.rome
  config {
    remote_cluster_id = "milan"
  }
}

list "liqo_offload" "rome" {
  provider = liqo.rome
  config {
    remote_cluster_id = "milan"
  }
}
