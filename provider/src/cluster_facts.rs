//! What this cluster's Liqo installation tells its peers, read the way liqoctl reads it (reference §2.1): the
//! cluster ID from the ConfigMap labelled `app.kubernetes.io/name=clusterid-configmap` (key `CLUSTER_ID`), the
//! pod CIDR(s) and external CIDR from the `status.cidr` of the Networks labelled
//! `ipam.liqo.io/network-type=pod-cidr|external-cidr`, all in the Liqo namespace. `data "liqo_cluster"` and
//! `liqo_generate` output these facts; `liqo_consumer_key` names its CSR after the cluster ID.
use crate::cluster_api::ClusterApi;
use crate::errors::op_diags;
use crate::protocol::Ctx;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::Api;
use liqo_schema::liqo::Network;
use liqo_schema::liqo::labels;
use liqo_schema::tf::{Diagnostic, Diagnostics};

/// What this cluster tells its peers about itself.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterFacts {
    pub cluster_id: String,
    /// In the order the API lists them (by name), as liqoctl passes them on.
    pub pod_cidrs: Vec<String>,
    pub external_cidr: String,
    pub api_server_url: String,
}

impl ClusterFacts {
    /// Reads the cluster ID and CIDRs from the Liqo namespace, once per provider process ([`ClusterApi::facts`]).
    /// A Liqo still starting is waited for ([`STARTING`]); a missing installation, or one still starting after
    /// that, is an error naming what is missing and the `liqo_namespace` provider attribute.
    pub async fn read(ctx: &Ctx, cluster: &ClusterApi) -> Result<ClusterFacts, Diagnostics> {
        cluster.facts(|| Self::read_waiting(ctx, cluster, STARTING)).await
    }

    /// Reads until the facts are complete, while the Liqo namespace exists (its chart is being installed, e.g. by a
    /// `helm_release` of the same run) and for at most `bound`; without the namespace there is no Liqo to wait for.
    async fn read_waiting(ctx: &Ctx, cluster: &ClusterApi, bound: Duration) -> Result<ClusterFacts, Diagnostics> {
        let started = Instant::now();
        loop {
            let missing = match Self::read_once(ctx, cluster).await {
                Ok(facts) => return Ok(facts),
                Err(Read::Failed(d)) => return Err(d),
                Err(Read::Missing(d)) => d,
            };
            let client = cluster.client().await?;
            let namespaces: Api<Namespace> = Api::all(client);
            let installing =
                crate::kube::get_opt(ctx, &namespaces, &cluster.liqo_namespace()).await.map_err(|e| op_diags(&e))?;
            if installing.is_none() {
                return Err(missing);
            }
            if started.elapsed() >= bound {
                return Err(still_starting(missing, bound));
            }
            tokio::select! {
                _ = tokio::time::sleep(POLL) => {}
                _ = ctx.cancel.cancelled() => return Err(missing),
            }
        }
    }

    async fn read_once(ctx: &Ctx, cluster: &ClusterApi) -> Result<ClusterFacts, Read> {
        let failed = |e: crate::kube::OpError| Read::Failed(op_diags(&e));
        let client = cluster.client().await.map_err(|d| Read::Failed(d.into()))?;
        let namespace = cluster.liqo_namespace();
        let maps = list_cluster_id_maps(ctx, &client, &namespace).await.map_err(failed)?;
        let cluster_id = cluster_id_from(&maps, &namespace).map_err(|d| Read::missing_if(maps.is_empty(), d))?;

        // Both kinds in one request: every request is paid again by each `plan` that reads the data source.
        let networks: Api<Network> = Api::namespaced(client, &namespace);
        let (pod, external): (Vec<Network>, Vec<Network>) =
            crate::kube::list(ctx, &networks, &network_selector()).await.map_err(failed)?.into_iter().partition(|n| {
                n.metadata.labels.as_ref().and_then(|l| l.get(labels::NETWORK_TYPE)).map(String::as_str)
                    == Some(labels::NETWORK_TYPE_POD_CIDR)
            });
        // Liqo's controller-manager makes the Networks and its IPAM assigns them once its pods run.
        let pod_cidrs = cidrs_from(pod, labels::NETWORK_TYPE_POD_CIDR, &namespace).map_err(Read::Missing)?;
        let external_cidr = match cidrs_from(external, labels::NETWORK_TYPE_EXTERNAL_CIDR, &namespace)
            .map_err(Read::Missing)?
            .as_slice()
        {
            [one] => one.clone(),
            many => {
                return Err(Read::Failed(
                        Diagnostic::error(
                            "Several external CIDR Networks",
                            format!(
                                "Found {} Networks labelled {}={} in namespace {namespace} ({}); Liqo keeps exactly one. Check the Liqo installation.",
                                many.len(),
                                labels::NETWORK_TYPE,
                                labels::NETWORK_TYPE_EXTERNAL_CIDR,
                                many.join(", ")
                            ),
                        )
                        .into(),
                    ));
            }
        };
        let api_server_url = cluster.api_server_url().await.map_err(|d| Read::Failed(d.into()))?;
        Ok(ClusterFacts { cluster_id, pod_cidrs, external_cidr, api_server_url })
    }
}

