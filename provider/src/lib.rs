//! terraform-provider-liqo: Liqo 1.x declarative peering as Terraform resources.
//!
//! Layers (see DESIGN.md), each depending only on those below it:
//! - `protocol` speaks tfplugin6 and knows nothing of Liqo;
//! - `provider` is the provider block (schema, validation, ConfigureProvider); it lists the resources, data
//!   sources and list resources;
//! - `resources`, `data_sources` and `list` hold one module per Terraform type; none reaches into another
//!   layer's module of the same height: what two of them share lives below (what resource types share:
//!   `resources::shared`, below the type folders; a test of `acceptance-tests/tests/workflows.rs` checks it);
//! - below them: `attributes` (each type's attributes, declared once), `import_id` (each type's import ID, declared once), `cluster_api` (the lazily connected API
//!   of the cluster one provider block points at), `cluster_facts` (cluster ID and CIDRs, as liqoctl reads them),
//!   `validate` (plan-time validators), `quantity` (Kubernetes resource quantities), `kube` (the only place that
//!   applies, reads, waits for and deletes Kubernetes objects), `errors` (the only place where failures become
//!   diagnostics) and `crypto` (certificates, keys, CSRs).
//!
//! The crate's interface is `protocol` and `provider` (the binary and the protocol tests use them); every other
//! module is `pub(crate)`, so the compiler reports what nothing uses.
pub(crate) mod attributes;
pub(crate) mod cluster_api;
pub(crate) mod cluster_facts;
pub(crate) mod crypto;
pub(crate) mod data_sources;
pub(crate) mod errors;
pub(crate) mod gone;
pub(crate) mod import_id;
pub(crate) mod kube;
pub(crate) mod list;
pub mod protocol;
pub mod provider;
pub(crate) mod quantity;
pub(crate) mod resources;
pub(crate) mod validate;
