//! terraform-provider-liqo: Liqo 1.x declarative peering as Terraform resources.
//!
//! Layers (see DESIGN.md), each depending only on those below it:
//! - `protocol` speaks tfplugin6 and knows nothing of Liqo;
//! - `provider` is the provider block (schema, validation, ConfigureProvider); it lists the resources, data
//!   sources and list resources;
//! - `resources`, `data_sources` and `list` hold one module per Terraform type; none reaches into another
//!   layer's module of the same height: what two of them share lives below;
//! - below them: `attributes` (each type's attributes, declared once), `cluster_api` (the lazily connected API of the cluster one provider block points at),
//!   `cluster_facts` (cluster ID and CIDRs, as liqoctl reads them), `validate` (plan-time validators), `quantity` (Kubernetes resource quantities), `kube`
//!   (the only place that applies, reads, waits for and deletes Kubernetes objects), `errors` (the only place
//!   where failures become diagnostics) and `crypto` (certificates, keys, CSRs).
pub(crate) mod attributes;
pub mod cluster_api;
pub mod cluster_facts;
pub mod crypto;
pub mod data_sources;
pub mod errors;
pub(crate) mod gone;
pub mod kube;
pub mod list;
pub mod protocol;
pub mod provider;
pub mod quantity;
pub mod resources;
pub mod validate;