/// How long the first operation on a cluster waits for a Liqo that is still starting: the cluster-ID ConfigMap
/// comes with the chart, the Networks and their CIDRs within seconds of Liqo's pods running.
const STARTING: Duration = Duration::from_secs(90);
const POLL: Duration = Duration::from_secs(2);

/// Why one read of the facts failed.
enum Read {
    /// Something Liqo writes while it starts is not there yet.
    Missing(Diagnostics),
    /// Anything else (an API error, an installation that is not as Liqo keeps it).
    Failed(Diagnostics),
}

impl Read {
    fn missing_if(missing: bool, d: Diagnostics) -> Read {
        if missing { Read::Missing(d) } else { Read::Failed(d) }
    }
}

/// `missing`, after waiting `bound` for a Liqo that kept its namespace but never completed.
fn still_starting(mut missing: Diagnostics, bound: Duration) -> Diagnostics {
    for d in &mut missing.0 {
        d.summary = format!("Liqo still not ready after {}s: {}", bound.as_secs(), d.summary);
        d.detail = format!(
            "{} The Liqo namespace exists, so Liqo looked installed or being installed; the provider waited {}s for it \
             (a Helm release of Liqo made in the same run finishes before Liqo has written everything). Check Liqo's pods \
             in that namespace.",
            d.detail,
            bound.as_secs()
        );
    }
    missing
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
    Ok(cluster_id_from(&list_cluster_id_maps(ctx, client, namespace).await?, namespace))
}

