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

#[cfg(test)]
mod tests;
