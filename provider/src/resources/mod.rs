//! One folder per managed resource type (schema, plan rules, objects, operations, tests), each served through the
//! one lifecycle driver in `lifecycle/`. A type's folder imports no other type's folder: what two types share lives
//! in `shared/`, below them (checked by acceptance-tests/tests/workflows.rs).
use crate::cluster_api::ClusterApi;
use lifecycle::{Driven, Managed};
use std::sync::Arc;

pub mod consumer_key;
pub mod gateway;
pub mod generate;
pub mod lifecycle;
pub mod offload;
pub mod peer;
pub mod shared;
pub mod tenant;
pub mod virtual_node;

/// Every managed resource type of the provider, bound to the provider block's cluster: the one list of types. The
/// provider serves each as a resource and as a list resource, and `liqo_import_ids` lists each one's objects.
pub fn all(cluster: &Arc<ClusterApi>) -> Vec<Arc<dyn Managed>> {
    vec![
        Driven::<generate::GenerateResource>::managed(cluster.clone()),
        Driven::<gateway::GatewayResource>::managed(cluster.clone()),
        Driven::<consumer_key::ConsumerKeyResource>::managed(cluster.clone()),
        Driven::<tenant::TenantResource>::managed(cluster.clone()),
        Driven::<peer::PeerResource>::managed(cluster.clone()),
        Driven::<offload::OffloadResource>::managed(cluster.clone()),
        Driven::<virtual_node::VirtualNodeResource>::managed(cluster.clone()),
    ]
}
