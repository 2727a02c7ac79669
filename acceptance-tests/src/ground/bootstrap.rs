//! Makes a fresh ground cluster look like one with Liqo 1.2 installed by Helm: Liqo's CRDs, namespace `liqo`,
//! the cluster-ID ConfigMap, `networks.ipam.liqo.io` CIDR objects with status, the WireGuard gateway
//! templates, the `liqo-remote-controlplane` ClusterRole and the controller-manager Deployment (its image tag is
//! how tools read Liqo's version). Liqo's controllers themselves are played by the simulator.
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::wait::{Condition, await_condition, conditions};
use kube::runtime::watcher;
use kube::{Api, Client};
use liqo_schema::liqo::ipam::{Network, NetworkSpec};
use liqo_schema::liqo::labels;
use serde::Deserialize;

use super::control_plane::SERVICE_CIDR;

/// Field manager of everything the ground installs.
pub(crate) const MANAGER: &str = "liqo-ground";
/// Liqo release whose installation the ground reproduces.
pub const LIQO_VERSION: &str = "v1.2.0";
/// Liqo's default internal (gateway-to-node) network.
const INTERNAL_CIDR: &str = "10.80.0.0/16";
/// ConfigMap (Liqo namespace) whose keys switch the simulator's fault injections on.
pub const FAULTS_CONFIGMAP: &str = "liqo-simulator-faults";

const SERVER_TEMPLATE: &str = include_str!("../../bootstrap/wireguard-server-template.yaml");
const CLIENT_TEMPLATE: &str = include_str!("../../bootstrap/wireguard-client-template.yaml");

/// What distinguishes one cluster's Liqo installation from another's.
pub struct Install<'a> {
    pub cluster_id: &'a str,
    pub pod_cidr: &'a str,
    pub external_cidr: &'a str,
    pub api_server: &'a str,
    /// The file of the rules of ClusterRole `liqo-remote-controlplane` ([`super::LiqoCrds`]).
    pub remote_controlplane_rules: &'a Path,
}

/// Installs Liqo's objects; `crds` makes the CRDs exist and waits until every one is Established (see
/// [`create_crds`]).
pub async fn install_liqo(
    client: &Client,
    install: &Install<'_>,
    crds: impl std::future::Future<Output = Result<()>>,
) -> Result<()> {
    let rules = read_remote_controlplane_rules(install.remote_controlplane_rules)?;
    // CRDs and the plain Kubernetes objects are independent; Liqo's custom objects need both.
    let (crds_done, base_done) = tokio::join!(crds, apply_base_objects(client, install, rules));
    crds_done?;
    base_done?;
    apply_networks(client, install).await?;
    for template in [SERVER_TEMPLATE, CLIENT_TEMPLATE] {
        apply_yaml_object(client, template).await?;
    }
    Ok(())
}

/// Waits until kube-controller-manager works: its service-account controller gives namespace `liqo` its
/// `default` ServiceAccount.
pub async fn wait_controllers(client: &Client, cluster: &str) -> Result<()> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), labels::DEFAULT_LIQO_NAMESPACE);
    let wait = await_condition(api, "default", |sa: Option<&ServiceAccount>| sa.is_some());
    match tokio::time::timeout(Duration::from_secs(60), wait).await {
        Ok(result) => {
            result.map(|_| ()).with_context(|| format!("watching ServiceAccount liqo/default in cluster {cluster}"))
        }
        Err(_) => bail!(
            "ServiceAccount liqo/default never appeared in cluster {cluster} within 60s: kube-controller-manager is not \
             working; see its log in the ground's logs directory"
        ),
    }
}

/// Creates the CRDs of `dir` through the cluster's API and waits until each is Established.
pub async fn create_crds(client: &Client, dir: &Path) -> Result<()> {
    apply_crd_files(client, &crd_files(dir)?, MANAGER).await
}

/// Applies the CRDs of `files` (one per file, as in Liqo's chart) as `manager`; see [`apply_crds`].
pub(crate) async fn apply_crd_files(client: &Client, files: &[PathBuf], manager: &str) -> Result<()> {
    let crds = files.iter().map(|file| read_crd(file)).collect::<Result<Vec<_>>>()?;
    apply_crds(client, crds, manager).await
}

/// Liqo's CRD files in `dir` ([`super::LiqoCrds`]).
pub fn crd_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let files = yaml_files(dir).with_context(|| {
        format!(
            "cannot read Liqo's CRD directory {} (LIQO_CRDS_DIR, else Liqo's chart in its Go module)",
            dir.display()
        )
    })?;
    if files.is_empty() {
        bail!("no *.yaml CRD files in {} (LIQO_CRDS_DIR, else Liqo's chart in its Go module)", dir.display());
    }
    Ok(files)
}

