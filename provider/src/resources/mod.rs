//! One module per managed resource type: schema → validate → plan → apply → read → import, unit tests beside it.
use crate::cluster_api::ClusterApi;
use crate::protocol::Resource;
use std::sync::Arc;

pub mod common;
pub mod consumer_key;
pub mod gateway;
pub mod generate;
pub mod offload;
pub mod peer;
pub mod tenant;

/// Every managed resource type of the provider, bound to the provider block's cluster.
pub fn all(cluster: &Arc<ClusterApi>) -> Vec<Arc<dyn Resource>> {
    vec![
        Arc::new(generate::GenerateResource::new(cluster.clone())),
        Arc::new(gateway::GatewayResource::new(cluster.clone())),
        Arc::new(consumer_key::ConsumerKeyResource::new(cluster.clone())),
        Arc::new(tenant::TenantResource::new(cluster.clone())),
        Arc::new(peer::PeerResource::new(cluster.clone())),
        Arc::new(offload::OffloadResource::new(cluster.clone())),
    ]
}
