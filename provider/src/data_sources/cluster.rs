//! `data "liqo_cluster"`: the facts a peer needs about this cluster's Liqo installation, read the way liqoctl
//! reads them (reference §2.1): the cluster ID from the ConfigMap labelled
//! `app.kubernetes.io/name=clusterid-configmap` (key `CLUSTER_ID`), the pod CIDR(s) and external CIDR from the
//! `status.cidr` of the Networks labelled `ipam.liqo.io/network-type=pod-cidr|external-cidr`, all in the Liqo
//! namespace; plus the API server URL the provider block uses and, when discoverable, the Liqo version.
//!
//! [`LocalCluster::read`] is shared with `liqo_generate`, whose outputs are the same facts; [`read_cluster_id`]
//! with `liqo_consumer_key`, whose CSR names this cluster's user after it.
use crate::errors::op_diags;
use crate::protocol::{Ctx, DataSource};
use crate::provider::Cluster;
use async_trait::async_trait;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use liqo_schema::liqo::Network;
use liqo_schema::liqo::labels;
use liqo_schema::tf::{Attribute, Block, Diagnostic, Diagnostics, Schema, Type, Value};
use std::sync::Arc;

const TYPE_NAME: &str = "liqo_cluster";
/// Liqo's controller manager Deployment with the default Helm release name; its image tag is the Liqo version.
const CONTROLLER_MANAGER: &str = "liqo-controller-manager";

/// What this cluster tells its peers about itself.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalCluster {
    pub cluster_id: String,
    /// In the order the API lists them (by name), as liqoctl passes them on.
    pub pod_cidrs: Vec<String>,
    pub external_cidr: String,
    pub api_server_url: String,
}

impl LocalCluster {
    /// Reads the cluster ID and CIDRs from the Liqo namespace. A missing installation, or IPAM that has not
    /// assigned the CIDRs yet, is an error naming the object and the `liqo_namespace` provider attribute.
    pub async fn read(ctx: &Ctx, cluster: &Cluster) -> Result<LocalCluster, Diagnostics> {
        let client = cluster.client().await?;
        let namespace = cluster.liqo_namespace();
        let cluster_id = read_cluster_id(ctx, &client, &namespace).await.map_err(|e| op_diags(&e))??;

        // Both kinds in one request: every request is paid again by each `plan` that reads the data source.
        let networks: Api<Network> = Api::namespaced(client, &namespace);
        let (pod, external): (Vec<Network>, Vec<Network>) = crate::kube::list(ctx, &networks, &network_selector())
            .await
            .map_err(|e| op_diags(&e))?
            .into_iter()
            .partition(|n| {
                n.metadata.labels.as_ref().and_then(|l| l.get(labels::NETWORK_TYPE)).map(String::as_str)
                    == Some(labels::NETWORK_TYPE_POD_CIDR)
            });
        let pod_cidrs = cidrs_from(pod, labels::NETWORK_TYPE_POD_CIDR, &namespace)?;
        let external_cidr = match cidrs_from(external, labels::NETWORK_TYPE_EXTERNAL_CIDR, &namespace)?.as_slice() {
            [one] => one.clone(),
            many => {
                return Err(Diagnostic::error(
                    "Several external CIDR Networks",
                    format!(
                        "Found {} Networks labelled {}={} in namespace {namespace} ({}); Liqo keeps exactly one. Check the Liqo installation.",
                        many.len(),
                        labels::NETWORK_TYPE,
                        labels::NETWORK_TYPE_EXTERNAL_CIDR,
                        many.join(", ")
                    ),
                )
                .into());
            }
        };
        Ok(LocalCluster { cluster_id, pod_cidrs, external_cidr, api_server_url: cluster.api_server_url().await? })
    }
}

/// This cluster's Liqo ID, read the way liqoctl reads it: `CLUSTER_ID` of the one ConfigMap labelled
/// `app.kubernetes.io/name=clusterid-configmap` in the Liqo `namespace`. The outer error is a failed API call; the
/// inner one says why the installation gives no single ID (no such ConfigMap, several, an empty ID), so a caller
/// that can do without the ID tells the two apart.
pub async fn read_cluster_id(
    ctx: &Ctx,
    client: &kube::Client,
    namespace: &str,
) -> Result<Result<String, Diagnostics>, crate::kube::OpError> {
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let selector = format!("{}={}", labels::APP_NAME, labels::CLUSTER_ID_CONFIGMAP_APP_NAME);
    let found = crate::kube::list(ctx, &maps, &selector).await?;
    Ok(cluster_id_from(&found, namespace))
}

/// The pod-CIDR and external-CIDR Networks (the selector matches no other kind).
fn network_selector() -> String {
    format!("{} in ({},{})", labels::NETWORK_TYPE, labels::NETWORK_TYPE_POD_CIDR, labels::NETWORK_TYPE_EXTERNAL_CIDR)
}

