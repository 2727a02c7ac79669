# data "liqo_cluster" on milan, exported whole (tests/generate.rs, cluster_data_source_reads_the_same_facts).
data "liqo_cluster" "milan" {
  provider = liqo.milan
}

output "cluster" {
  value = data.liqo_cluster.milan
}
