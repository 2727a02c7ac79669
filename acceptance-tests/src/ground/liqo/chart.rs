//! Liqo's own Helm chart, rendered by real `helm template` (what `helm install` sends, hooks aside) and applied
//! to a ground cluster with server-side apply.
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::{self, Scope};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, Client};
use serde::Deserialize;

/// Helm release name, as in Liqo's documentation (`helm install liqo liqo/liqo --namespace liqo`).
const RELEASE: &str = "liqo";
/// Field manager of what the ground applies from the chart.
const MANAGER: &str = "liqo-ground-helm";

/// Renders the chart with `values` (written next to the output in `work_dir` for whoever debugs it).
/// `--include-crds` because `helm install` installs the CRD subchart's CRDs too; `--no-hooks` because the
/// chart's only hook is the pre-delete uninstaller, which `helm install` does not run.
pub fn render(
    helm: &Path,
    chart: &Path,
    namespace: &str,
    kube_version: &str,
    values: &serde_json::Value,
    work_dir: &Path,
) -> Result<Vec<DynamicObject>> {
    std::fs::create_dir_all(work_dir).with_context(|| format!("creating {}", work_dir.display()))?;
    let values_file = work_dir.join("values.json");
    std::fs::write(&values_file, serde_json::to_vec_pretty(values)?)
        .with_context(|| format!("writing {}", values_file.display()))?;
    let output = Command::new(helm)
        .args(["template", RELEASE])
        .arg(chart)
        .args(["--namespace", namespace, "--include-crds", "--no-hooks", "--kube-version", kube_version])
        .arg("--values")
        .arg(&values_file)
        // Helm keeps caches and repository settings under these; the ground's directory, not the user's home.
        .env("HELM_CACHE_HOME", work_dir.join("helm/cache"))
        .env("HELM_CONFIG_HOME", work_dir.join("helm/config"))
        .env("HELM_DATA_HOME", work_dir.join("helm/data"))
        .output()
        .with_context(|| format!("running {} template", helm.display()))?;
    if !output.status.success() {
        bail!(
            "`helm template` of {} failed ({}): {}",
            chart.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let rendered = work_dir.join("rendered.yaml");
    std::fs::write(&rendered, &output.stdout).with_context(|| format!("writing {}", rendered.display()))?;
    let text = String::from_utf8(output.stdout).context("helm's output is not UTF-8")?;
    let mut objects = Vec::new();
    for document in serde_yaml::Deserializer::from_str(&text) {
        let value = serde_json::Value::deserialize(document)
            .with_context(|| format!("parsing a document of {}", rendered.display()))?;
        if value.is_null() {
            continue;
        }
        let object: DynamicObject = serde_json::from_value(value)
            .with_context(|| format!("a document of {} is not a Kubernetes object", rendered.display()))?;
        objects.push(object);
    }
    if objects.is_empty() {
        bail!("`helm template` of {} rendered no objects (see {})", chart.display(), rendered.display());
    }
    Ok(objects)
}

pub fn kind(object: &DynamicObject) -> &str {
    object.types.as_ref().map(|t| t.kind.as_str()).unwrap_or_default()
}

fn gvk(object: &DynamicObject) -> Result<GroupVersionKind> {
    let types = object.types.as_ref().ok_or_else(|| anyhow!("a rendered object has no apiVersion/kind"))?;
    GroupVersionKind::try_from(types).with_context(|| format!("apiVersion {:?}", types.api_version))
}

/// Applies the chart's CRDs and waits until each is Established.
pub async fn apply_crds(client: &Client, objects: &[DynamicObject]) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crds: Vec<&DynamicObject> = objects.iter().filter(|o| kind(o) == "CustomResourceDefinition").collect();
    if crds.is_empty() {
        bail!("the rendered chart has no CustomResourceDefinitions; is it Liqo's chart with its liqo-crds subchart?");
    }
    futures::future::try_join_all(crds.iter().map(|crd| {
        let api = api.clone();
        async move {
            let name = crd.metadata.name.clone().unwrap_or_default();
            api.patch(&name, &params(), &Patch::Apply(crd)).await.with_context(|| format!("applying CRD {name}"))
        }
    }))
    .await?;
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let established = await_condition(api.clone(), &name, conditions::is_crd_established());
        tokio::time::timeout(Duration::from_secs(60), established)
            .await
            .map_err(|_| anyhow!("CRD {name} was not Established within 60s"))?
            .with_context(|| format!("watching CRD {name}"))?;
    }
    Ok(())
}

/// Applies objects in order, each into `namespace` when its kind is namespaced and it names none (as Helm
/// does with the release namespace).
pub async fn apply(client: &Client, namespace: &str, objects: &[&DynamicObject]) -> Result<()> {
    let mut resources: HashMap<GroupVersionKind, (ApiResource, bool)> = HashMap::new();
    for object in objects {
        let gvk = gvk(object)?;
        if !resources.contains_key(&gvk) {
            let (resource, capabilities) = discovery::pinned_kind(client, &gvk)
                .await
                .with_context(|| format!("discovering {}/{} {}", gvk.group, gvk.version, gvk.kind))?;
            resources.insert(gvk.clone(), (resource, capabilities.scope == Scope::Namespaced));
        }
        let (resource, namespaced) = &resources[&gvk];
        let name = object.metadata.name.clone().unwrap_or_default();
        let api: Api<DynamicObject> = if *namespaced {
            let ns = object.metadata.namespace.clone().unwrap_or_else(|| namespace.to_owned());
            Api::namespaced_with(client.clone(), &ns, resource)
        } else {
            Api::all_with(client.clone(), resource)
        };
        let mut object = (*object).clone();
        if *namespaced && object.metadata.namespace.is_none() {
            object.metadata.namespace = Some(namespace.to_owned());
        }
        api.patch(&name, &params(), &Patch::Apply(&object))
            .await
            .with_context(|| format!("applying {} {name} from Liqo's chart", gvk.kind))?;
    }
    Ok(())
}

fn params() -> PatchParams {
    PatchParams::apply(MANAGER).force()
}