fn not_installed(namespace: &str, what: &str) -> Diagnostic {
    Diagnostic::error(
        format!("Liqo not found in namespace {namespace}"),
        format!(
            "{what}. Liqo 1.0.3 or later must be installed on this cluster; if it is installed in another namespace, set \
             the provider block's `liqo_namespace` attribute (now `{namespace}`)."
        ),
    )
}

/// The `CLUSTER_ID` of the single cluster-ID ConfigMap.
fn cluster_id_from(found: &[ConfigMap], namespace: &str) -> Result<String, Diagnostics> {
    let selector = format!("{}={}", labels::APP_NAME, labels::CLUSTER_ID_CONFIGMAP_APP_NAME);
    match found {
        [] => Err(not_installed(
            namespace,
            &format!(
                "There is no ConfigMap labelled {selector} (normally ConfigMap {namespace}/{}), which holds the cluster ID",
                labels::CLUSTER_ID_CONFIGMAP
            ),
        )
        .into()),
        [cm] => {
            let name = cm.metadata.name.clone().unwrap_or_default();
            cm.data.as_ref().and_then(|d| d.get(labels::CLUSTER_ID_KEY)).filter(|id| !id.is_empty()).cloned().ok_or_else(|| {
                Diagnostic::error(
                    format!("ConfigMap {namespace}/{name} has no cluster ID"),
                    format!("Its data has no non-empty `{}` key. Liqo writes it at installation; check the installation (`liqoctl info`).", labels::CLUSTER_ID_KEY),
                )
                .into()
            })
        }
        many => Err(Diagnostic::error(
            "Several cluster-ID ConfigMaps",
            format!(
                "ConfigMaps {} in namespace {namespace} are all labelled {selector}; Liqo keeps exactly one. Remove the stale one.",
                many.iter().map(|c| c.metadata.name.clone().unwrap_or_default()).collect::<Vec<_>>().join(", ")
            ),
        )
        .into()),
    }
}

/// The `status.cidr` of each Network, in name order; an empty status is an error naming the Network.
fn cidrs_from(mut networks: Vec<Network>, kind: &str, namespace: &str) -> Result<Vec<String>, Diagnostics> {
    if networks.is_empty() {
        return Err(not_installed(
            namespace,
            &format!("There is no Network (ipam.liqo.io) labelled {}={kind}", labels::NETWORK_TYPE),
        )
        .into());
    }
    networks.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    networks
        .iter()
        .map(|n| {
            let name = n.metadata.name.clone().unwrap_or_default();
            n.status.as_ref().and_then(|s| s.cidr.clone()).filter(|c| !c.is_empty()).ok_or_else(|| {
                Diagnostic::error(
                    format!("Network {namespace}/{name} has no CIDR yet"),
                    "Its status.cidr is empty: Liqo's IPAM has not assigned this network. Check that Liqo's IPAM (liqo-ipam) is running, then retry.",
                )
                .into()
            })
        })
        .collect()
}

/// The tag of an image reference (`ghcr.io/liqotech/liqo-controller-manager:v1.2.0@sha256:…` → `v1.2.0`).
fn image_tag(image: &str) -> Option<String> {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last_segment = without_digest.rsplit('/').next().unwrap_or(without_digest);
    last_segment.split_once(':').map(|(_, tag)| tag.to_string()).filter(|t| !t.is_empty())
}

/// The Liqo version from the controller manager's image tag; `None` when the Deployment is not where the
/// default installation puts it or the caller may not read it (the version is informative only).
async fn liqo_version(ctx: &Ctx, cluster: &Cluster) -> Result<Option<String>, Diagnostics> {
    let deployments: Api<Deployment> = Api::namespaced(cluster.client().await?, &cluster.liqo_namespace());
    let found = match crate::kube::get_opt(ctx, &deployments, CONTROLLER_MANAGER).await {
        Ok(d) => d,
        Err(crate::kube::OpError::Api { source: kube::Error::Api(s), .. }) if s.code == 403 => None,
        Err(e) => return Err(op_diags(&e)),
    };
    let containers = found.and_then(|d| d.spec).and_then(|s| s.template.spec).map(|s| s.containers).unwrap_or_default();
    let main = containers.iter().find(|c| c.name == "controller-manager").or(containers.first());
    Ok(main.and_then(|c| c.image.as_deref()).and_then(image_tag))
}

/// The `liqo_cluster` data source type, bound to the provider block's cluster.
pub struct ClusterDataSource {
    cluster: Arc<Cluster>,
}

impl ClusterDataSource {
    pub fn new(cluster: Arc<Cluster>) -> ClusterDataSource {
        ClusterDataSource { cluster }
    }
}

