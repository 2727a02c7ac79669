# Liqo's "Provision with Terraform" tutorial for Liqo 1.x: two clusters, Liqo installed on each by hashicorp/helm's
# `helm_release`, one declarative peering (rome consumes milan's resources) and an offloaded namespace, all in one
# `terraform apply`. docs/guides/provision-with-terraform.md walks through it.
terraform {
  required_version = ">= 1.0.5"
  required_providers {
    helm = {
      source  = "hashicorp/helm"
      version = "~> 3.1"
    }
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = "~> 3.2"
    }
    liqo = {
      source  = "liqotech/liqo"
      version = "~> 0.2"
    }
  }
}
