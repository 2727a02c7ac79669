//! `liqo_consumer_key`: the consumer's control-plane key, on the **consumer** cluster.
//!
//! Owns Secret `controlplane-key-<provider id>` in the consumer's tenant namespace for the provider: an ECDSA P-256
//! private key made in this process and written straight to the cluster (data `privateKey`, PKCS#8 PEM, the form
//! of Liqo's own `authentication-keys`) and the certificate signing request for it (data `csr`). Only the CSR
//! (`CN=<this cluster's Liqo ID>`, `O=liqo.io`, what Liqo's control-plane users carry) is an output: `liqo_tenant`
//! has the provider cluster sign it, and `liqo_peer` joins the certificate to the key inside this cluster. The key
//! never enters Terraform state, plans or logs.
//!
//! Replacing the resource rotates the key (new key, new CSR; `liqo_tenant` signs it, `liqo_peer` rewrites the
//! identity Secret in the same apply). Import ID: `<tenant_namespace>/<provider_cluster_id>`.
//!
//! Files: `schema.rs` (attributes, plan-time checks), `plan.rs` (plan rules), `objects.rs` (the key Secret),
//! `operations.rs` (create / delete / observe / import), `tests.rs`.
use std::sync::Arc;

use crate::cluster_api::ClusterApi;

mod objects;
mod operations;
mod plan;
mod schema;
#[cfg(test)]
mod tests;

pub struct ConsumerKeyResource {
    cluster: Arc<ClusterApi>,
}
