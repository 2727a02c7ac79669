# The two-cluster Liqo peering of examples/modules/peering written with hashicorp/kubernetes instead of this
# provider: the same objects (names, labels, annotations, specs as the liqo_* resources create them), in the same
# dependency order, with `kubernetes_manifest` and its `wait` blocks. The benchmark (acceptance-tests/bench)
# applies and destroys it next to the liqo_* configuration.
#
# What a user of hashicorp/kubernetes has to do by hand is done by the benchmark before the run and handed in as
# variables (terraform.tfvars): read both clusters' IDs and CIDRs, generate the two WireGuard key pairs, generate
# the consumer's private key and CSR, copy the provider cluster's CA and API server URL, and pick the gateway's
# node port and look up the provider node's address (the client must dial them; the server's status cannot be read
# back into another resource's input).
#
# Waits that hashicorp/kubernetes cannot express, because the object is made by Liqo rather than by this
# configuration: the Connection (`Connected`), the VirtualNode and its core Node. This side therefore waits for
# less than liqo_gateway/liqo_peer do.

terraform {
  required_providers {
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = "3.2.1"
    }
  }
}

variable "provider_kubeconfig" { type = string }
variable "provider_context" { type = string }
variable "consumer_kubeconfig" { type = string }
variable "consumer_context" { type = string }
variable "provider_cluster_id" { type = string }
variable "consumer_cluster_id" { type = string }
variable "provider_pod_cidr" { type = string }
variable "provider_external_cidr" { type = string }
variable "consumer_pod_cidr" { type = string }
variable "consumer_external_cidr" { type = string }
variable "provider_api_server" { type = string }
# base64 of the provider cluster's CA certificate (PEM), as a kubeconfig carries it.
variable "provider_ca_data" { type = string }
# WireGuard keys: base64 of the raw 32-byte X25519 keys (what `wg genkey | tee >(wg pubkey)` prints).
variable "provider_wireguard_private_key" {
  type      = string
  sensitive = true
}
variable "provider_wireguard_public_key" { type = string }
variable "consumer_wireguard_private_key" {
  type      = string
  sensitive = true
}
variable "consumer_wireguard_public_key" { type = string }
# The consumer's control-plane key (PEM) and its CSR (CN=<consumer id>, O=liqo.io), made with openssl by hand.
variable "consumer_key_pem" {
  type      = string
  sensitive = true
}
variable "consumer_csr_pem" { type = string }
variable "gateway_node_port" { type = number }
# The provider node's address the GatewayServer publishes: 127.0.0.1 on the simulated ground, the node's address
# on the ground's wire where real Liqo runs real WireGuard gateways.
variable "gateway_server_address" { type = string }
variable "offload_namespace" { type = string }

provider "kubernetes" {
  alias          = "provider"
  config_path    = var.provider_kubeconfig
  config_context = var.provider_context
}

provider "kubernetes" {
  alias          = "consumer"
  config_path    = var.consumer_kubeconfig
  config_context = var.consumer_context
}

locals {
  provider_tenant_namespace = "liqo-tenant-${var.consumer_cluster_id}"
  consumer_tenant_namespace = "liqo-tenant-${var.provider_cluster_id}"
  tenant_namespace_labels = {
    "liqo.io/tenant-namespace"           = "true"
    "pod-security.kubernetes.io/enforce" = "privileged"
    "pod-security.kubernetes.io/audit"   = "privileged"
    "pod-security.kubernetes.io/warn"    = "privileged"
  }
  mtu = 1340
}

# ---- per-peer namespaces and WireGuard keys (liqo_generate) ----

resource "kubernetes_manifest" "provider_namespace" {
  provider = kubernetes.provider
  manifest = {
    apiVersion = "v1"
    kind       = "Namespace"
    metadata = {
      name   = local.provider_tenant_namespace
      labels = merge(local.tenant_namespace_labels, { "liqo.io/remote-cluster-id" = var.consumer_cluster_id })
    }
  }
  wait {
    fields = { "status.phase" = "Active" }
  }
}

