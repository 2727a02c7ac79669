//! `liqo_virtual_node`: a virtual node of the **consumer** cluster made from a ResourceSlice, with the labels the
//! user chooses — what `liqoctl create virtualnode --resource-slice-name` does.
//!
//! Owns the VirtualNode `name` in the tenant namespace. Liqo's own virtual node for a slice carries only Liqo's
//! labels; workloads that should land on one provider's node (or on one of several slices of it, e.g. a GPU slice)
//! need labels to select it. The slice is a `liqo_peer` with `create_virtual_node = false` (otherwise Liqo makes its
//! own virtual node for it, and this one would be a second node for the same resources). Liqo's virtual kubelet
//! reads the kubeconfig of the slice's Identity (Liqo makes it once the provider accepts the slice) and registers
//! the Node `name`; the node offers `resources`, usually the slice's `accepted_resources`.
//!
//! Create and update wait for the VirtualNode to run and its Node to be `Ready` with the labels; delete waits until
//! Liqo has drained and removed the Node and the VirtualNode. Import ID: `<tenant_namespace>/<name>`.
//!
//! Files: `schema.rs` (attributes, plan-time checks), `plan.rs` (plan rules), `objects.rs` (the VirtualNode, and
//! the state read back), `operations.rs` (create / update / delete / observe / import), `tests.rs`.
use std::sync::Arc;

use crate::cluster_api::ClusterApi;

mod objects;
mod operations;
mod plan;
mod schema;
#[cfg(test)]
mod tests;

pub struct VirtualNodeResource {
    cluster: Arc<ClusterApi>,
}
