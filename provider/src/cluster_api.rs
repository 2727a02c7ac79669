//! The Kubernetes API of the cluster one provider block points at, as resources, data sources and list
//! resources hold it. ConfigureProvider (in `crate::provider`) only *stores* a client configuration here; the
//! client is built when something first needs the API, so plans work while a cluster is unreachable.
use crate::cluster_facts::ClusterFacts;
use liqo_schema::liqo::labels::DEFAULT_LIQO_NAMESPACE;
use liqo_schema::tf::{Diagnostic, Diagnostics};
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::OnceCell;

/// How long the first request of a provider process may take to reach the API server, retries included. Long
/// enough for an API server restart (the tests restart one for 5 s), short enough that a cluster that is gone
/// (connections refused, or a frozen server whose connections hang) fails a command in well under a minute.
const REACH_BUDGET: Duration = Duration::from_secs(30);
/// One attempt of that first request: a frozen API server accepts the TCP connection and never answers.
const REACH_ATTEMPT: Duration = Duration::from_secs(10);

/// What a provider block says about clusters that are gone for good: its own (`permanently_unreachable`) and its
/// peers' (`permanently_unreachable_peers`, cluster IDs). The opt-in of a destroy without them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gone {
    pub this_cluster: bool,
    pub peers: BTreeSet<String>,
}

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
    /// The outcome of the first contact is kept (a failure too): every resource of a cluster that is gone would
    /// otherwise spend the whole reach budget again, one after the other.
    Ready {
        config: Box<kube::Config>,
        client: OnceCell<Result<kube::Client, Diagnostic>>,
        facts: OnceCell<ClusterFacts>,
    },
}

/// The cluster one provider block points at. Resources hold an `Arc<ClusterApi>`; nothing connects until a
/// resource first needs the API (plan works without a reachable cluster).
pub struct ClusterApi {
    access: RwLock<Arc<Access>>,
    liqo_namespace: RwLock<String>,
    gone: RwLock<Gone>,
    /// Where the block's connection comes from (kubeconfig, context, host), for the error of an unreachable cluster.
    source: RwLock<String>,
    /// Peers this process has already force-unpeered from (`crate::gone::force_unpeer`); the lock also makes the
    /// resources of one peering that Terraform destroys at once wait for the first one's unpeering.
    forced: tokio::sync::Mutex<BTreeSet<String>>,
}

impl Default for ClusterApi {
    fn default() -> ClusterApi {
        ClusterApi {
            access: RwLock::new(Arc::new(Access::NotConfigured)),
            liqo_namespace: RwLock::new(DEFAULT_LIQO_NAMESPACE.to_string()),
            gone: RwLock::new(Gone::default()),
            source: RwLock::new(String::new()),
            forced: tokio::sync::Mutex::new(BTreeSet::new()),
        }
    }
}

impl ClusterApi {
    fn access(&self) -> Arc<Access> {
        self.access.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The Kubernetes client, built on first use from the provider block, once the API server has answered. A
    /// cluster marked `permanently_unreachable` is never contacted.
    pub async fn client(&self) -> Result<kube::Client, Diagnostic> {
        if self.gone_for_good().this_cluster {
            return Err(Diagnostic::error(
                "This cluster is marked permanently unreachable",
                format!(
                    "The provider block sets `permanently_unreachable = true`, so the provider does not contact {}: \
                     resources of this block only keep their state and leave it on destroy. Remove the setting once \
                     the cluster answers again.",
                    self.source()
                ),
            ));
        }
        match &*self.access() {
            Access::Ready { config, client, .. } => client.get_or_init(|| self.first_contact(config)).await.clone(),
            other => Err(unavailable(other)),
        }
    }

    /// Builds the client and asks the API server for its version, retrying refused connections and attempts that
    /// get no answer within [`REACH_ATTEMPT`] until [`REACH_BUDGET`] is spent.
    async fn first_contact(&self, config: &kube::Config) -> Result<kube::Client, Diagnostic> {
        let client = crate::kube::client::build(kube::Config::clone(config)).map_err(|e| {
            Diagnostic::error(
                "Cannot build the Kubernetes client",
                format!("{e}. Check the credentials in this provider block's `kubernetes` settings (or in the kubeconfig they point at)."),
            )
        })?;
        let start = Instant::now();
        let mut delay = Duration::from_millis(200);
        loop {
            let last = match tokio::time::timeout(REACH_ATTEMPT, client.apiserver_version()).await {
                Ok(Ok(_)) => return Ok(client),
                // The server answered: reachable. Whatever it refused is for the operation itself to report.
                Ok(Err(kube::Error::Api(_))) => return Ok(client),
                Ok(Err(e)) if !crate::kube::is_unreachable(&e) => return Ok(client),
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no answer within {}", crate::errors::human(REACH_ATTEMPT)),
            };
            if start.elapsed() + delay >= REACH_BUDGET {
                return Err(crate::errors::unreachable_cluster(&self.source(), &last, start.elapsed()));
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }

    /// What the provider block says about clusters gone for good.
    pub fn gone_for_good(&self) -> Gone {
        self.gone.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn forced_peers(&self) -> &tokio::sync::Mutex<BTreeSet<String>> {
        &self.forced
    }

    /// The API server and the settings it comes from, e.g. `https://10.0.0.1:6443 (kubeconfig milan.kubeconfig)`.
    pub fn source(&self) -> String {
        self.source.read().unwrap_or_else(|e| e.into_inner()).clone()
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

    /// Stores what the provider block says about clusters gone for good, and where its connection comes from.
    pub(crate) fn set_gone_for_good(&self, gone: Gone, source: String) {
        *self.gone.write().unwrap_or_else(|e| e.into_inner()) = gone;
        *self.source.write().unwrap_or_else(|e| e.into_inner()) = source;
    }

    /// The provider block's connection settings were not known when it was configured.
    pub(crate) fn is_unknown(&self) -> bool {
        matches!(**self.access.read().unwrap_or_else(|e| e.into_inner()), Access::Unknown(_))
    }

    /// Stores how to reach the cluster and the Liqo namespace (the default one when `None`); contacts nothing.
    pub(crate) fn set_access(&self, access: Access, liqo_namespace: Option<String>) {
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
                "This needs the cluster's API, but the provider block's {} depend on values that are not known until \
                 apply (typically the cluster or its credentials are created in this same configuration).\n\
                 A data source (liqo_cluster, liqo_peering, or one inside a module such as examples/modules/peering) \
                 is read while planning unless it depends on something not created yet: add `depends_on = [<the \
                 resources that create the clusters>]` to the data source or to the module block that holds it, and \
                 Terraform reads it during the apply, after the cluster exists; one `terraform apply` then builds \
                 the clusters and the peering.\n\
                 Refreshing a resource that already exists needs the cluster too: when the provider block becomes \
                 unknown again (its cluster is being replaced), apply in two steps, first `terraform apply \
                 -target=<the cluster resource>`, then `terraform apply`.\n\
                 A client that allows deferred actions (HCP Terraform Stacks, `terraform apply -allow-deferral`) is \
                 answered \"deferred\" instead and needs neither.",
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
