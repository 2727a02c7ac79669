//! One module per data source type.
use crate::cluster_api::ClusterApi;
use crate::protocol::DataSource;
use std::sync::Arc;

pub mod cluster;
pub mod import_ids;
pub mod peering;

/// Every data source type of the provider, bound to the provider block's cluster.
pub fn all(cluster: &Arc<ClusterApi>) -> Vec<Arc<dyn DataSource>> {
    vec![
        Arc::new(cluster::ClusterDataSource::new(cluster.clone())),
        Arc::new(peering::PeeringDataSource::new(cluster.clone())),
        Arc::new(import_ids::ImportIdsDataSource::new(cluster.clone())),
    ]
}
