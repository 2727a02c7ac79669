//! The objects `liqo_generate` writes and reads — the tenant Namespace, the WireGuard key Secret — and Liqo's
//! gateway Deployment that uses the key, built and checked without the cluster.
use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use liqo_schema::liqo::labels;

use super::schema::attr;
use crate::kube::created_by_provider;

/// The labels Liqo looks the tenant namespace up by, plus Pod Security `privileged` (as Liqo ≥1.1 sets them).
pub fn tenant_namespace_labels(remote: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::REMOTE_CLUSTER_ID.to_string(), remote.to_string()),
        (labels::TENANT_NAMESPACE.to_string(), labels::TRUE.to_string()),
        (labels::POD_SECURITY_ENFORCE.to_string(), labels::POD_SECURITY_PRIVILEGED.to_string()),
        (labels::POD_SECURITY_AUDIT.to_string(), labels::POD_SECURITY_PRIVILEGED.to_string()),
        (labels::POD_SECURITY_WARN.to_string(), labels::POD_SECURITY_PRIVILEGED.to_string()),
    ])
}

/// The tenant Namespace as this resource applies it; `ours` adds the marker that makes destroy delete it.
pub fn namespace_object(generate: &attr::Generate, ours: bool) -> Namespace {
    let mut l = tenant_namespace_labels(&generate.remote_cluster_id);
    if ours {
        let (mark, by) = crate::kube::provider_mark();
        l.insert(mark, by);
    }
    Namespace {
        metadata: ObjectMeta {
            name: Some(generate.tenant_namespace.clone()),
            labels: Some(l),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    }
}

/// The peer a Namespace is the tenant namespace of, by its label.
pub fn peer_of(ns: &Namespace) -> Option<&str> {
    ns.metadata.labels.as_ref()?.get(labels::REMOTE_CLUSTER_ID).map(String::as_str)
}

pub const POD_SECURITY_LABELS: [&str; 3] =
    [labels::POD_SECURITY_ENFORCE, labels::POD_SECURITY_AUDIT, labels::POD_SECURITY_WARN];

/// What is wrong with an existing Namespace's Liqo labels, if anything (`None`: they are as we apply them).
/// Liqo 1.0 makes its tenant namespaces without Pod Security labels: a namespace this provider did not create
/// that has none of them is taken as it is, so adopting a Liqo 1.0 peering writes nothing to it.
pub fn namespace_drift(ns: &Namespace, remote: &str) -> Option<String> {
    let have = ns.metadata.labels.clone().unwrap_or_default();
    let liqo_1_0 = !created_by_provider(ns) && POD_SECURITY_LABELS.iter().all(|k| !have.contains_key(*k));
    let wrong: Vec<String> = tenant_namespace_labels(remote)
        .into_iter()
        .filter(|(k, _)| !(liqo_1_0 && POD_SECURITY_LABELS.contains(&k.as_str())))
        .filter(|(k, v)| have.get(k) != Some(v))
        .map(|(k, v)| {
            format!("{k}={v} (found {})", have.get(&k).map(|x| format!("{x:?}")).unwrap_or_else(|| "nothing".into()))
        })
        .collect();
    if wrong.is_empty() { None } else { Some(wrong.join(", ")) }
}

fn key_secret_labels(remote: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::REMOTE_CLUSTER_ID.to_string(), remote.to_string()),
        (labels::GATEWAY_RESOURCE.to_string(), labels::TRUE.to_string()),
    ])
}

pub fn key_secret_object(generate: &attr::Generate, keys: &crate::crypto::wireguard::KeyPair) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(labels::KEY_SECRET_NAME.to_string()),
            namespace: Some(generate.tenant_namespace.clone()),
            labels: Some(key_secret_labels(&generate.remote_cluster_id)),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".to_string()),
        data: Some(keys.secret_data()),
        ..Secret::default()
    }
}

/// The public key (base64) of a key Secret that still holds a valid pair labelled for `remote`; otherwise why not.
pub fn key_secret_public_key(secret: &Secret, remote: &str) -> Result<String, String> {
    let have = secret.metadata.labels.clone().unwrap_or_default();
    for (k, v) in key_secret_labels(remote) {
        if have.get(&k) != Some(&v) {
            return Err(format!("label {k}={v} is missing or different"));
        }
    }
    let data = secret.data.as_ref().ok_or("it has no data")?;
    crate::crypto::wireguard::verify(data).map(|public| crate::crypto::wireguard::encode(&public))
}

/// The Namespace with nothing but its name: applied as this provider's field manager, it drops the labels only
/// this provider set, while labels Liqo or whoever created the Namespace also set stay.
pub fn bare_namespace(name: &str) -> Namespace {
    Namespace { metadata: ObjectMeta { name: Some(name.to_string()), ..ObjectMeta::default() }, ..Namespace::default() }
}

/// The Namespaces Liqo takes for `remote`'s tenant namespace (it accepts only one).
pub fn tenant_namespace_selector(remote: &str) -> String {
    format!("{}={remote},{}", labels::REMOTE_CLUSTER_ID, labels::TENANT_NAMESPACE)
}

/// The Secrets Liqo's gateway takes for `remote`'s WireGuard key (it accepts only one).
pub fn key_secret_selector(remote: &str) -> String {
    format!("{}={remote},{}={}", labels::REMOTE_CLUSTER_ID, labels::GATEWAY_RESOURCE, labels::TRUE)
}

/// True when the Deployment's pods mount the key Secret (Liqo's WireGuard gateway Deployment `gw-<gateway>`,
/// whose `wireguard-config` volume its controller points at the gateway's key Secret).
pub fn mounts_key_secret(d: &Deployment) -> bool {
    let volumes = d.spec.as_ref().and_then(|s| s.template.spec.as_ref()).and_then(|p| p.volumes.as_ref());
    volumes
        .into_iter()
        .flatten()
        .any(|v| v.secret.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(labels::KEY_SECRET_NAME))
}

/// The label selector of a Deployment's pods (`matchLabels` only, which is what Liqo's templates use); `None`
/// when it has none, so no pod is touched by mistake.
pub fn pod_selector(d: &Deployment) -> Option<String> {
    let labels = d.spec.as_ref()?.selector.match_labels.as_ref().filter(|l| !l.is_empty())?;
    Some(labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(","))
}
