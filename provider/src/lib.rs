//! terraform-provider-liqo: Liqo 1.x declarative peering as Terraform resources.
//!
//! Layers (see DESIGN.md): `protocol` speaks tfplugin6 and knows nothing of Liqo; `provider` holds the
//! provider block and the lazily built Kubernetes clients; `resources` and `data_sources` hold one module per
//! Terraform type, `list` the list resources that find existing objects to import; `kube` is the only place
//! that applies, reads, waits for and deletes Kubernetes objects; `errors` is the only place where failures
//! become diagnostics; `crypto` reads and makes certificates, keys and CSRs.
pub mod crypto;
pub mod data_sources;
pub mod errors;
pub mod kube;
pub mod list;
pub mod protocol;
pub mod provider;
pub mod resources;