resource "kubernetes_manifest" "consumer_namespace" {
  provider = kubernetes.consumer
  manifest = {
    apiVersion = "v1"
    kind       = "Namespace"
    metadata = {
      name   = local.consumer_tenant_namespace
      labels = merge(local.tenant_namespace_labels, { "liqo.io/remote-cluster-id" = var.provider_cluster_id })
    }
  }
  wait {
    fields = { "status.phase" = "Active" }
  }
}

resource "kubernetes_manifest" "provider_keys" {
  provider = kubernetes.provider
  manifest = {
    apiVersion = "v1"
    kind       = "Secret"
    type       = "Opaque"
    metadata = {
      name      = "gw-keys"
      namespace = kubernetes_manifest.provider_namespace.manifest.metadata.name
      labels = {
        "liqo.io/remote-cluster-id"           = var.consumer_cluster_id
        "networking.liqo.io/gateway-resource" = "true"
      }
    }
    data = {
      privateKey = var.provider_wireguard_private_key
      publicKey  = var.provider_wireguard_public_key
    }
  }
}

resource "kubernetes_manifest" "consumer_keys" {
  provider = kubernetes.consumer
  manifest = {
    apiVersion = "v1"
    kind       = "Secret"
    type       = "Opaque"
    metadata = {
      name      = "gw-keys"
      namespace = kubernetes_manifest.consumer_namespace.manifest.metadata.name
      labels = {
        "liqo.io/remote-cluster-id"           = var.provider_cluster_id
        "networking.liqo.io/gateway-resource" = "true"
      }
    }
    data = {
      privateKey = var.consumer_wireguard_private_key
      publicKey  = var.consumer_wireguard_public_key
    }
  }
}

# ---- networking (liqo_gateway server on the provider, client on the consumer) ----

resource "kubernetes_manifest" "provider_configuration" {
  provider = kubernetes.provider
  manifest = {
    apiVersion = "networking.liqo.io/v1beta1"
    kind       = "Configuration"
    metadata = {
      name      = var.consumer_cluster_id
      namespace = kubernetes_manifest.provider_namespace.manifest.metadata.name
      labels    = { "liqo.io/remote-cluster-id" = var.consumer_cluster_id }
    }
    spec = {
      remote = { cidr = { pod = [var.consumer_pod_cidr], external = [var.consumer_external_cidr] } }
    }
  }
  # Liqo's controller fills spec.local.
  computed_fields = ["metadata.labels", "metadata.annotations", "spec.local"]
  wait {
    condition {
      type   = "NetworkCIDRsConfigured"
      status = "True"
    }
  }
}

resource "kubernetes_manifest" "consumer_configuration" {
  provider = kubernetes.consumer
  manifest = {
    apiVersion = "networking.liqo.io/v1beta1"
    kind       = "Configuration"
    metadata = {
      name      = var.provider_cluster_id
      namespace = kubernetes_manifest.consumer_namespace.manifest.metadata.name
      labels    = { "liqo.io/remote-cluster-id" = var.provider_cluster_id }
    }
    spec = {
      remote = { cidr = { pod = [var.provider_pod_cidr], external = [var.provider_external_cidr] } }
    }
  }
  computed_fields = ["metadata.labels", "metadata.annotations", "spec.local"]
  wait {
    condition {
      type   = "NetworkCIDRsConfigured"
      status = "True"
    }
  }
}

resource "kubernetes_manifest" "provider_public_key" {
  provider = kubernetes.provider
  manifest = {
    apiVersion = "networking.liqo.io/v1beta1"
    kind       = "PublicKey"
    metadata = {
      name      = var.consumer_cluster_id
      namespace = kubernetes_manifest.provider_namespace.manifest.metadata.name
      labels = {
        "liqo.io/remote-cluster-id"           = var.consumer_cluster_id
        "networking.liqo.io/gateway-resource" = "true"
      }
    }
    spec = { publicKey = var.consumer_wireguard_public_key }
  }
}

resource "kubernetes_manifest" "consumer_public_key" {
  provider = kubernetes.consumer
  manifest = {
    apiVersion = "networking.liqo.io/v1beta1"
    kind       = "PublicKey"
    metadata = {
      name      = var.provider_cluster_id
      namespace = kubernetes_manifest.consumer_namespace.manifest.metadata.name
      labels = {
        "liqo.io/remote-cluster-id"           = var.provider_cluster_id
        "networking.liqo.io/gateway-resource" = "true"
      }
    }
    spec = { publicKey = var.provider_wireguard_public_key }
  }
}