fn schema() -> Schema {
    Schema {
        version: 0,
        block: Block::new(
            "Reads this cluster's Liqo identity: what a peer cluster needs to know about it. Use it with the provider \
             block of the cluster to describe; `liqo_generate` exposes the same values.",
            vec![
                Attribute::computed("id", Type::String).describe("The cluster ID."),
                Attribute::computed("cluster_id", Type::String)
                    .describe("Liqo cluster ID (`CLUSTER_ID` of the ConfigMap labelled `app.kubernetes.io/name=clusterid-configmap` in the Liqo namespace)."),
                Attribute::computed("pod_cidrs", Type::list(Type::String))
                    .describe("Pod CIDR(s) as Liqo's IPAM assigned them (`status.cidr` of the Networks labelled `ipam.liqo.io/network-type=pod-cidr`)."),
                Attribute::computed("external_cidr", Type::String)
                    .describe("External CIDR (`status.cidr` of the Network labelled `ipam.liqo.io/network-type=external-cidr`)."),
                Attribute::computed("api_server_url", Type::String).describe("API server URL as this provider block reaches it."),
                Attribute::computed("liqo_version", Type::String).describe(
                    "Liqo version: the image tag of Deployment `liqo-controller-manager` in the Liqo namespace; null when that Deployment is not found or not readable.",
                ),
            ],
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
        let facts = match LocalCluster::read(ctx, &self.cluster).await {
            Ok(f) => f,
            Err(d) => return (Value::Null, d),
        };
        let version = match liqo_version(ctx, &self.cluster).await {
            Ok(v) => v,
            Err(d) => return (Value::Null, d),
        };
        let state = Value::object([
            ("id", Value::string(&facts.cluster_id)),
            ("cluster_id", Value::string(&facts.cluster_id)),
            ("pod_cidrs", Value::string_list(facts.pod_cidrs)),
            ("external_cidr", Value::string(facts.external_cidr)),
            ("api_server_url", Value::string(facts.api_server_url)),
            ("liqo_version", Value::opt_string(version)),
        ]);
        (state, Diagnostics::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use liqo_schema::liqo::{NetworkSpec, NetworkStatus};
    use std::collections::BTreeMap;

    fn config_map(name: &str, id: Option<&str>) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        cm.data = id.map(|id| BTreeMap::from([(labels::CLUSTER_ID_KEY.to_string(), id.to_string())]));
        cm
    }

    fn network(name: &str, cidr: Option<&str>) -> Network {
        let mut n = Network::new(name, NetworkSpec { cidr: cidr.map(str::to_string), pre_allocated: None });
        n.status = cidr.map(|c| NetworkStatus { cidr: Some(c.to_string()) });
        n
    }

    #[test]
    fn cluster_id_comes_from_the_single_labelled_config_map() {
        assert_eq!(cluster_id_from(&[config_map("liqo-clusterid-configmap", Some("milan"))], "liqo").unwrap(), "milan");

        let d = cluster_id_from(&[], "liqo").unwrap_err();
        assert!(d.0[0].summary.contains("Liqo not found in namespace liqo"));
        assert!(
            d.0[0].detail.contains("ConfigMap liqo/liqo-clusterid-configmap")
                && d.0[0].detail.contains("`liqo_namespace`"),
            "{}",
            d.0[0].detail
        );

        let d = cluster_id_from(&[config_map("liqo-clusterid-configmap", None)], "liqo").unwrap_err();
        assert!(d.0[0].summary.contains("ConfigMap liqo/liqo-clusterid-configmap"));

        let d = cluster_id_from(&[config_map("a", Some("x")), config_map("b", Some("y"))], "liqo").unwrap_err();
        assert!(d.0[0].detail.contains("a, b"));
    }

    #[test]
    fn cidrs_come_from_status_in_name_order_and_an_empty_status_is_named() {
        let nets = vec![
            network("pod-cidr-10-2-0-0-16", Some("10.2.0.0/16")),
            network("pod-cidr-10-1-0-0-16", Some("10.1.0.0/16")),
        ];
        assert_eq!(cidrs_from(nets, "pod-cidr", "liqo").unwrap(), ["10.1.0.0/16", "10.2.0.0/16"]);

        let d = cidrs_from(vec![network("pod-cidr", None)], "pod-cidr", "liqo").unwrap_err();
        assert_eq!(d.0[0].summary, "Network liqo/pod-cidr has no CIDR yet");

        let d = cidrs_from(vec![], "external-cidr", "liqo-system").unwrap_err();
        assert!(
            d.0[0].detail.contains("ipam.liqo.io/network-type=external-cidr")
                && d.0[0].detail.contains("`liqo-system`")
        );
    }

    #[test]
    fn version_is_the_image_tag() {
        assert_eq!(image_tag("ghcr.io/liqotech/liqo-controller-manager:v1.2.0").as_deref(), Some("v1.2.0"));
        assert_eq!(image_tag("localhost:5000/liqo/cm:v1.0.3@sha256:abcd").as_deref(), Some("v1.0.3"));
        assert_eq!(image_tag("localhost:5000/liqo/cm"), None);
        assert_eq!(image_tag("cm@sha256:abcd"), None);
    }

    #[test]
    fn schema_is_all_computed_and_described() {
        let s = schema();
        assert!(
            s.block.attributes.iter().all(|a| a.computed && !a.optional && !a.required && !a.description.is_empty())
        );
    }
}
