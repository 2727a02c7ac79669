//! `data "liqo_cluster"`: the facts a peer needs about this cluster's Liqo installation, read the way liqoctl
//! reads them (reference §2.1): the cluster ID from the ConfigMap labelled
//! `app.kubernetes.io/name=clusterid-configmap` (key `CLUSTER_ID`), the pod CIDR(s) and external CIDR from the
//! `status.cidr` of the Networks labelled `ipam.liqo.io/network-type=pod-cidr|external-cidr`, all in the Liqo
//! namespace; plus the API server URL the provider block uses and, when discoverable, the Liqo version.
//!
//! The facts are read by `crate::cluster_facts`, shared with `liqo_generate` and `liqo_consumer_key`.
use crate::cluster_api::ClusterApi;
use crate::cluster_facts::ClusterFacts;
use crate::errors::op_diags;
use crate::protocol::{Ctx, DataSource};
use async_trait::async_trait;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;
use liqo_schema::tf::{Diagnostic, Diagnostics, Schema, Value};
use std::sync::Arc;

const TYPE_NAME: &str = "liqo_cluster";
/// Liqo's controller manager Deployment with the default Helm release name; its image tag is the Liqo version.
const CONTROLLER_MANAGER: &str = "liqo-controller-manager";

/// The Liqo version from the controller manager's image tag; `None` when the Deployment is not where the
/// default installation puts it or the caller may not read it (the version is informative only).
pub(crate) async fn liqo_version(ctx: &Ctx, cluster: &ClusterApi) -> Result<Option<String>, Diagnostics> {
    let deployments: Api<Deployment> = Api::namespaced(cluster.client().await?, &cluster.liqo_namespace());
    let found = match crate::kube::get_opt(ctx, &deployments, CONTROLLER_MANAGER).await {
        Ok(d) => d,
        Err(crate::kube::OpError::Api { source: kube::Error::Api(s), .. }) if s.code == 403 => None,
        Err(e) => return Err(op_diags(&e)),
    };
    let containers = found.and_then(|d| d.spec).and_then(|s| s.template.spec).map(|s| s.containers).unwrap_or_default();
    let main = containers.iter().find(|c| c.name == "controller-manager").or(containers.first());
    Ok(main.and_then(|c| c.image.as_deref()).and_then(liqo_schema::liqo::image_tag).map(str::to_owned))
}

/// The `liqo_cluster` data source type, bound to the provider block's cluster.
pub struct ClusterDataSource {
    cluster: Arc<ClusterApi>,
}

impl ClusterDataSource {
    pub fn new(cluster: Arc<ClusterApi>) -> ClusterDataSource {
        ClusterDataSource { cluster }
    }
}

/// `liqo_cluster`'s attributes.
pub mod attr {
    use crate::attributes::*;
    use liqo_schema::tf::Type;

    attributes! {
        id: computed(Type::String).describe("The cluster ID.");
        cluster_id: computed(Type::String)
            .describe("Liqo cluster ID (`CLUSTER_ID` of the ConfigMap labelled `app.kubernetes.io/name=clusterid-configmap` in the Liqo namespace).");
        pod_cidrs: computed(Type::list(Type::String))
            .describe("Pod CIDR(s) as Liqo's IPAM assigned them (`status.cidr` of the Networks labelled `ipam.liqo.io/network-type=pod-cidr`).");
        external_cidr: computed(Type::String)
            .describe("External CIDR (`status.cidr` of the Network labelled `ipam.liqo.io/network-type=external-cidr`).");
        api_server_url: computed(Type::String).describe("API server URL as this provider block reaches it.");
        liqo_version: computed(Type::String).describe(
            "Liqo version: the image tag of Deployment `liqo-controller-manager` in the Liqo namespace; null when that Deployment is not found or not readable.",
        );
    }
}

fn schema() -> Schema {
    Schema {
        version: 0,
        block: crate::attributes::block(
            "Reads this cluster's Liqo identity: what a peer cluster needs to know about it. Use it with the provider \
             block of the cluster to describe; `liqo_generate` exposes the same values.",
            &attr::declared(),
        ),
    }
}

#[async_trait]
impl DataSource for ClusterDataSource {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    async fn read(&self, ctx: &Ctx, _config: Value) -> (Value, Diagnostics) {
        if self.cluster.gone_for_good().this_cluster {
            // Nothing to read, and a data source has no prior value to keep: null facts, so that a destroy (whose
            // first step reads every data source) goes on; resources that use them plan a replacement, which the
            // warning explains.
            let nulls = attr::declared().iter().map(|d| (d.key.name().to_string(), Value::Null)).collect();
            let warning = Diagnostic::warning(
                "liqo_cluster has no facts: the cluster is marked permanently unreachable",
                format!(
                    "The provider block sets `permanently_unreachable = true`, so {} is not read and every attribute \
                     is null. Use this only to destroy the peerings of a cluster that is gone for good.",
                    self.cluster.source()
                ),
            );
            return (Value::Object(nulls), warning.into());
        }
        let facts = match ClusterFacts::read(ctx, &self.cluster).await {
            Ok(f) => f,
            Err(d) => return (Value::Null, d),
        };
        let version = match liqo_version(ctx, &self.cluster).await {
            Ok(v) => v,
            Err(d) => return (Value::Null, d),
        };
        let state = Value::object([
            (attr::id, Value::string(&facts.cluster_id)),
            (attr::cluster_id, Value::string(&facts.cluster_id)),
            (attr::pod_cidrs, Value::string_list(facts.pod_cidrs)),
            (attr::external_cidr, Value::string(facts.external_cidr)),
            (attr::api_server_url, Value::string(facts.api_server_url)),
            (attr::liqo_version, Value::opt_string(version)),
        ]);
        (state, Diagnostics::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cluster gone for good: every attribute of the schema null, a warning, and nothing contacted.
    #[tokio::test]
    async fn a_gone_cluster_reads_as_null_facts_with_a_warning() {
        let cluster = Arc::new(ClusterApi::default());
        let gone = crate::cluster_api::Gone { this_cluster: true, peers: Default::default() };
        cluster.set_gone_for_good(gone, "https://127.0.0.1:1".into());
        let ctx = Ctx { cancel: tokio_util::sync::CancellationToken::new() };
        let (state, d) = ClusterDataSource::new(cluster).read(&ctx, Value::Null).await;
        assert!(!d.has_errors() && d.iter().count() == 1, "{d:?}");
        let attributes = state.entries().expect("an object");
        assert_eq!(attributes.len(), schema().block.attributes.len());
        assert!(attributes.values().all(Value::is_null), "{state:?}");
    }

    #[test]
    fn schema_is_all_computed_and_described() {
        let s = schema();
        assert!(
            s.block.attributes.iter().all(|a| a.computed && !a.optional && !a.required && !a.description.is_empty())
        );
    }
}
