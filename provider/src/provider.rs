//! The `provider "liqo"` block: its schema, validation and ConfigureProvider, which leaves a checked client
//! configuration in the block's [`ClusterApi`].
//!
//! One provider block (one alias) manages one cluster. ConfigureProvider only *stores* a client configuration
//! (files are read and checked then, nothing is contacted); the Kubernetes client is built when a resource first
//! needs the API. Plans therefore work while a cluster is unreachable, and a block whose values are not known
//! yet (the cluster is created in the same configuration) configures fine: only an operation that really needs
//! the API fails, saying which attribute was unknown and how to apply in two steps.
mod connection;

use crate::cluster_api::{Access, ClusterApi, Gone};
use crate::protocol::{DataSource, ListResource, Provider, Resource};
use async_trait::async_trait;
use liqo_schema::tf::{Attribute, Block, Diagnostics, Nesting, Schema, Type, Value};
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
        crate::resources::all(&self.cluster)
    }
    fn data_sources(&self) -> Vec<Arc<dyn DataSource>> {
        crate::data_sources::all(&self.cluster)
    }
    fn list_resources(&self) -> Vec<Arc<dyn ListResource>> {
        crate::list::all(&self.cluster)
    }
    fn validate_config(&self, config: &Value) -> Diagnostics {
        let mut diags = connection::validate_block(config);
        diags.extend(validate_liqo_namespace(config));
        diags.extend(validate_gone(config));
        diags
    }
    async fn configure(&self, config: Value, _terraform_version: &str) -> Diagnostics {
        configure(&self.cluster, &config, &connection::process_env).await
    }
}

/// ConfigureProvider with an injectable environment (unit tests never touch the process environment).
async fn configure(cluster: &ClusterApi, config: &Value, env: connection::Env<'_>) -> Diagnostics {
    let unknown = connection::unknown_attributes(config);
    if !unknown.is_empty() {
        cluster.set(Access::Unknown(unknown), None);
        return Diagnostics::new();
    }
    let mut diags = validate_liqo_namespace(config);
    diags.extend(validate_gone(config));
    let gone = Gone {
        this_cluster: config.get(PERMANENTLY_UNREACHABLE).as_bool() == Some(true),
        peers: config.get(PERMANENTLY_UNREACHABLE_PEERS).string_elements().unwrap_or_default().into_iter().collect(),
    };
    let built = connection::build(config, env).await;
    let server = built.as_ref().ok().map(crate::cluster_api::server_url);
    cluster.set_gone(gone.clone(), connection::describe_source(config, server.as_deref()));
    match built {
        Ok(cfg) if !diags.has_errors() => cluster.set(
            Access::Ready { config: Box::new(cfg), client: OnceCell::new(), facts: OnceCell::new() },
            config.get("liqo_namespace").as_str().map(str::to_string),
        ),
        Ok(_) => {}
        // A cluster that is gone may have taken its kubeconfig with it (a `kind_cluster` destroyed first): it is
        // never contacted, so its connection settings need not be usable.
        Err(_) if gone.this_cluster => {}
        Err(d) => diags.extend(d),
    }
    diags
}

/// The opt-in of a destroy without a cluster that is gone for good (docs/guides/day-2.md).
const PERMANENTLY_UNREACHABLE: &str = "permanently_unreachable";
const PERMANENTLY_UNREACHABLE_PEERS: &str = "permanently_unreachable_peers";

fn validate_gone(config: &Value) -> Diagnostics {
    let mut check = crate::validate::Validator::new(config);
    for (i, id) in config.get(PERMANENTLY_UNREACHABLE_PEERS).elements().iter().enumerate() {
        check.cluster_id_at(liqo_schema::tf::AttributePath::root(PERMANENTLY_UNREACHABLE_PEERS).index(i as i64), id);
    }
    check.finish()
}

fn validate_liqo_namespace(config: &Value) -> Diagnostics {
    let mut check = crate::validate::Validator::new(config);
    check.namespace("liqo_namespace");
    check.finish()
}

