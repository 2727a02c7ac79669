//! Typed Liqo 1.x objects (v1.2.0 CRDs) and the labels Liqo relies on.
//!
//! Only the fields the provider or the test ground's simulator use are modelled. Every field is optional and
//! skipped when unset, so a server-side apply of one of these objects claims exactly the fields the caller
//! filled and never sends `null` over a field Liqo's controllers own. Go `[]byte` fields are
//! [`k8s_openapi::ByteString`] (raw bytes, base64 on the wire); resource lists are `Quantity` maps; status
//! values are strings with the documented values as constants next to each kind (so an unknown value from a
//! newer Liqo still deserialises).
//!
//! Kinds live in one module per API group and are also re-exported here (`liqo::Tenant` = `liqo::authentication::Tenant`).
pub mod authentication;
pub mod conditions;
pub mod core;
pub mod ipam;
pub mod labels;
pub mod networking;
pub mod offloading;

pub use self::authentication::*;
pub use self::conditions::{ConditionLike, LiqoCondition, find_condition, upsert_liqo_condition};
pub use self::core::*;
pub use self::ipam::*;
pub use self::networking::*;
pub use self::offloading::*;

/// The tag of an image reference, which names the Liqo release of Liqo's images
/// (`ghcr.io/liqotech/liqo-controller-manager:v1.2.0@sha256:…` → `v1.2.0`).
pub fn image_tag(image: &str) -> Option<&str> {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last_segment = without_digest.rsplit('/').next().unwrap_or(without_digest);
    last_segment.split_once(':').map(|(_, tag)| tag).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests;
