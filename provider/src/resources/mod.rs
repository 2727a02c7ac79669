//! One folder per managed resource type (schema, plan rules, objects, operations, tests), each served through the
//! one lifecycle driver in `lifecycle/`.
use crate::cluster_api::ClusterApi;
use crate::protocol::Resource;
use std::sync::Arc;

pub mod consumer_key;
pub mod gateway;
pub mod generate;
pub mod lifecycle;
pub mod offload;
pub mod peer;
pub mod tenant;

/// Every managed resource type of the provider, bound to the provider block's cluster.
pub fn all(cluster: &Arc<ClusterApi>) -> Vec<Arc<dyn Resource>> {
    vec![
        generate::resource(cluster.clone()),
        gateway::resource(cluster.clone()),
        consumer_key::resource(cluster.clone()),
        tenant::resource(cluster.clone()),
        peer::resource(cluster.clone()),
        offload::resource(cluster.clone()),
    ]
}
