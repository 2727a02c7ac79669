//! The `provider "liqo"` block: its schema, validation and ConfigureProvider, which leaves a checked client
//! configuration in the block's [`ClusterApi`].
//!
//! One provider block (one alias) manages one cluster. ConfigureProvider only *stores* a client configuration
//! (files are read and checked then, nothing is contacted); the Kubernetes client is built when a resource first
//! needs the API. Plans therefore work while a cluster is unreachable, and a block whose values are not known
//! yet (the cluster is created in the same configuration) configures fine: only an operation that really needs
//! the API fails, saying which attribute was unknown and how to apply in two steps — or, for a client that allows
//! deferral, is answered deferred by the protocol layer ([`Provider::config_unknown`]).
mod connection;

use crate::cluster_api::{Access, ClusterApi, Gone};
use crate::protocol::{DataSource, ListResource, Provider, Resource};
use async_trait::async_trait;
use liqo_schema::tf::{Block, Diagnostics, Schema, Value};
use std::sync::Arc;
use tokio::sync::OnceCell;

/// The provider: its block's schema and the resources and data sources bound to its cluster.
#[derive(Default)]
pub struct LiqoProvider {
    cluster: Arc<ClusterApi>,
}

#[async_trait]
impl Provider for LiqoProvider {
    fn provider_schema(&self) -> Schema {
        Schema { version: 0, block: provider_block() }
    }
    fn resources(&self) -> Vec<Arc<dyn Resource>> {
        crate::resources::all(&self.cluster).into_iter().map(|r| r as Arc<dyn Resource>).collect()
    }
    fn data_sources(&self) -> Vec<Arc<dyn DataSource>> {
        crate::data_sources::all(&self.cluster)
    }
    fn list_resources(&self) -> Vec<Arc<dyn ListResource>> {
        crate::list::all(&self.cluster)
    }
    fn validate_config(&self, config: &Value) -> Diagnostics {
        let mut diags = connection::validate_block(config);
        diags.extend(validate_declared(config));
        diags
    }
    async fn configure(&self, config: Value, _terraform_version: &str) -> Diagnostics {
        configure(&self.cluster, &config, &connection::process_env).await
    }
    fn config_unknown(&self) -> bool {
        self.cluster.is_unknown()
    }
}

/// ConfigureProvider with an injectable environment (unit tests never touch the process environment).
async fn configure(cluster: &ClusterApi, config: &Value, env: connection::Env<'_>) -> Diagnostics {
    let unknown = connection::unknown_attributes(config);
    if !unknown.is_empty() {
        cluster.set_access(Access::Unknown(unknown), None);
        return Diagnostics::new();
    }
    let mut diags = validate_declared(config);
    let gone = Gone {
        this_cluster: config.get(attr::permanently_unreachable).as_bool() == Some(true),
        peers: config
            .get(attr::permanently_unreachable_peers)
            .string_elements()
            .unwrap_or_default()
            .into_iter()
            .collect(),
    };
    let built = connection::build(config, env).await;
    let server = built.as_ref().ok().map(crate::cluster_api::server_url);
    cluster.set_gone_for_good(gone.clone(), connection::describe_source(config, server.as_deref()));
    match built {
        Ok(cfg) if !diags.has_errors() => cluster.set_access(
            Access::Ready { config: Box::new(cfg), client: OnceCell::new(), facts: OnceCell::new() },
            config.get(attr::liqo_namespace).as_str().map(str::to_string),
        ),
        Ok(_) => {}
        // A cluster that is gone may have taken its kubeconfig with it (a `kind_cluster` destroyed first): it is
        // never contacted, so its connection settings need not be usable.
        Err(_) if gone.this_cluster => {}
        Err(d) => diags.extend(d),
    }
    diags
}

/// The provider block's attributes. `permanently_unreachable` and `permanently_unreachable_peers` are the opt-in of
/// a destroy without a cluster that is gone for good (docs/guides/day-2.md).
pub(crate) mod attr {
    use super::connection::*;
    use crate::attributes::*;
    use liqo_schema::tf::{Nesting, Type};

    /// The text of an attribute with a `KUBE_*` environment fallback.
    fn from_env(var: &str, text: &str) -> String {
        format!("{text} Falls back to the `{var}` environment variable.")
    }

