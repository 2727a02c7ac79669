terraform {
  required_version = ">= 1.0.5"
  required_providers {
    liqo = {
      source                = "liqotech/liqo"
      configuration_aliases = [liqo.consumer, liqo.provider]
    }
  }
}
