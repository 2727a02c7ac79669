//! `liqo_generate`: this cluster's side of a peering with one remote cluster, and what the peer needs to know.
//!
//! Owns, on the cluster of its provider block:
//! - the tenant Namespace for the peer (`liqo-tenant-<remote cluster id>` unless `tenant_namespace` says
//!   otherwise), labelled `liqo.io/remote-cluster-id=<peer>`, `liqo.io/tenant-namespace=true` and the three
//!   Pod Security labels set to `privileged` (the gateway pods are privileged), as Liqo ≥1.1 creates it;
//! - the WireGuard key Secret `gw-keys` in it (labels `liqo.io/remote-cluster-id` and
//!   `networking.liqo.io/gateway-resource=true`; `data.privateKey` / `data.publicKey` are the raw 32-byte X25519
//!   keys). The key pair is made in this process and written straight to the cluster: the private key never
//!   enters Terraform state, plans, diagnostics or logs; only the public key is an output.
//!
//! Its outputs are this cluster's facts (cluster ID, pod CIDRs, external CIDR, API server URL) and the public key,
//! for the peer's `liqo_gateway` and friends.
//!
//! A Namespace that exists already (created by Liqo, by hand, or by another Terraform resource) is adopted, not
//! recreated; only a Namespace this resource created — marked `app.kubernetes.io/managed-by=terraform-provider-liqo`
//! — is deleted on destroy. An adopted one only loses the labels this resource added. The marker lives on the
//! object rather than in Terraform's private state because private state does not survive the two situations
//! that matter: a Read that finds the key Secret gone (the resource is then recreated from scratch) and import.
//!
//! Import ID: `<tenant_namespace>` (the remote cluster ID is read from the Namespace's label). Import adopts the
//! key pair it finds and never writes one: `gw-keys`, else the one key Secret labelled for the peer (Liqo
//! generates `gw-<gateway>` for a `liqoctl peer` gateway), else none (`liqoctl peer --networking-disabled`), which
//! leaves `wireguard_public_key` and `key_secret_name` null. Only `gw-keys` is deleted on destroy: a Secret Liqo
//! generated goes with its gateway.
//!
//! Files: `schema.rs` (attributes, plan-time checks, schema versions), `plan.rs` (plan rules, the default
//! namespace), `state.rs` (the full state), `objects.rs` (the Namespace, the key Secret, Liqo's
//! gateway Deployment), `status.rs` (when the Namespace is ready), `operations.rs` (create / delete / observe /
//! import), `tests.rs`.
use std::sync::Arc;

use crate::cluster_api::ClusterApi;

mod objects;
mod operations;
mod plan;
mod schema;
mod state;
mod status;
#[cfg(test)]
mod tests;

pub struct GenerateResource {
    cluster: Arc<ClusterApi>,
}
