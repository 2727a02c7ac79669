//! The identity Secret's kubeconfig: assembled from the issued certificate's public parts and this cluster's key
//! (checked to be the certified one), and its public parts read back for drift detection and import.
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::core::v1::Secret;

use crate::crypto;
use crate::kube::{OpError, is_terminating};
use crate::resources::shared::control_plane_key;

/// Names in the assembled kubeconfig (Liqo's `GenerateKubeconfig` shape: one cluster, one user, one context).
const KUBECONFIG_CONTEXT: &str = "default-context";
const KUBECONFIG_USER: &str = "liqo-controlplane";

/// The issued certificate's parts and this cluster's key, as Liqo's `GenerateKubeconfig` writes a control-plane
/// kubeconfig: cluster named after the provider, context `default-context` in the provider tenant namespace.
pub struct KubeconfigParts<'a> {
    pub server: &'a str,
    /// The cluster's `proxy-url`.
    pub proxy_url: Option<&'a str>,
    pub ca_pem: &'a str,
    pub cert_pem: &'a str,
    pub key_pem: &'a str,
    pub cluster_name: &'a str,
    pub namespace: &'a str,
}

pub fn assemble_kubeconfig(p: &KubeconfigParts<'_>) -> zeroize::Zeroizing<String> {
    let b64 = |s: &str| STANDARD.encode(s.as_bytes());
    let mut cluster = serde_json::json!({"server": p.server, "certificate-authority-data": b64(p.ca_pem)});
    if let Some(proxy) = p.proxy_url {
        cluster["proxy-url"] = proxy.into();
    }
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": p.cluster_name, "cluster": cluster}],
        "users": [{"name": KUBECONFIG_USER, "user": {
            "client-certificate-data": b64(p.cert_pem),
            "client-key-data": b64(p.key_pem),
        }}],
        "contexts": [{"name": KUBECONFIG_CONTEXT, "context": {"cluster": p.cluster_name, "user": KUBECONFIG_USER, "namespace": p.namespace}}],
        "current-context": KUBECONFIG_CONTEXT,
    });
    zeroize::Zeroizing::new(serde_yaml::to_string(&doc).expect("a JSON document always serialises to YAML"))
}

/// The public parts of an identity kubeconfig, for drift detection and import.
#[derive(Debug, PartialEq)]
pub struct PublicParts {
    pub server: String,
    pub ca_pem: String,
    pub cert_pem: String,
    pub proxy_url: Option<String>,
}

/// The public parts of an identity kubeconfig; `None` for a kubeconfig without them (e.g. a brought one using a
/// token).
pub fn public_parts(kubeconfig: &str) -> Option<PublicParts> {
    let doc: serde_yaml::Value = serde_yaml::from_str(kubeconfig).ok()?;
    let decode = |v: &serde_yaml::Value| String::from_utf8(STANDARD.decode(v.as_str()?).ok()?).ok();
    let cluster = doc.get("clusters")?.get(0)?.get("cluster")?;
    let user = doc.get("users")?.get(0)?.get("user")?;
    Some(PublicParts {
        server: cluster.get("server")?.as_str()?.to_string(),
        ca_pem: decode(cluster.get("certificate-authority-data")?)?,
        cert_pem: decode(user.get("client-certificate-data")?)?,
        proxy_url: cluster.get("proxy-url").and_then(|p| p.as_str()).map(str::to_owned),
    })
}

/// The private key of the key Secret, checked to be the one `cert_pem` was issued for. The errors name the Secret
/// and never quote the key.
pub fn key_for_certificate(
    secret: Option<&Secret>,
    object: &str,
    cert_pem: &str,
) -> Result<zeroize::Zeroizing<String>, OpError> {
    let failed =
        |reason: String, hint: &str| OpError::Failed { object: object.to_string(), reason, hint: hint.to_string() };
    let Some(secret) = secret.filter(|s| !is_terminating(*s)) else {
        return Err(failed(
            "it does not exist on this cluster".into(),
            "It holds this cluster's control-plane key, written by liqo_consumer_key: pass that resource's \
             `key_secret_name` as `client_key_secret` (Terraform then creates the key first), or apply again if it \
             was deleted out of band (liqo_consumer_key then makes a new key and the provider signs it).",
        ));
    };
    let key = secret
        .data
        .as_ref()
        .and_then(|d| d.get(control_plane_key::PRIVATE_KEY))
        .and_then(|b| String::from_utf8(b.0.clone()).ok())
        .map(zeroize::Zeroizing::new)
        .ok_or_else(|| {
            failed(
                format!("it has no `{}` entry", control_plane_key::PRIVATE_KEY),
                "Pass the Secret liqo_consumer_key wrote (`key_secret_name`).",
            )
        })?;
    let ours = crypto::private_key_public_key(&key).map_err(|why| {
        failed(
            format!("`{}`: {why}", control_plane_key::PRIVATE_KEY),
            "Pass the Secret liqo_consumer_key wrote (`key_secret_name`).",
        )
    })?;
    let certified = crypto::certificate_public_key(cert_pem.as_bytes()).map_err(|why| {
        failed(format!("client_certificate: {why}"), "Pass the provider's liqo_tenant `client_certificate`.")
    })?;
    if ours != certified {
        return Err(failed(
            "client_certificate was issued for another key than the one in this Secret".into(),
            "The certificate and the key must come from the same peering: pass liqo_tenant's `client_certificate` \
             for the CSR of the liqo_consumer_key whose `key_secret_name` is `client_key_secret`. After a key \
             rotation, apply again so that liqo_tenant signs the new CSR first.",
        ));
    }
    Ok(key)
}
