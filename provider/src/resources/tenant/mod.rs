//! `liqo_tenant`: the authentication half of a peering, on the **provider** cluster.
//!
//! Owns, for one consumer cluster:
//! - the consumer's client certificate: the consumer's CSR (`csr`, from `liqo_consumer_key` on the consumer, whose
//!   private key never leaves that cluster) submitted as a Kubernetes CertificateSigningRequest (signer
//!   `kubernetes.io/kube-apiserver-client`), approved by the provider and read back. Outputs are public:
//!   `client_certificate`, `cluster_ca_certificate` and `api_server_url`, which `liqo_peer` joins to the key inside
//!   the consumer cluster;
//! - RoleBinding `liqo-binding-<role>` in the tenant namespace, binding `User <consumer id>` to Liqo's
//!   control-plane ClusterRole `<role>`, found as Liqo finds it by label `app.kubernetes.io/name=remote-controlplane`
//!   (`liqo-remote-controlplane` unless the Helm release renames it): what the consumer's crd-replicator needs to
//!   replicate ResourceSlices;
//! - Tenant `<consumer id>` (`authzPolicy: TolerateNoHandshake`), ready when Liqo sets `status.tenantNamespace`.
//!
//! The tenant namespace itself belongs to `liqo_generate`. Import ID: `<tenant_namespace>/<consumer cluster id>`
//! (the Tenant's namespace and name). The certificate is not recovered by import: the plan after an import signs
//! the configured `csr` again (an in-place update, and nothing else) — except for a Tenant of Liqo's handshake
//! (`liqoctl peer`, `authzPolicy: KeysExchange`), whose consumer identity Liqo minted and renews: it is adopted
//! as it is (`authz_policy = "KeysExchange"`, `csr` = the CSR Liqo's handshake exchanged), and no certificate is
//! ever signed for it.
//!
//! Files: `schema.rs` (attributes, defaults and limits, plan-time checks), `plan.rs` (plan rules, renewal),
//! `objects.rs` (Tenant, RoleBinding, CertificateSigningRequest), `status.rs` (verdicts on what Kubernetes and Liqo
//! report), `state.rs` (the certificate and the imported states), `operations.rs` (create / update / delete /
//! observe / import), `tests.rs`.
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

pub struct TenantResource {
    cluster: Arc<ClusterApi>,
}
