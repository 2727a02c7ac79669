//! The key Secret `liqo_consumer_key` owns, and what makes one sound.
use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;
use liqo_schema::liqo::labels;

use crate::crypto;
use crate::resources::shared::control_plane_key::{CSR, PRIVATE_KEY, key_secret_name};

/// The key Secret: labelled for the peer like every per-peer object (without `liqo.io/identity-type`, so Liqo's
/// crd-replicator never takes it for an identity) and as this provider's.
pub fn key_secret(namespace: &str, provider: &str, key_pem: &str, csr_pem: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(key_secret_name(provider)),
            namespace: Some(namespace.to_string()),
            labels: Some(BTreeMap::from([
                (labels::REMOTE_CLUSTER_ID.to_string(), provider.to_string()),
                crate::kube::provider_mark(),
            ])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([
            (PRIVATE_KEY.to_string(), ByteString(key_pem.as_bytes().to_vec())),
            (CSR.to_string(), ByteString(csr_pem.as_bytes().to_vec())),
        ])),
        ..Default::default()
    }
}

/// The CSR of a key Secret and its common name when the Secret holds a private key and a CSR for that very key;
/// `None` otherwise (gone, emptied or edited: the resource is made again).
pub fn sound(secret: &Secret) -> Option<(String, String)> {
    let data = secret.data.as_ref()?;
    let key = std::str::from_utf8(&data.get(PRIVATE_KEY)?.0).ok()?;
    let csr = std::str::from_utf8(&data.get(CSR)?.0).ok()?;
    let subject = crypto::inspect_csr(csr.as_bytes()).ok()?;
    (crypto::private_key_public_key(key).ok()? == subject.public_key).then(|| (csr.to_string(), subject.common_name))
}
