variable "gateway_service_type" {
  description = "How the provider cluster exposes its WireGuard gateway: NodePort, LoadBalancer or ClusterIP."
  type        = string
  default     = "NodePort"
}

variable "gateway_port" {
  description = "Port the gateway server listens on (the Service port)."
  type        = number
  default     = 51840
}

variable "gateway_node_port" {
  description = "Fixed NodePort for the gateway server (30000-32767); null lets Kubernetes choose one."
  type        = number
  default     = null
}

variable "gateway_load_balancer_ip" {
  description = "Fixed load-balancer IP for the gateway server when gateway_service_type is LoadBalancer."
  type        = string
  default     = null
}

variable "gateway_client_addresses" {
  description = "Addresses the consumer's gateway dials; null uses the endpoint the provider's gateway reports (override it when the consumer reaches the provider through NAT)."
  type        = list(string)
  default     = null
}

variable "gateway_client_port" {
  description = "Port the consumer's gateway dials; null uses the endpoint port the provider's gateway reports."
  type        = number
  default     = null
}

variable "mtu" {
  description = "MTU of the WireGuard tunnel; must be the same on both sides."
  type        = number
  default     = 1340
}

variable "wait_for_connection" {
  description = "Wait until the consumer's gateway reports the tunnel Connected."
  type        = bool
  default     = true
}

variable "provider_api_server_url" {
  description = "API server URL of the provider cluster as the consumer reaches it; null uses the URL of the provider's provider block."
  type        = string
  default     = null
}

variable "provider_api_server_ca" {
  description = "PEM CA the consumer uses to verify provider_api_server_url (e.g. a proxy's CA); null uses the provider cluster's CA."
  type        = string
  default     = null
}

variable "proxy_url" {
  description = "URL of an HTTP proxy through which the consumer's Liqo reaches the provider's API server (liqoctl peer --proxy-url); null: none."
  type        = string
  default     = null
}

variable "tenant_condition" {
  description = "Active accepts new ResourceSlices, Cordoned keeps existing ones but denies new ones, Drained evicts the consumer."
  type        = string
  default     = "Active"
}

variable "resources" {
  description = "Resources the consumer asks the provider for (Kubernetes quantities), e.g. { cpu = \"4\", memory = \"8Gi\", pods = \"110\" }. Empty asks for the provider's defaults."
  type        = map(string)
  default     = {}
}

variable "resource_slice_class" {
  description = "ResourceSlice class; `default` is handled by Liqo's built-in class controller."
  type        = string
  default     = "default"
}

variable "create_virtual_node" {
  description = "Create a virtual node on the consumer once the provider accepts the ResourceSlice."
  type        = bool
  default     = true
}

variable "virtual_node" {
  description = "Where the virtual node's offloaded pods land and how workloads find it: an object with any of name, labels, annotations, taints, node_selector, tolerations, runtime_class_name, labels_not_reflected, annotations_not_reflected, vk_options_template, required_node_affinity, preferred_node_affinity, storage_classes, ingress_classes and load_balancer_classes, each as on liqo_virtual_node. Set, the module makes the virtual node itself with liqo_virtual_node (named after the provider's cluster ID unless name is given) instead of letting Liqo make it for the ResourceSlice. null lets Liqo make a plain one; ignored with create_virtual_node = false."
  # `any`, not an object type with optional attributes: those need Terraform 1.3, and the module supports 1.0.5.
  type    = any
  default = null

  validation {
    condition = try(alltrue([
      for k in keys(var.virtual_node) : contains([
        "name", "labels", "annotations", "taints", "node_selector", "tolerations", "runtime_class_name",
        "labels_not_reflected", "annotations_not_reflected", "vk_options_template", "required_node_affinity",
        "preferred_node_affinity", "storage_classes", "ingress_classes", "load_balancer_classes",
      ], k)
    ]), var.virtual_node == null)
    error_message = "The virtual_node keys are name, labels, annotations, taints, node_selector, tolerations, runtime_class_name, labels_not_reflected, annotations_not_reflected, vk_options_template, required_node_affinity, preferred_node_affinity, storage_classes, ingress_classes and load_balancer_classes (liqo_virtual_node's attributes); remove any other."
  }
}

variable "offload_namespaces" {
  description = "Namespaces of the consumer to offload to the provider (each gets a NamespaceOffloading). They must exist, or set create_offload_namespaces."
  type        = list(string)
  default     = []
}

variable "create_offload_namespaces" {
  description = "Create the namespaces in offload_namespaces (and delete them on destroy)."
  type        = bool
  default     = false
}

variable "pod_offloading_strategy" {
  description = "Where pods of offloaded namespaces may run: Local, Remote or LocalAndRemote."
  type        = string
  default     = "LocalAndRemote"
}

variable "namespace_mapping_strategy" {
  description = "How offloaded namespaces are named on the provider: DefaultName (<ns>-<consumer id>) or EnforceSameName."
  type        = string
  default     = "DefaultName"
}
