//! `liqo_offload`: namespace offloading, on the **consumer** cluster.
//!
//! Owns the NamespaceOffloading `offloading` (the only name Liqo accepts) in `namespace`. The namespace is the
//! user's: this resource neither creates nor deletes it — unless `create_namespace = true`, which creates it when
//! missing, marked `app.kubernetes.io/managed-by=terraform-provider-liqo` (as liqo_generate marks the namespaces
//! it creates), and deletes on destroy only a namespace carrying that marker. An existing unmarked namespace is
//! used as it is and never deleted. The marker lives on the object so that import, and a re-creation after an
//! out-of-band deletion, know who made the namespace.
//!
//! Create/update waits for `status.observedGeneration` to reach the applied generation and for
//! `status.offloadingPhase` to be `Ready` (`NoClusterSelected` is accepted with a warning; `SomeFailed` and
//! `AllFailed` fail with the per-cluster conditions). Delete waits until Liqo has removed the remote namespaces
//! and released its finalizer (the object is gone), then deletes the namespace if this resource created it.
//!
//! Import ID: `<namespace>`.
//!
//! Files: `schema.rs` (attributes, plan-time checks, generated configuration), `plan.rs` (plan rules and what they
//! cannot say), `objects.rs` (the NamespaceOffloading and Namespace, and the state read back), `status.rs` (Liqo's
//! verdict and reported outputs), `operations.rs` (create / update / delete / observe / import), `tests.rs`.
use std::sync::Arc;

use crate::cluster_api::ClusterApi;

mod objects;
mod operations;
mod plan;
mod schema;
mod status;
#[cfg(test)]
mod tests;

pub struct OffloadResource {
    cluster: Arc<ClusterApi>,
}
