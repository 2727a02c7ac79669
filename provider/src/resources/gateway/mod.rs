//! `liqo_gateway`: the network half of a peering on one cluster.
//!
//! Owns, in the tenant namespace for the peer (all named after the peer's cluster ID and labelled
//! `liqo.io/remote-cluster-id`):
//! - a `Configuration` carrying the peer's pod and external CIDRs (`spec.remote`; Liqo fills `spec.local`),
//! - a `PublicKey` carrying the peer's WireGuard public key,
//! - a `GatewayServer` (the side that listens) **or** a `GatewayClient` (the side that dials), referencing the key
//!   Secret made by `liqo_generate` and Liqo's default WireGuard templates in the Liqo namespace.
//!
//! Waits: Configuration `NetworkCIDRsConfigured` (or the pre-1.2 `status.remote` fields); server →
//! `status.endpoint` (exposed as `endpoint_addresses`/`endpoint_port` for the peer's client); client → the
//! gateway's `Connection` reaching `Connected` (an `Error` lasting past a grace period fails the apply).
//!
//! Changing the server's service type, port, node port or load-balancer IP deletes and recreates the
//! GatewayServer inside the update, as `liqoctl network connect` does when the existing server's Service shape
//! differs, keeping the Configuration and PublicKey; the new endpoint flows to the client through the plan.
//!
//! Import ID: `<tenant_namespace>/<gateway name>`; the gateway name is the peer's cluster ID.
//!
//! Files: `schema.rs` (attributes, plan-time checks), `plan.rs` (plan rules, defaults, what an update recomputes),
//! `objects.rs` (the Liqo objects built from a planned state and read back into the state, the import ID),
//! `status.rs` (verdicts on Liqo's status for the waits, the Connection's failure), `operations.rs` (create /
//! update / delete / observe / import), `tests.rs`.
use std::sync::Arc;

use crate::cluster_api::ClusterApi;

mod objects;
mod operations;
mod plan;
mod schema;
mod status;
#[cfg(test)]
mod tests;

pub struct GatewayResource {
    cluster: Arc<ClusterApi>,
}