    attributes! {
        kubernetes: nested(Nesting::Single, kubernetes::declared()).describe(
            "How to reach the cluster this provider block manages, with the same attributes and `KUBE_*` environment \
             fallbacks as the hashicorp/kubernetes provider. Explicit attributes override the kubeconfig's values. \
             The `KUBECONFIG` environment variable is not read.",
        );
        liqo_namespace: optional(Type::String)
            .check(Check::Namespace)
            .describe("Namespace where Liqo is installed on this cluster (default `liqo`).");
        permanently_unreachable: optional(Type::Bool).describe(
            "Set to `true` only when this cluster is gone for good (deleted, or cut off for ever) and its peerings are \
             to be destroyed without it. The provider then never contacts it: the block's resources keep their prior \
             state at refresh and leave the state on destroy, each with a warning that lists the objects left on the \
             cluster; its data sources return no facts. Pair it with `permanently_unreachable_peers` in the blocks of \
             its peers. Day-2 guide: `docs/guides/day-2.md`.",
        );
        permanently_unreachable_peers: optional(Type::set(Type::String)).check(Check::ClusterId).describe(
            "Cluster IDs of peers of this cluster that are gone for good. Destroying a resource of this block that \
             belongs to a peering with one of them first unpeers this cluster the way `liqoctl force unpeer` does \
             (on Liqo 1.1 and later: the ForeignCluster marked `liqo.io/foreign-cluster-permanently-unreachable`, \
             the tenant namespace of that peer deleted, then the ForeignCluster), instead of waiting for Liqo's \
             finalizers, which wait for the peer.",
        );
    }

    /// How to reach the cluster.
    pub mod kubernetes {
        use super::*;

        attributes! {
            config_path: optional(Type::String).describe(from_env(ENV_CONFIG_PATH, "Path to a kubeconfig file (`~/` is expanded; relative paths start from Terraform's working directory). Conflicts with `config_paths`."));
            config_paths: optional(Type::list(Type::String)).describe(
                "Kubeconfig files merged in order (the first file to set a value wins, as with kubectl). Conflicts with `config_path`. Falls back to the `KUBE_CONFIG_PATHS` environment variable (a list separated like `PATH`).",
            );
            config_context: optional(Type::String).describe(from_env(ENV_CTX, "Kubeconfig context to use (default: the file's `current-context`)."));
            config_context_cluster: optional(Type::String).describe(from_env(ENV_CTX_CLUSTER, "Kubeconfig cluster to use instead of the context's."));
            config_context_auth_info: optional(Type::String).describe(from_env(ENV_CTX_AUTH_INFO, "Kubeconfig user to use instead of the context's."));
            host: optional(Type::String).describe(from_env(ENV_HOST, "API server URL, e.g. `https://203.0.113.10:6443`. Overrides the kubeconfig's server."));
            token: optional(Type::String).sensitive().describe(from_env(ENV_TOKEN, "Bearer token (e.g. of a service account). Overrides the kubeconfig's credentials."));
            client_certificate: optional(Type::String).describe(from_env(ENV_CLIENT_CERT, "PEM-encoded client certificate (use `base64decode()` on kubeconfig `*-data` values)."));
            client_key: optional(Type::String).sensitive().describe(from_env(ENV_CLIENT_KEY, "PEM-encoded private key of `client_certificate`."));
            cluster_ca_certificate: optional(Type::String).describe(from_env(ENV_CLUSTER_CA, "PEM-encoded CA bundle that signed the API server's certificate."));
            insecure: optional(Type::Bool).describe("Skip verification of the API server's certificate (test clusters only). Conflicts with `cluster_ca_certificate`. Falls back to the `KUBE_INSECURE` environment variable.");
            tls_server_name: optional(Type::String).describe(from_env(ENV_TLS_SERVER_NAME, "Server name to verify the API server's certificate against (and to send as SNI)."));
            proxy_url: optional(Type::String).describe(from_env(ENV_PROXY_URL, "Proxy for all API requests (`http://`, `https://` or `socks5://`)."));
            exec: nested(Nesting::Single, exec::declared()).describe("Credential plugin that prints an ExecCredential (as in a kubeconfig's `users[].user.exec`). Do not combine with `token` or client certificates.");
        }

        /// The credential plugin.
        pub mod exec {
            use super::*;

            attributes! {
                api_version: required(Type::String).describe("Client authentication API version the plugin speaks, e.g. `client.authentication.k8s.io/v1beta1`.");
                command: required(Type::String).describe("Plugin command (e.g. `aws`, `gke-gcloud-auth-plugin`).");
                args: optional(Type::list(Type::String)).describe("Arguments of the command.");
                env: optional(Type::map(Type::String)).describe("Extra environment variables of the command.");
            }
        }
    }
}

/// The declared checks of the block's attributes (the cluster IDs of `permanently_unreachable_peers`, the Liqo
/// namespace).
fn validate_declared(config: &Value) -> Diagnostics {
    let mut check = crate::validate::Validator::new(config);
    check.declared(&attr::declared(), config, None);
    check.finish()
}

fn provider_block() -> Block {
    crate::attributes::block(
        "Manages Liqo 1.x declarative peering on one Kubernetes cluster; use one provider alias per cluster.",
        &attr::declared(),
    )
}

#[cfg(test)]
mod tests;
