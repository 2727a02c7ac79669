//! Test ground for terraform-provider-liqo: real Kubernetes control planes on loopback with Liqo's CRDs,
//! a simulated Liqo control plane (labelled as such everywhere), and helpers for running real Terraform and
//! OpenTofu against them.
pub mod chain;
pub mod doc_examples;
pub mod ground;
pub mod http_proxy;
pub mod inventory;
pub mod observe;
pub mod offloaded_pod;
mod session;
pub mod simulator;
pub mod tf;

pub use ground::{Cluster, Ground, MILAN, ROME};