/// The `*.yaml` files of `dir`, sorted.
pub(crate) fn yaml_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    Ok(files)
}

/// The CustomResourceDefinition a file holds (one per file, as in Liqo's chart).
fn read_crd(file: &Path) -> Result<CustomResourceDefinition> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    serde_yaml::from_str(&text).with_context(|| format!("{} is not a CustomResourceDefinition", file.display()))
}

fn read_remote_controlplane_rules(file: &Path) -> Result<Vec<PolicyRule>> {
    #[derive(Deserialize)]
    struct Fragment {
        rules: Vec<PolicyRule>,
    }
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read {} (Liqo's ClusterRole rules)", file.display()))?;
    let fragment: Fragment =
        serde_yaml::from_str(&text).with_context(|| format!("parsing the rules in {}", file.display()))?;
    Ok(fragment.rules)
}

/// Applies `crds` with server-side apply as `manager` and waits until each is Established.
async fn apply_crds(client: &Client, crds: Vec<CustomResourceDefinition>, manager: &str) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let names: Vec<String> = crds.iter().filter_map(|crd| crd.metadata.name.clone()).collect();
    stream::iter(crds)
        .map(|crd| {
            let api = api.clone();
            async move {
                let name = crd.metadata.name.clone().unwrap_or_default();
                let (params, patch) = (PatchParams::apply(manager).force(), Patch::Apply(&crd));
                patch_retrying(|| api.patch(&name, &params, &patch))
                    .await
                    .with_context(|| format!("applying CustomResourceDefinition {name}"))
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<_>>()
        .await?;
    wait_established(client, names).await
}

/// Waits until each CustomResourceDefinition of `names` is Established, with one watch of them all: a watch per
/// CRD lists them one by one, and an API server without a watch cache reads and decodes every CRD of the cluster
/// from etcd for each of those lists (Liqo's 28, about 3 MB of schemas: 28 × 28 decodes per cluster start).
pub(crate) async fn wait_established(client: &Client, names: Vec<String>) -> Result<()> {
    let mut pending: HashSet<String> = names.into_iter().collect();
    let established = conditions::is_crd_established();
    let crds =
        watcher(Api::<CustomResourceDefinition>::all(client.clone()), watcher::Config::default()).applied_objects();
    let mut crds = std::pin::pin!(crds);
    let wait = async {
        while !pending.is_empty() {
            let Some(crd) = crds.try_next().await.context("watching CustomResourceDefinitions")? else {
                bail!("the watch of CustomResourceDefinitions ended");
            };
            if established.matches_object(Some(&crd)) {
                pending.remove(crd.metadata.name.as_deref().unwrap_or_default());
            }
        }
        Ok(())
    };
    match tokio::time::timeout(Duration::from_secs(60), wait).await {
        Ok(done) => done,
        Err(_) => {
            let mut late: Vec<&String> = pending.iter().collect();
            late.sort();
            bail!("CustomResourceDefinitions not Established within 60s: {late:?}")
        }
    }
}

async fn apply_base_objects(client: &Client, install: &Install<'_>, rules: Vec<PolicyRule>) -> Result<()> {
    let liqo = labels::DEFAULT_LIQO_NAMESPACE;
    let namespace =
        Namespace { metadata: ObjectMeta { name: Some(liqo.into()), ..Default::default() }, ..Default::default() };
    apply(&Api::<Namespace>::all(client.clone()), liqo, &namespace).await?;

    let cluster_id = ConfigMap {
        metadata: meta(labels::CLUSTER_ID_CONFIGMAP, &[(labels::APP_NAME, labels::CLUSTER_ID_CONFIGMAP_APP_NAME)]),
        data: Some(BTreeMap::from([(labels::CLUSTER_ID_KEY.to_owned(), install.cluster_id.to_owned())])),
        ..Default::default()
    };
    let faults = ConfigMap {
        metadata: meta(FAULTS_CONFIGMAP, &[("app.kubernetes.io/name", "liqo-simulator")]),
        ..Default::default()
    };
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), liqo);
    apply(&config_maps, labels::CLUSTER_ID_CONFIGMAP, &cluster_id).await?;
    apply(&config_maps, FAULTS_CONFIGMAP, &faults).await?;

    let role = ClusterRole {
        metadata: ObjectMeta {
            name: Some(labels::REMOTE_CONTROLPLANE_CLUSTER_ROLE.into()),
            labels: Some(string_map(&[
                (labels::APP_NAME, labels::REMOTE_CONTROLPLANE_APP_NAME),
                ("app.kubernetes.io/component", "authentication"),
                ("app.kubernetes.io/part-of", "liqo"),
            ])),
            ..Default::default()
        },
        rules: Some(rules),
        ..Default::default()
    };
    apply(&Api::<ClusterRole>::all(client.clone()), labels::REMOTE_CONTROLPLANE_CLUSTER_ROLE, &role).await?;

    let deployment: Deployment = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "liqo-controller-manager",
            "namespace": liqo,
            "labels": {
                "app.kubernetes.io/name": "controller-manager",
                "app.kubernetes.io/component": "controller-manager",
                "app.kubernetes.io/part-of": "liqo",
                "app.kubernetes.io/version": LIQO_VERSION,
            },
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": "controller-manager"}},
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "controller-manager"}},
                "spec": {"containers": [{
                    "name": "controller-manager",
                    "image": format!("ghcr.io/liqotech/liqo-controller-manager:{LIQO_VERSION}"),
                    "args": [
                        format!("--cluster-id={}", install.cluster_id),
                        format!("--liqo-namespace={liqo}"),
                        format!("--api-server-address-override={}", install.api_server),
                    ],
                }]},
            },
        },
    }))
    .context("building the liqo-controller-manager Deployment")?;
    apply(&Api::<Deployment>::namespaced(client.clone(), liqo), "liqo-controller-manager", &deployment).await
}

