//! The state as the cluster has it, read back from the ResourceSlice and the identity Secret (read and import):
//! drift in what this resource owns shows, what Liqo or others own stays out, and the key is never read.

use k8s_openapi::api::core::v1::Secret;
use liqo_schema::liqo::{ResourceSlice, labels};
use liqo_schema::tf::Value;

use super::kubeconfig::public_parts;
use super::objects::minted_by_liqo;
use super::schema::ISSUED;
use super::schema::attr;
use crate::quantity;
use crate::resources::lifecycle::observed_map;
use crate::resources::shared::control_plane_key;

/// The state as the cluster has it. `prior` is the previous state (Null on import): values the cluster does
/// not hold (the wait flag) come from it, and quantities equal in value keep the user's spelling.
pub fn observed_state(prior: &Value, rs: &ResourceSlice, secret: &Secret) -> Value {
    let mut s = if prior.is_null() {
        Value::object([
            (attr::wait_for_virtual_node, Value::Bool(true)),
            (attr::kubeconfig_wo, Value::Null),
            (attr::kubeconfig_wo_version, Value::Null),
        ])
    } else {
        prior.clone()
    };
    let ns = rs.metadata.namespace.clone().unwrap_or_default();
    let name = rs.metadata.name.clone().unwrap_or_default();
    s.set(attr::tenant_namespace, Value::string(ns));
    s.set(attr::resource_slice_name, Value::string(&name));
    let label = |k: &str| rs.metadata.labels.as_ref().and_then(|l| l.get(k)).cloned();
    let provider = label(labels::REMOTE_CLUSTER_ID).or_else(|| rs.spec.provider_cluster_id.clone());
    s.set(attr::provider_cluster_id, Value::opt_string(provider.clone()));
    let annotation = secret.metadata.annotations.as_ref().and_then(|a| a.get(labels::REMOTE_TENANT_NAMESPACE));
    // The annotation tells Liqo where the slice lives on the provider, and Liqo's slice finalizer needs it to clean
    // up there: an out-of-band change is drift repaired in place (null, see `plan.rs`), never a replacement,
    // whose delete would wait forever on a finalizer the broken annotation holds.
    let tenant_namespace = match prior.get(attr::provider_tenant_namespace).as_str() {
        Some(ours) if annotation.map(String::as_str) != Some(ours) => Value::Null,
        _ => Value::opt_string(annotation.cloned()),
    };
    s.set(attr::provider_tenant_namespace, tenant_namespace);
    // Liqo's own identity (imported, or kept so by configuring no credentials) is Liqo's: nothing of it is read.
    let liqo_identity = if prior.is_null() {
        minted_by_liqo(secret)
    } else {
        prior.get(attr::kubeconfig_wo_version).is_null() && ISSUED.iter().all(|a| prior.get(*a).is_null())
    };
    if liqo_identity {
        for attr in ISSUED.into_iter().chain([attr::proxy_url]) {
            s.set(attr, Value::Null);
        }
    }
    // The issued-certificate flow's public parts as the Secret holds them (an edit shows as drift and is rewritten);
    // never the key. A brought kubeconfig is write-only: nothing of it is read back.
    if !liqo_identity && prior.get(attr::kubeconfig_wo_version).is_null() {
        let parts = secret
            .data
            .as_ref()
            .and_then(|d| d.get(labels::KUBECONFIG_KEY))
            .and_then(|b| std::str::from_utf8(&b.0).ok())
            .and_then(public_parts);
        s.set(attr::api_server_url, Value::opt_string(parts.as_ref().map(|p| p.server.clone())));
        s.set(attr::cluster_ca_certificate, Value::opt_string(parts.as_ref().map(|p| p.ca_pem.clone())));
        s.set(attr::client_certificate, Value::opt_string(parts.as_ref().map(|p| p.cert_pem.clone())));
        s.set(attr::proxy_url, Value::opt_string(parts.and_then(|p| p.proxy_url)));
        if prior.is_null() {
            s.set(
                attr::client_key_secret,
                Value::string(control_plane_key::key_secret_name(provider.as_deref().unwrap_or_default())),
            );
        }
    }
    let managed = (!prior.is_null()).then(|| prior.get(attr::resources));
    let live = rs.spec.resources.iter().flatten().map(|(k, q)| (k.clone(), q.0.clone())).collect();
    s.set(attr::resources, observed_map(managed, live, quantity::same));
    s.set(attr::class, Value::opt_string(rs.spec.class.clone()));
    let create_vn = rs.metadata.annotations.as_ref().and_then(|a| a.get(labels::CREATE_VIRTUAL_NODE));
    let create_vn = match create_vn.map(String::as_str) {
        Some("true") => Value::Bool(true),
        Some("false") => Value::Bool(false),
        // Missing or mangled: null, so the next apply re-asserts it in place.
        _ => Value::Null,
    };
    match create_vn {
        Value::Bool(true) => s.set(attr::virtual_node_name, Value::string(&name)),
        Value::Bool(false) => s.set(attr::virtual_node_name, Value::Null),
        _ => {}
    }
    s.set(attr::create_virtual_node, create_vn);
    let granted = rs.status.as_ref().and_then(|st| st.resources.as_ref());
    s.set(
        attr::accepted_resources,
        granted.map(|g| Value::string_map(g.iter().map(|(k, q)| (k.clone(), q.0.clone())))).unwrap_or(Value::Null),
    );
    s
}
