//! The state as the cluster has it, read back from the ResourceSlice and the identity Secret (read and import):
//! drift in what this resource owns shows, what Liqo or others own stays out, and the key is never read.

use k8s_openapi::api::core::v1::Secret;
use liqo_schema::liqo::{ResourceSlice, labels};
use liqo_schema::tf::Value;

use super::kubeconfig::public_parts;
use super::objects::{minted_by_liqo, virtual_node_name};
use super::schema::{Flow, attr};
use crate::attributes::Field;
use crate::quantity;
use crate::resources::lifecycle::observed_map;
use crate::resources::shared::control_plane_key;
use crate::resources::shared::resource_slice::slice_provider;

/// The state as the cluster has it. `prior` is the previous state (Null on import): values the cluster does
/// not hold (the wait flag) come from it, and quantities equal in value keep the user's spelling.
pub fn observed_state(prior: &Value, rs: &ResourceSlice, secret: &Secret) -> Value {
    let ours = (!prior.is_null()).then(|| attr::Peer::of(prior));
    let mut s = ours.clone().unwrap_or_else(attr::Peer::defaults);
    let name = rs.metadata.name.clone().unwrap_or_default();
    s.tenant_namespace = rs.metadata.namespace.clone().unwrap_or_default();
    s.resource_slice_name = name.clone();
    let provider = slice_provider(rs).map(str::to_string);
    s.provider_cluster_id = provider.clone();
    let annotation = secret.metadata.annotations.as_ref().and_then(|a| a.get(labels::REMOTE_TENANT_NAMESPACE));
    // The annotation tells Liqo where the slice lives on the provider, and Liqo's slice finalizer needs it to clean
    // up there: an out-of-band change is drift repaired in place (null, see `plan.rs`), never a replacement,
    // whose delete would wait forever on a finalizer the broken annotation holds.
    s.provider_tenant_namespace = match ours.as_ref().and_then(|o| o.provider_tenant_namespace.as_ref()) {
        Some(written) if annotation != Some(written) => None,
        _ => annotation.cloned(),
    };
    // On import, Liqo's own identity is told by its owner; otherwise the state names its flow.
    let flow = match ours {
        None if minted_by_liqo(secret) => Flow::Minted,
        None => Flow::Issued,
        Some(_) => Flow::of(prior),
    };
    match flow {
        // Liqo's own identity (imported, or kept so by configuring no credentials) is Liqo's: nothing of it is read.
        Flow::Minted => s.proxy_url = None,
        // The issued-certificate flow's public parts as the Secret holds them (an edit shows as drift and is
        // rewritten); never the key.
        Flow::Issued => {
            let parts = secret
                .data
                .as_ref()
                .and_then(|d| d.get(labels::KUBECONFIG_KEY))
                .and_then(|b| std::str::from_utf8(&b.0).ok())
                .and_then(public_parts);
            s.api_server_url = parts.as_ref().map(|p| p.server.clone());
            s.cluster_ca_certificate = parts.as_ref().map(|p| p.ca_pem.clone());
            s.client_certificate = parts.as_ref().map(|p| p.cert_pem.clone());
            s.proxy_url = parts.and_then(|p| p.proxy_url);
            if ours.is_none() {
                s.client_key_secret = Some(control_plane_key::key_secret_name(provider.as_deref().unwrap_or_default()));
            }
        }
        // A brought kubeconfig is write-only: nothing of it is read back.
        Flow::Brought => {}
    }
    let managed = ours.as_ref().map(|o| o.resources.write());
    let live = rs.spec.resources.iter().flatten().map(|(k, q)| (k.clone(), q.0.clone())).collect();
    s.resources = Field::read(&observed_map(managed.as_ref(), live, quantity::same));
    s.class = rs.spec.class.clone();
    let create_vn = rs.metadata.annotations.as_ref().and_then(|a| a.get(labels::CREATE_VIRTUAL_NODE));
    s.create_virtual_node = match create_vn.map(String::as_str) {
        Some("true") => Some(true),
        Some("false") => Some(false),
        // Missing or mangled: null, so the next apply re-asserts it in place (the virtual node's name stays).
        _ => None,
    };
    if let Some(create_virtual_node) = s.create_virtual_node {
        s.virtual_node_name = virtual_node_name(create_virtual_node, name);
    }
    let granted = rs.status.as_ref().and_then(|st| st.resources.as_ref());
    s.accepted_resources = granted.map(|g| g.iter().map(|(k, q)| (k.clone(), q.0.clone())).collect());
    s.value()
}
