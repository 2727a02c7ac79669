//! `liqo_peer`: resource negotiation, on the **consumer** cluster.
//!
//! Owns, in the consumer's tenant namespace for the provider:
//! - the control-plane identity Secret `kubeconfig-controlplane-<provider id>` (labels
//!   `liqo.io/identity-type: ControlPlane` and `liqo.io/remote-cluster-id`, annotation
//!   `liqo.io/remote-tenant-namespace`), which Liqo's crd-replicator uses to copy ResourceSlices to the provider.
//!   Its kubeconfig is assembled here, inside the consumer cluster: the public parts `liqo_tenant` returns
//!   (`api_server_url`, `cluster_ca_certificate`, `client_certificate`) joined to the private key that
//!   `liqo_consumer_key` wrote to `client_key_secret`, so no key passes through Terraform. For clusters that cannot
//!   issue client certificates a whole kubeconfig may be brought instead, as the write-only `kubeconfig_wo`;
//! - the ResourceSlice `resource_slice_name` (default: the provider cluster ID) asking for `resources`.
//!
//! Create/update waits for the slice's `Authentication` and `Resources` conditions to be `Accepted` (a `Denied`
//! condition fails with Liqo's reason: `Resources` at once, `Authentication` once it has lasted
//! `status::AUTHENTICATION_DENIAL_GRACE`, since Liqo retries some of those), then — unless
//! `wait_for_virtual_node = false` — for the VirtualNode Liqo creates (same name) and its core Node to be `Ready`.
//! Delete follows Liqo's order (reference §6): slice (wait gone; its finalizer needs the credentials), VirtualNode
//! and Node (wait gone), then the Secret (wait gone; Liqo releases its finalizer when nothing replicated remains).
//!
//! With no credentials at all (neither the issued-certificate flow nor `kubeconfig_wo`) the identity Secret is one
//! Liqo minted in its handshake (`liqoctl peer`; an Identity owns it): it is kept as it is, never written, its key
//! never read (not even its public parts go to state), and destroy deletes the Identity as `liqoctl unpeer` does.
//!
//! Import ID: `<tenant_namespace>/<resource_slice_name>`; an imported peer whose identity Liqo minted keeps it
//! (no credential attribute set); any other is taken to use the issued-certificate flow with the key Secret
//! `liqo_consumer_key` names (`controlplane-key-<provider id>`).
//!
//! Files: `schema.rs` (attributes, plan-time checks), `plan.rs` (plan rules), `objects.rs` (the peering asked
//! for, the identity Secret and the ResourceSlice), `kubeconfig.rs` (the identity's kubeconfig and the key check),
//! `observed.rs` (the state read back from the objects), `status.rs` (wait verdicts on what Liqo reports),
//! `operations.rs` (create / update / delete / observe / import), `tests.rs`.
use std::sync::Arc;

use crate::cluster_api::ClusterApi;

mod kubeconfig;
mod objects;
mod observed;
mod operations;
mod plan;
mod schema;
mod status;
#[cfg(test)]
mod tests;

pub struct PeerResource {
    cluster: Arc<ClusterApi>,
}