resource "kubernetes_manifest" "gateway_server" {
  provider = kubernetes.provider
  manifest = {
    apiVersion = "networking.liqo.io/v1beta1"
    kind       = "GatewayServer"
    metadata = {
      name      = var.consumer_cluster_id
      namespace = kubernetes_manifest.provider_namespace.manifest.metadata.name
      labels    = { "liqo.io/remote-cluster-id" = var.consumer_cluster_id }
    }
    spec = {
      endpoint  = { port = 51840, serviceType = "NodePort", nodePort = var.gateway_node_port }
      mtu       = local.mtu
      secretRef = { name = kubernetes_manifest.provider_keys.manifest.metadata.name }
      serverTemplateRef = {
        apiVersion = "networking.liqo.io/v1beta1"
        kind       = "WgGatewayServerTemplate"
        name       = "wireguard-server"
        namespace  = "liqo"
      }
    }
  }
  wait {
    fields = { "status.endpoint.port" = "^[0-9]+$" }
  }
  depends_on = [kubernetes_manifest.provider_configuration, kubernetes_manifest.provider_public_key]
}

resource "kubernetes_manifest" "gateway_client" {
  provider = kubernetes.consumer
  manifest = {
    apiVersion = "networking.liqo.io/v1beta1"
    kind       = "GatewayClient"
    metadata = {
      name      = var.provider_cluster_id
      namespace = kubernetes_manifest.consumer_namespace.manifest.metadata.name
      labels    = { "liqo.io/remote-cluster-id" = var.provider_cluster_id }
    }
    spec = {
      # Copied by hand from the server's status (the provider node's address and the chosen node port).
      endpoint  = { addresses = [var.gateway_server_address], port = var.gateway_node_port, protocol = "UDP" }
      mtu       = local.mtu
      secretRef = { name = kubernetes_manifest.consumer_keys.manifest.metadata.name }
      clientTemplateRef = {
        apiVersion = "networking.liqo.io/v1beta1"
        kind       = "WgGatewayClientTemplate"
        name       = "wireguard-client"
        namespace  = "liqo"
      }
    }
  }
  wait {
    fields = { "status.clientRef.name" = "*" }
  }
  depends_on = [
    kubernetes_manifest.consumer_configuration,
    kubernetes_manifest.consumer_public_key,
    kubernetes_manifest.gateway_server,
  ]
}

# ---- authentication (liqo_tenant, provider side) ----

resource "kubernetes_certificate_signing_request_v1" "consumer" {
  provider = kubernetes.provider
  metadata {
    name   = "${local.provider_tenant_namespace}-manual"
    labels = { "liqo.io/remote-cluster-id" = var.consumer_cluster_id }
  }
  spec {
    request     = var.consumer_csr_pem
    signer_name = "kubernetes.io/kube-apiserver-client"
    usages      = ["digital signature", "key encipherment", "client auth"]
  }
  auto_approve = true
}

resource "kubernetes_manifest" "remote_controlplane_binding" {
  provider = kubernetes.provider
  manifest = {
    apiVersion = "rbac.authorization.k8s.io/v1"
    kind       = "RoleBinding"
    metadata = {
      name      = "liqo-binding-liqo-remote-controlplane"
      namespace = kubernetes_manifest.provider_namespace.manifest.metadata.name
      labels    = { "liqo.io/remote-cluster-id" = var.consumer_cluster_id }
    }
    roleRef  = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "liqo-remote-controlplane" }
    subjects = [{ apiGroup = "rbac.authorization.k8s.io", kind = "User", name = var.consumer_cluster_id }]
  }
}

