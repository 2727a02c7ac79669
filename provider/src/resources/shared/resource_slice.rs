//! Which provider a ResourceSlice asks: liqo_peer reads it back and imports by it, liqo_virtual_node checks that its
//! slice is for the provider it names.
use liqo_schema::liqo::{ResourceSlice, labels};

use crate::import_id::label;

/// The provider cluster a ResourceSlice asks: its `liqo.io/remote-cluster-id` label, else `spec.providerClusterID`.
pub fn slice_provider(rs: &ResourceSlice) -> Option<&str> {
    label(&rs.metadata, labels::REMOTE_CLUSTER_ID).or(rs.spec.provider_cluster_id.as_deref())
}