/// Networks are created with `spec.cidr`; Liqo's IPAM then publishes `status.cidr`, which is what peers get.
async fn apply_networks(client: &Client, install: &Install<'_>) -> Result<()> {
    let api: Api<Network> = Api::namespaced(client.clone(), labels::DEFAULT_LIQO_NAMESPACE);
    let networks = [
        (labels::NETWORK_TYPE_POD_CIDR, install.pod_cidr, None),
        (labels::NETWORK_TYPE_EXTERNAL_CIDR, install.external_cidr, Some(1)),
        (labels::NETWORK_TYPE_SERVICE_CIDR, SERVICE_CIDR, None),
        (labels::NETWORK_TYPE_INTERNAL_CIDR, INTERNAL_CIDR, Some(1)),
    ];
    for (kind, cidr, pre_allocated) in networks {
        let mut network = Network::new(kind, NetworkSpec { cidr: Some(cidr.into()), pre_allocated });
        network.metadata.labels = Some(string_map(&[(labels::NETWORK_TYPE, kind)]));
        apply(&api, kind, &network).await?;
        let status = serde_json::json!({"status": {"cidr": cidr}});
        api.patch_status(kind, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .with_context(|| format!("setting status.cidr of Network liqo/{kind}"))?;
    }
    Ok(())
}

/// Applies one namespaced custom object given as YAML (apiVersion, kind, metadata.name and .namespace set).
async fn apply_yaml_object(client: &Client, yaml: &str) -> Result<()> {
    let object: DynamicObject = serde_yaml::from_str(yaml).context("parsing an embedded bootstrap object")?;
    let types = object.types.clone().ok_or_else(|| anyhow!("embedded bootstrap object without apiVersion/kind"))?;
    let gvk = GroupVersionKind::try_from(&types).context("embedded bootstrap object apiVersion")?;
    let plural = format!("{}s", gvk.kind.to_lowercase());
    let resource = ApiResource::from_gvk_with_plural(&gvk, &plural);
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let name = object.metadata.name.clone().unwrap_or_default();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &resource);
    api.patch(&name, &apply_params(), &Patch::Apply(&object))
        .await
        .with_context(|| format!("applying {} {namespace}/{name}", gvk.kind))?;
    Ok(())
}

async fn apply<K>(api: &Api<K>, name: &str, object: &K) -> Result<()>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let (params, patch) = (apply_params(), Patch::Apply(object));
    patch_retrying(|| api.patch(name, &params, &patch))
        .await
        .with_context(|| format!("applying {} {name}", K::kind(&())))?;
    Ok(())
}

/// Runs a (idempotent) server-side apply again when the connection failed or the API server was briefly
/// overloaded: a ground of many control planes starts on few cores, and a fresh API server then drops the odd
/// connection while it bootstraps. Other errors are returned at once.
async fn patch_retrying<T, F, Fut>(mut patch: F) -> kube::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = kube::Result<T>>,
{
    const ATTEMPTS: u32 = 5;
    let mut delay = Duration::from_millis(200);
    for _ in 1..ATTEMPTS {
        match patch().await {
            Err(kube::Error::Service(_) | kube::Error::HyperError(_)) => {}
            Err(kube::Error::Api(status)) if matches!(status.code, 429 | 500 | 503 | 504) => {}
            other => return other,
        }
        tokio::time::sleep(delay).await;
        delay *= 2;
    }
    patch().await
}

fn apply_params() -> PatchParams {
    PatchParams::apply(MANAGER).force()
}

fn meta(name: &str, pairs: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(labels::DEFAULT_LIQO_NAMESPACE.into()),
        labels: Some(string_map(pairs)),
        ..Default::default()
    }
}

fn string_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}