async fn list_cluster_id_maps(
    ctx: &Ctx,
    client: &kube::Client,
    namespace: &str,
) -> Result<Vec<ConfigMap>, crate::kube::OpError> {
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let selector = format!("{}={}", labels::APP_NAME, labels::CLUSTER_ID_CONFIGMAP_APP_NAME);
    crate::kube::list(ctx, &maps, &selector).await
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

    /// The answer to the provider process's first contact (`ClusterApi::client`).
    const VERSION: &str = r#"{"major":"1","minor":"34","gitVersion":"v1.34.4","gitCommit":"","gitTreeState":"","buildDate":"","goVersion":"","compiler":"","platform":""}"#;
    const CLUSTER_ID_MAPS: &str = r#"{"apiVersion":"v1","kind":"ConfigMapList","metadata":{},"items":[{"metadata":{"name":"liqo-clusterid-configmap","namespace":"liqo"},"data":{"CLUSTER_ID":"milan"}}]}"#;
    const NETWORKS: &str = r#"{"apiVersion":"ipam.liqo.io/v1alpha1","kind":"NetworkList","metadata":{},"items":[
        {"apiVersion":"ipam.liqo.io/v1alpha1","kind":"Network","metadata":{"name":"pod-cidr","namespace":"liqo","labels":{"ipam.liqo.io/network-type":"pod-cidr"}},"spec":{"cidr":"10.1.0.0/16"},"status":{"cidr":"10.1.0.0/16"}},
        {"apiVersion":"ipam.liqo.io/v1alpha1","kind":"Network","metadata":{"name":"external-cidr","namespace":"liqo","labels":{"ipam.liqo.io/network-type":"external-cidr"}},"spec":{},"status":{"cidr":"10.70.0.0/16"}}]}"#;
    const NETWORKS_UNASSIGNED: &str = r#"{"apiVersion":"ipam.liqo.io/v1alpha1","kind":"NetworkList","metadata":{},"items":[
        {"apiVersion":"ipam.liqo.io/v1alpha1","kind":"Network","metadata":{"name":"pod-cidr","namespace":"liqo","labels":{"ipam.liqo.io/network-type":"pod-cidr"}},"spec":{"cidr":"10.1.0.0/16"}},
        {"apiVersion":"ipam.liqo.io/v1alpha1","kind":"Network","metadata":{"name":"external-cidr","namespace":"liqo","labels":{"ipam.liqo.io/network-type":"external-cidr"}},"spec":{},"status":{"cidr":"10.70.0.0/16"}}]}"#;

    fn cluster_at(url: &str) -> ClusterApi {
        let cluster = ClusterApi::default();
        let config = kube::Config::new(url.parse().unwrap());
        cluster.set_access(
            crate::cluster_api::Access::Ready {
                config: Box::new(config),
                client: Default::default(),
                facts: Default::default(),
            },
            None,
        );
        cluster
    }

    fn ctx() -> Ctx {
        Ctx { cancel: tokio_util::sync::CancellationToken::new() }
    }

    #[tokio::test]
    async fn facts_are_read_once_per_provider_process() {
        // The fake server answers the first contact and two reads, then stops listening: a second read that went
        // to the API would fail.
        let (url, seen) =
            crate::kube::tests::fake_api_server(vec![(200, VERSION), (200, CLUSTER_ID_MAPS), (200, NETWORKS)]).await;
        let cluster = cluster_at(&url);
        let first = ClusterFacts::read(&ctx(), &cluster).await.expect("first read");
        assert_eq!((first.cluster_id.as_str(), first.external_cidr.as_str()), ("milan", "10.70.0.0/16"));
        assert_eq!(first.pod_cidrs, ["10.1.0.0/16"]);
        let second = ClusterFacts::read(&ctx(), &cluster).await.expect("second read, from the first");
        assert_eq!(first, second);
        assert_eq!(seen.lock().unwrap().len(), 3, "{:?}", seen.lock().unwrap());
    }

    const LIQO_NAMESPACE: &str = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"liqo"}}"#;
    const NO_MAPS: &str = r#"{"apiVersion":"v1","kind":"ConfigMapList","metadata":{},"items":[]}"#;
    const NOT_FOUND: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"namespaces \"liqo\" not found","reason":"NotFound","code":404}"#;

    /// The path of each request the fake server saw, in order.
    fn paths(seen: &std::sync::Mutex<Vec<String>>) -> Vec<String> {
        seen.lock()
            .unwrap()
            .iter()
            .map(|r| r.split(' ').nth(1).unwrap_or_default().split('?').next().unwrap().to_owned())
            .collect()
    }

    #[tokio::test]
    async fn a_liqo_still_starting_is_waited_for() {
        // IPAM has not assigned the pod CIDR at the first read; the Liqo namespace exists, so the read is made
        // again, and the facts come once it is assigned.
        let (url, seen) = crate::kube::tests::fake_api_server(vec![
            (200, VERSION),
            (200, CLUSTER_ID_MAPS),
            (200, NETWORKS_UNASSIGNED),
            (200, LIQO_NAMESPACE),
            (200, CLUSTER_ID_MAPS),
            (200, NETWORKS),
        ])
        .await;
        let facts = ClusterFacts::read(&ctx(), &cluster_at(&url)).await.expect("read once assigned");
        assert_eq!(facts.pod_cidrs, ["10.1.0.0/16"]);
        assert_eq!(
            paths(&seen)[1..],
            [
                "/api/v1/namespaces/liqo/configmaps",
                "/apis/ipam.liqo.io/v1alpha1/namespaces/liqo/networks",
                "/api/v1/namespaces/liqo",
                "/api/v1/namespaces/liqo/configmaps",
                "/apis/ipam.liqo.io/v1alpha1/namespaces/liqo/networks",
            ]
        );
    }

    #[tokio::test]
    async fn without_the_liqo_namespace_nothing_is_waited_for_and_a_failed_read_is_not_kept() {
        let (url, seen) = crate::kube::tests::fake_api_server(vec![
            (200, VERSION),
            (200, NO_MAPS),
            (404, NOT_FOUND),
            (200, CLUSTER_ID_MAPS),
            (200, NETWORKS),
        ])
        .await;
        let cluster = cluster_at(&url);
        let d = ClusterFacts::read(&ctx(), &cluster).await.unwrap_err();
        assert_eq!(d.0[0].summary, "Liqo not found in namespace liqo");
        let facts = ClusterFacts::read(&ctx(), &cluster).await.expect("read again once installed");
        assert_eq!(facts.cluster_id, "milan");
        assert_eq!(seen.lock().unwrap().len(), 5, "{:?}", seen.lock().unwrap());
    }

    #[tokio::test]
    async fn a_liqo_still_starting_after_the_bound_is_named() {
        let (url, _) = crate::kube::tests::fake_api_server(vec![
            (200, VERSION),
            (200, CLUSTER_ID_MAPS),
            (200, NETWORKS_UNASSIGNED),
            (200, LIQO_NAMESPACE),
        ])
        .await;
        let d = ClusterFacts::read_waiting(&ctx(), &cluster_at(&url), Duration::ZERO).await.unwrap_err();
        assert_eq!(d.0[0].summary, "Liqo still not ready after 0s: Network liqo/pod-cidr has no CIDR yet");
        assert!(d.0[0].detail.contains("liqo-ipam") && d.0[0].detail.contains("waited 0s"), "{}", d.0[0].detail);
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
}