fn provider_block() -> Block {
    let s = |name: &str, env: &str, text: &str| {
        Attribute::optional(name, Type::String)
            .describe(format!("{text} Falls back to the `{env}` environment variable."))
    };
    let kubernetes = Attribute::nested(
        "kubernetes",
        Nesting::Single,
        vec![
            s("config_path", "KUBE_CONFIG_PATH", "Path to a kubeconfig file (`~/` is expanded; relative paths start from Terraform's working directory). Conflicts with `config_paths`."),
            Attribute::optional("config_paths", Type::list(Type::String)).describe(
                "Kubeconfig files merged in order (the first file to set a value wins, as with kubectl). Conflicts with `config_path`. Falls back to the `KUBE_CONFIG_PATHS` environment variable (a list separated like `PATH`).",
            ),
            s("config_context", "KUBE_CTX", "Kubeconfig context to use (default: the file's `current-context`)."),
            s("config_context_cluster", "KUBE_CTX_CLUSTER", "Kubeconfig cluster to use instead of the context's."),
            s("config_context_auth_info", "KUBE_CTX_AUTH_INFO", "Kubeconfig user to use instead of the context's."),
            s("host", "KUBE_HOST", "API server URL, e.g. `https://203.0.113.10:6443`. Overrides the kubeconfig's server."),
            s("token", "KUBE_TOKEN", "Bearer token (e.g. of a service account). Overrides the kubeconfig's credentials.").sensitive(),
            s("client_certificate", "KUBE_CLIENT_CERT_DATA", "PEM-encoded client certificate (use `base64decode()` on kubeconfig `*-data` values)."),
            s("client_key", "KUBE_CLIENT_KEY_DATA", "PEM-encoded private key of `client_certificate`.").sensitive(),
            s("cluster_ca_certificate", "KUBE_CLUSTER_CA_CERT_DATA", "PEM-encoded CA bundle that signed the API server's certificate."),
            Attribute::optional("insecure", Type::Bool).describe("Skip verification of the API server's certificate (test clusters only). Conflicts with `cluster_ca_certificate`. Falls back to the `KUBE_INSECURE` environment variable."),
            s("tls_server_name", "KUBE_TLS_SERVER_NAME", "Server name to verify the API server's certificate against (and to send as SNI)."),
            s("proxy_url", "KUBE_PROXY_URL", "Proxy for all API requests (`http://`, `https://` or `socks5://`)."),
            Attribute::nested(
                "exec",
                Nesting::Single,
                vec![
                    Attribute::required("api_version", Type::String).describe("Client authentication API version the plugin speaks, e.g. `client.authentication.k8s.io/v1beta1`."),
                    Attribute::required("command", Type::String).describe("Plugin command (e.g. `aws`, `gke-gcloud-auth-plugin`)."),
                    Attribute::optional("args", Type::list(Type::String)).describe("Arguments of the command."),
                    Attribute::optional("env", Type::map(Type::String)).describe("Extra environment variables of the command."),
                ],
            )
            .with_optional()
            .describe("Credential plugin that prints an ExecCredential (as in a kubeconfig's `users[].user.exec`). Do not combine with `token` or client certificates."),
        ],
    )
    .with_optional()
    .describe(
        "How to reach the cluster this provider block manages, with the same attributes and `KUBE_*` environment \
         fallbacks as the hashicorp/kubernetes provider. Explicit attributes override the kubeconfig's values. \
         The `KUBECONFIG` environment variable is not read.",
    );
    let liqo_namespace = Attribute::optional("liqo_namespace", Type::String)
        .describe("Namespace where Liqo is installed on this cluster (default `liqo`).");
    let permanently_unreachable = Attribute::optional(PERMANENTLY_UNREACHABLE, Type::Bool).describe(
        "Set to `true` only when this cluster is gone for good (deleted, or cut off for ever) and its peerings are \
         to be destroyed without it. The provider then never contacts it: the block's resources keep their prior \
         state at refresh and leave the state on destroy, each with a warning that lists the objects left on the \
         cluster; its data sources return no facts. Pair it with `permanently_unreachable_peers` in the blocks of \
         its peers. Day-2 guide: `docs/guides/day-2.md`.",
    );
    let permanently_unreachable_peers = Attribute::optional(PERMANENTLY_UNREACHABLE_PEERS, Type::set(Type::String))
        .describe(
            "Cluster IDs of peers of this cluster that are gone for good. Destroying a resource of this block that \
             belongs to a peering with one of them first unpeers this cluster the way `liqoctl force unpeer` does \
             (on Liqo 1.1 and later: the ForeignCluster marked `liqo.io/foreign-cluster-permanently-unreachable`, \
             the tenant namespace of that peer deleted, then the ForeignCluster), instead of waiting for Liqo's \
             finalizers, which wait for the peer.",
        );
    Block::new(
        "Manages Liqo 1.x declarative peering on one Kubernetes cluster; use one provider alias per cluster.",
        vec![kubernetes, liqo_namespace, permanently_unreachable, permanently_unreachable_peers],
    )
}

#[cfg(test)]
mod tests;
