variable "clusters" {
  description = "The two clusters, milan (the provider) and rome (the consumer), with their pod and service CIDRs."
  type        = map(object({ pod_cidr = string, service_cidr = string }))
  default = {
    milan = { pod_cidr = "10.200.0.0/16", service_cidr = "10.60.0.0/16" }
    rome  = { pod_cidr = "10.201.0.0/16", service_cidr = "10.61.0.0/16" }
  }
}

variable "kubeconfigs" {
  description = "Kubeconfig of each cluster, for the stand-in of kind_cluster in clusters.tf (not needed with kind)."
  type        = map(string)
  default     = {}
}

variable "liqo_repository" {
  description = "Helm repository of Liqo's chart; null with a chart directory."
  type        = string
  default     = "https://helm.liqo.io/"
}

variable "liqo_chart" {
  description = "Liqo's chart: its name in the repository, or a directory holding it."
  type        = string
  default     = "liqo"
}

variable "liqo_version" {
  description = "Liqo's version (the chart's); null with a chart directory."
  type        = string
  default     = "v1.2.0"
}

variable "liqo_values_files" {
  description = "More Helm values files for Liqo, by cluster, applied before the settings in liqo.tf."
  type        = map(list(string))
  default     = {}
}
