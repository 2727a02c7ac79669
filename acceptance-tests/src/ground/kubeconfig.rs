//! Self-contained kubeconfig files (certificates embedded) and kube clients built from them.
use std::path::Path;

use anyhow::{Context, Result};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// A kubeconfig whose cluster and context are both named `cluster` and whose user is `<cluster>-<user>`, so
/// that kubeconfigs of several clusters can be merged (`KUBECONFIG=a:b`) without name clashes.
pub fn render(cluster: &str, user: &str, server: &str, ca_pem: &str, cert_pem: &str, key_pem: &str) -> Result<String> {
    let user = format!("{cluster}-{user}");
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {
            "server": server,
            "certificate-authority-data": STANDARD.encode(ca_pem),
        }}],
        "users": [{"name": user, "user": {
            "client-certificate-data": STANDARD.encode(cert_pem),
            "client-key-data": STANDARD.encode(key_pem),
        }}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user}}],
        "current-context": cluster,
    });
    serde_yaml::to_string(&config).context("serialising a kubeconfig")
}

/// A consumer's control-plane key as liqo_consumer_key makes it (ECDSA P-256, `CN=<consumer>`, `O=liqo.io`), held
/// by a test that plays the consumer: the CSR goes to liqo_tenant, the key stays in the test process.
pub struct ConsumerKey {
    pub key_pem: String,
    pub csr_pem: String,
}

impl ConsumerKey {
    pub fn new(consumer: &str) -> Result<ConsumerKey> {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name.push(rcgen::DnType::CommonName, consumer);
        params.distinguished_name.push(rcgen::DnType::OrganizationName, "liqo.io");
        let csr_pem = params.serialize_request(&key)?.pem()?;
        Ok(ConsumerKey { key_pem: key.serialize_pem(), csr_pem })
    }

    /// A client authenticating with this key and the certificate liqo_tenant issued for it (its `api_server_url`,
    /// `cluster_ca_certificate` and `client_certificate` outputs), as the consumer's Liqo would.
    pub async fn client(&self, tenant: &serde_json::Value) -> Result<kube::Client> {
        let field = |k: &str| tenant[k].as_str().with_context(|| format!("liqo_tenant has no `{k}`"));
        let yaml = render(
            "provider",
            "consumer",
            field("api_server_url")?,
            field("cluster_ca_certificate")?,
            field("client_certificate")?,
            &self.key_pem,
        )?;
        client_from_yaml(&yaml).await
    }
}

/// A client for the current context of a kubeconfig file.
pub async fn client(path: &Path) -> Result<kube::Client> {
    let kubeconfig = Kubeconfig::read_from(path).with_context(|| format!("reading kubeconfig {}", path.display()))?;
    client_from(kubeconfig).await.with_context(|| format!("kubeconfig {}", path.display()))
}

/// A client for the current context of an in-memory kubeconfig (YAML).
pub async fn client_from_yaml(yaml: &str) -> Result<kube::Client> {
    client_from(Kubeconfig::from_yaml(yaml).context("parsing a kubeconfig")?).await
}

async fn client_from(kubeconfig: Kubeconfig) -> Result<kube::Client> {
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .context("loading a kubeconfig")?;
    kube::Client::try_from(config).context("building a Kubernetes client")
}
