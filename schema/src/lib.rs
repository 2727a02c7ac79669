//! Shared building blocks of terraform-provider-liqo.
//!
//! * [`tf`]: Terraform's side — cty types and values (with null and unknown at any depth), resource schemas,
//!   attribute paths and diagnostics. No wire format lives here; the provider's protocol layer encodes these.
//! * [`liqo`]: Liqo's side — typed Liqo 1.x custom resources and the labels Liqo looks objects up by. The
//!   acceptance-test simulator uses the same types, so provider and simulator agree on one definition.
pub mod liqo;
pub mod tf;