resource "kubernetes_manifest" "tenant" {
  provider = kubernetes.provider
  manifest = {
    apiVersion = "authentication.liqo.io/v1beta1"
    kind       = "Tenant"
    metadata = {
      name      = var.consumer_cluster_id
      namespace = kubernetes_manifest.provider_namespace.manifest.metadata.name
      labels    = { "liqo.io/remote-cluster-id" = var.consumer_cluster_id }
    }
    spec = { authzPolicy = "TolerateNoHandshake", clusterID = var.consumer_cluster_id, tenantCondition = "Active" }
  }
  wait {
    fields = { "status.tenantNamespace" = "*" }
  }
  depends_on = [kubernetes_manifest.remote_controlplane_binding, kubernetes_certificate_signing_request_v1.consumer]
}

# ---- resource negotiation (liqo_peer, consumer side) ----

resource "kubernetes_manifest" "controlplane_kubeconfig" {
  provider = kubernetes.consumer
  manifest = {
    apiVersion = "v1"
    kind       = "Secret"
    type       = "Opaque"
    metadata = {
      name      = "kubeconfig-controlplane-${var.provider_cluster_id}"
      namespace = kubernetes_manifest.consumer_namespace.manifest.metadata.name
      labels = {
        "liqo.io/identity-type"     = "ControlPlane"
        "liqo.io/remote-cluster-id" = var.provider_cluster_id
      }
      annotations = { "liqo.io/remote-tenant-namespace" = kubernetes_manifest.tenant.manifest.metadata.namespace }
    }
    data = {
      kubeconfig = base64encode(yamlencode({
        apiVersion      = "v1"
        kind            = "Config"
        clusters        = [{ name = var.provider_cluster_id, cluster = { server = var.provider_api_server, "certificate-authority-data" = var.provider_ca_data } }]
        users           = [{ name = var.consumer_cluster_id, user = { "client-certificate-data" = base64encode(kubernetes_certificate_signing_request_v1.consumer.certificate), "client-key-data" = base64encode(var.consumer_key_pem) } }]
        contexts        = [{ name = "default-context", context = { cluster = var.provider_cluster_id, user = var.consumer_cluster_id, namespace = local.provider_tenant_namespace } }]
        current-context = "default-context"
      }))
    }
  }
}

resource "kubernetes_manifest" "resource_slice" {
  provider = kubernetes.consumer
  manifest = {
    apiVersion = "authentication.liqo.io/v1beta1"
    kind       = "ResourceSlice"
    metadata = {
      name      = var.provider_cluster_id
      namespace = kubernetes_manifest.consumer_namespace.manifest.metadata.name
      labels = {
        "liqo.io/remote-cluster-id" = var.provider_cluster_id
        "liqo.io/remoteID"          = var.provider_cluster_id
        "liqo.io/replication"       = "true"
      }
      annotations = { "liqo.io/create-virtual-node" = "true" }
    }
    spec = {
      class             = "default"
      providerClusterID = var.provider_cluster_id
      consumerClusterID = var.consumer_cluster_id
      resources         = { cpu = "4", memory = "8Gi", pods = "110" }
    }
  }
  computed_fields = ["metadata.labels", "metadata.annotations", "spec.csr"]
  wait {
    condition {
      type   = "Authentication"
      status = "Accepted"
    }
    condition {
      type   = "Resources"
      status = "Accepted"
    }
  }
  depends_on = [kubernetes_manifest.controlplane_kubeconfig, kubernetes_manifest.gateway_client]
}

# ---- namespace offloading (liqo_offload, consumer side) ----

resource "kubernetes_manifest" "offload_namespace" {
  provider = kubernetes.consumer
  manifest = {
    apiVersion = "v1"
    kind       = "Namespace"
    metadata   = { name = var.offload_namespace }
  }
  depends_on = [kubernetes_manifest.resource_slice]
}

resource "kubernetes_manifest" "offloading" {
  provider = kubernetes.consumer
  manifest = {
    apiVersion = "offloading.liqo.io/v1beta1"
    kind       = "NamespaceOffloading"
    metadata = {
      name      = "offloading"
      namespace = kubernetes_manifest.offload_namespace.manifest.metadata.name
    }
    spec = {
      clusterSelector          = { nodeSelectorTerms = [] }
      namespaceMappingStrategy = "DefaultName"
      podOffloadingStrategy    = "LocalAndRemote"
    }
  }
  wait {
    fields = { "status.offloadingPhase" = "Ready" }
  }
}
