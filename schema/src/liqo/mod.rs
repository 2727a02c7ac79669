//! Typed Liqo 1.x objects (v1.2.0 CRDs) and the labels Liqo relies on.
//!
//! Only the fields the provider or the test ground's simulator use are modelled. Every field is optional and
//! skipped when unset, so a server-side apply of one of these objects claims exactly the fields the caller
//! filled and never sends `null` over a field Liqo's controllers own. Go `[]byte` fields are
//! [`k8s_openapi::ByteString`] (raw bytes, base64 on the wire); resource lists are `Quantity` maps; status
//! values are strings with the documented values as constants next to each kind (so an unknown value from a
//! newer Liqo still deserialises).
mod authentication;
mod conditions;
mod core;
mod ipam;
pub mod labels;
mod networking;
mod offloading;

pub use authentication::*;
pub use conditions::{ConditionLike, LiqoCondition, find_condition, upsert_liqo_condition};
pub use core::*;
pub use ipam::*;
pub use networking::*;
pub use offloading::*;

#[cfg(test)]
mod tests;
