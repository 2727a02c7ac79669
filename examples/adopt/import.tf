# OpenTofu (and Terraform before 1.14): the import IDs come from the liqo_import_ids data source of each cluster;
# `tofu plan -generate-config-out=generated.tf` then writes the resource blocks. One block per object: add
# `[1]`, `[2]`… for a cluster with several (see `tofu console`: data.liqo_import_ids.rome.ids). A peering made
# with `liqoctl peer --networking-disabled` has no gateways: leave out the two liqo_gateway blocks.
data "liqo_import_ids" "milan" {
  provider          = liqo.milan
  remote_cluster_id = "rome"
}

data "liqo_import_ids" "rome" {
  provider          = liqo.rome
  remote_cluster_id = "milan"
}

import {
  to       = liqo_generate.milan
  provider = liqo.milan
  id       = data.liqo_import_ids.milan.ids["liqo_generate"][0]
}

import {
  to       = liqo_gateway.server
  provider = liqo.milan
  id       = data.liqo_import_ids.milan.ids["liqo_gateway"][0]
}

import {
  to       = liqo_tenant.rome
  provider = liqo.milan
  id       = data.liqo_import_ids.milan.ids["liqo_tenant"][0]
}

import {
  to       = liqo_generate.rome
  provider = liqo.rome
  id       = data.liqo_import_ids.rome.ids["liqo_generate"][0]
}

import {
  to       = liqo_gateway.client
  provider = liqo.rome
  id       = data.liqo_import_ids.rome.ids["liqo_gateway"][0]
}

import {
  to       = liqo_peer.rome_to_milan
  provider = liqo.rome
  id       = data.liqo_import_ids.rome.ids["liqo_peer"][0]
}

import {
  to       = liqo_offload.demo
  provider = liqo.rome
  id       = data.liqo_import_ids.rome.ids["liqo_offload"][0]
}
