//! The Kubernetes API of the cluster one provider block points at, as resources, data sources and list
//! resources hold it. ConfigureProvider (in `crate::provider`) only *stores* a client configuration here; the
//! client is built when something first needs the API, so plans work while a cluster is unreachable.
use crate::cluster_facts::ClusterFacts;
use liqo_schema::liqo::labels::DEFAULT_LIQO_NAMESPACE;
use liqo_schema::tf::{Diagnostic, Diagnostics};
use std::future::Future;
use std::sync::{Arc, RwLock};
use tokio::sync::OnceCell;

/// What ConfigureProvider left for the resources.
// Built once per ConfigureProvider and only ever held in an `Arc`: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Access {
    /// ConfigureProvider has not run (Terraform always configures before using resources).
    NotConfigured,
    /// Some attributes were unknown at configure time; their paths, for the error of any API call.
    Unknown(Vec<String>),
    /// A checked client configuration; the client is built from it on first use, and the cluster's facts are
    /// kept once read (see [`ClusterApi::facts`]).
    Ready { config: Box<kube::Config>, client: OnceCell<kube::Client>, facts: OnceCell<ClusterFacts> },
}

/// The cluster one provider block points at. Resources hold an `Arc<ClusterApi>`; nothing connects until a
/// resource first needs the API (plan works without a reachable cluster).
pub struct ClusterApi {
    access: RwLock<Arc<Access>>,
    liqo_namespace: RwLock<String>,
}

impl Default for ClusterApi {
    fn default() -> ClusterApi {
        ClusterApi {
            access: RwLock::new(Arc::new(Access::NotConfigured)),
            liqo_namespace: RwLock::new(DEFAULT_LIQO_NAMESPACE.to_string()),
        }
    }
}

impl ClusterApi {
    fn access(&self) -> Arc<Access> {
        self.access.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The Kubernetes client, built on first use from the provider block.
    pub async fn client(&self) -> Result<kube::Client, Diagnostic> {
        match &*self.access() {
            Access::Ready { config, client, .. } => client
                .get_or_try_init(|| async {
                    crate::kube::client::build(kube::Config::clone(config)).map_err(|e| {
                        Diagnostic::error(
                            "Cannot build the Kubernetes client",
                            format!("{e}. Check the credentials in this provider block's `kubernetes` settings (or in the kubeconfig they point at)."),
                        )
                    })
                })
                .await
                .cloned(),
            other => Err(unavailable(other)),
        }
    }

    /// This cluster's facts, read by `read` the first time and kept for the life of this provider process.
    /// Terraform starts a provider process per command and walk, and every `liqo_cluster` and `liqo_generate` of
    /// the block reads the same cluster ID and CIDRs, which Liqo sets once at installation: a hub's provider block
    /// would otherwise list them again for each consumer's resources. A failed read is not kept (the CIDRs may not
    /// be assigned yet), so the next caller reads again.
    pub(crate) async fn facts<F, Fut>(&self, read: F) -> Result<ClusterFacts, Diagnostics>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<ClusterFacts, Diagnostics>>,
    {
        match &*self.access() {
            Access::Ready { facts, .. } => facts.get_or_try_init(read).await.cloned(),
            other => Err(unavailable(other).into()),
        }
    }

    /// Namespace where Liqo is installed (`liqo_namespace`, default `liqo`). While the block's value is unknown
    /// this is the default, which no API call ever uses: every call fails first on the unknown configuration.
    pub fn liqo_namespace(&self) -> String {
        self.liqo_namespace.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The API server URL of this cluster as the provider block reaches it (used as a default where a peer
    /// needs this cluster's address, e.g. liqo_tenant's `api_server_url`).
    pub async fn api_server_url(&self) -> Result<String, Diagnostic> {
        match &*self.access() {
            Access::Ready { config, .. } => Ok(server_url(config)),
            other => Err(unavailable(other)),
        }
    }

    pub(crate) fn set(&self, access: Access, liqo_namespace: Option<String>) {
        *self.access.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(access);
        *self.liqo_namespace.write().unwrap_or_else(|e| e.into_inner()) =
            liqo_namespace.unwrap_or_else(|| DEFAULT_LIQO_NAMESPACE.to_string());
    }
}

/// Why there is no client: the error any API-needing operation reports.
fn unavailable(c: &Access) -> Diagnostic {
    match c {
        Access::Unknown(attrs) => Diagnostic::error(
            "Provider configuration not known yet",
            format!(
                "This operation needs the cluster's API, but the provider block's {} depended on values that are \
                 not known until apply (typically the cluster or its credentials are created in this same \
                 configuration). Apply in two steps: first create what the provider block depends on, e.g. \
                 `terraform apply -target=<the cluster resource>`, then run `terraform apply` again.",
                attrs.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
            ),
        ),
        _ => Diagnostic::error(
            "Provider not configured",
            "The provider block has not been configured yet; Terraform configures it before any resource operation, so this is a bug in the provider.",
        ),
    }
}

/// The API server URL a client configuration reaches, without a trailing slash.
pub(crate) fn server_url(config: &kube::Config) -> String {
    config.cluster_url.to_string().trim_end_matches('/').to_string()
}
