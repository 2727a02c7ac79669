//! Everything Liqo-related on a cluster, as one table: what the demo prints and what tests use to prove that a
//! destroy left nothing behind (no orphaned object, no duplicate).
use std::collections::BTreeMap;

use anyhow::{Context, Result, ensure};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use serde_json::Value;

use liqo_schema::liqo::labels;

use crate::Ground;

/// One object found on a cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub cluster: String,
    pub kind: String,
    /// `namespace/name`, or `name` for cluster-scoped objects.
    pub name: String,
    /// A one-line summary of the object's status as Liqo (or Kubernetes) reports it.
    pub status: String,
}

/// Kinds listed, in the order a peering is built. `selector` narrows kinds that also hold non-Liqo objects.
const KINDS: &[(&str, &str, &str, &str, Option<&str>)] = &[
    ("", "v1", "Namespace", "namespaces", Some("liqo.io/tenant-namespace")),
    ("", "v1", "Secret", "secrets", Some("liqo.io/remote-cluster-id")),
    ("networking.liqo.io", "v1beta1", "Configuration", "configurations", None),
    ("networking.liqo.io", "v1beta1", "PublicKey", "publickeies", None),
    ("networking.liqo.io", "v1beta1", "GatewayServer", "gatewayservers", None),
    ("networking.liqo.io", "v1beta1", "GatewayClient", "gatewayclients", None),
    ("networking.liqo.io", "v1beta1", "Connection", "connections", None),
    (
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        "certificatesigningrequests",
        Some("liqo.io/remote-cluster-id"),
    ),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", Some("liqo.io/remote-cluster-id")),
    ("authentication.liqo.io", "v1beta1", "Tenant", "tenants", None),
    ("authentication.liqo.io", "v1beta1", "ResourceSlice", "resourceslices", None),
    ("offloading.liqo.io", "v1beta1", "VirtualNode", "virtualnodes", None),
    ("", "v1", "Node", "nodes", Some("liqo.io/type=virtual-node")),
    ("offloading.liqo.io", "v1beta1", "NamespaceOffloading", "namespaceoffloadings", None),
];

/// Lists every Liqo-related object on one cluster.
pub async fn list(cluster: &str, client: &kube::Client) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for (group, version, kind, plural, selector) in KINDS {
        for (name, o) in objects(cluster, client, [group, version, kind, plural], None, *selector).await? {
            let labels = o.metadata.labels.clone().unwrap_or_default();
            rows.push(Row {
                cluster: cluster.to_string(),
                kind: kind.to_string(),
                name,
                status: summary(kind, o.metadata.name.as_deref().unwrap_or_default(), &labels, &o.data),
            });
        }
    }
    Ok(rows)
}

/// Every Liqo-related object on one cluster (the kinds of [`list`]) by `(kind, namespace/name)`: its labels,
/// annotations and spec (`data` and `type` for a Secret), what a client chose when it wrote the object.
pub async fn written(cluster: &str, client: &kube::Client) -> Result<BTreeMap<(String, String), Value>> {
    let mut found = BTreeMap::new();
    for (group, version, kind, plural, selector) in KINDS {
        for (name, o) in objects(cluster, client, [group, version, kind, plural], None, *selector).await? {
            let mut written = serde_json::json!({
                "labels": o.metadata.labels.unwrap_or_default(),
                "annotations": o.metadata.annotations.unwrap_or_default(),
            });
            for field in ["spec", "data", "type"] {
                if let Some(value) = o.data.get(field) {
                    written[field] = value.clone();
                }
            }
            found.insert((kind.to_string(), name), written);
        }
    }
    Ok(found)
}

/// Every object of one kind (`[group, version, kind, plural]`) on a cluster, in `namespace` only when given, with
/// the label `selector` when given; each with its `namespace/name` (`name` when cluster-scoped).
pub async fn objects(
    cluster: &str,
    client: &kube::Client,
    [group, version, kind, plural]: [&str; 4],
    namespace: Option<&str>,
    selector: Option<&str>,
) -> Result<Vec<(String, DynamicObject)>> {
    let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let lp = selector.map(|s| ListParams::default().labels(s)).unwrap_or_default();
    let list = api.list(&lp).await.with_context(|| format!("listing {kind} on {cluster}"))?;
    Ok(list
        .items
        .into_iter()
        .map(|o| {
            let name = o.metadata.name.clone().unwrap_or_default();
            (o.metadata.namespace.as_ref().map_or(name.clone(), |ns| format!("{ns}/{name}")), o)
        })
        .collect())
}

/// Every Liqo-related object left on the given clusters of a ground.
pub async fn leftovers(ground: &Ground, clusters: &[&str]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for cluster in clusters {
        rows.extend(list(cluster, &ground.client(cluster).await?).await?);
    }
    Ok(rows)
}

/// Everything of Liqo still on a cluster, one line per object, `Kind namespace/name [finalizers]` (`Kind name
/// [finalizers]` when cluster-scoped): what `helm uninstall` of Liqo's chart must not leave behind. Unlike [`list`],
/// which shows what a peering made, this looks for any trace of Liqo, kinds found from the API rather than named:
/// * every object of every CRD whose group ends in `liqo.io` (the CRDs themselves stay: Helm never deletes a
///   chart's CRDs);
/// * Liqo's namespaces: `liqo`, `liqo-storage`, `liqo-tenant-*` and any labelled as a tenant namespace;
/// * Mutating and ValidatingWebhookConfigurations whose name starts with `liqo`;
/// * the pods in Liqo's namespaces, and any object there holding a finalizer of Liqo's (containing `liqo.io`),
///   whatever its kind: those block the namespace's deletion.
pub async fn liqo_left(client: &kube::Client) -> Result<Vec<String>> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::discovery::{Discovery, Scope, verbs};

    const WHERE: &str = "the cluster";
    let mut left = Vec::new();
    let line = |kind: &str, name: &str, object: &DynamicObject| {
        format!("{kind} {name} [{}]", object.metadata.finalizers.clone().unwrap_or_default().join(", "))
    };

    let mut namespaces = Vec::new();
    for (name, namespace) in objects(WHERE, client, ["", "v1", "Namespace", "namespaces"], None, None).await? {
        let tenant = namespace.metadata.labels.as_ref().is_some_and(|l| l.contains_key(labels::TENANT_NAMESPACE));
        if name == labels::DEFAULT_LIQO_NAMESPACE
            || name == "liqo-storage"
            || name.starts_with("liqo-tenant-")
            || tenant
        {
            left.push(line("Namespace", &name, &namespace));
            namespaces.push(name);
        }
    }
    for (kind, plural) in [
        ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations"),
        ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations"),
    ] {
        let resource = ["admissionregistration.k8s.io", "v1", kind, plural];
        for (name, object) in objects(WHERE, client, resource, None, None).await? {
            if name.starts_with("liqo") {
                left.push(line(kind, &name, &object));
            }
        }
    }

    let crds = Api::<CustomResourceDefinition>::all(client.clone())
        .list(&ListParams::default())
        .await
        .context("listing CustomResourceDefinitions")?;
    for crd in crds.items.iter().filter(|crd| crd.spec.group.ends_with("liqo.io")) {
        let versions = &crd.spec.versions;
        let Some(version) = versions.iter().find(|v| v.storage).or_else(|| versions.iter().find(|v| v.served)) else {
            continue;
        };
        let names = &crd.spec.names;
        let resource = [crd.spec.group.as_str(), version.name.as_str(), names.kind.as_str(), names.plural.as_str()];
        for (name, object) in objects(WHERE, client, resource, None, None).await? {
            left.push(line(&names.kind, &name, &object));
        }
    }

    // Every namespaced kind the API serves, listed once across namespaces (a request a kind, not a kind and a
    // namespace), kept when in Liqo's namespaces: pods all, anything else when a finalizer of Liqo's holds it.
    let discovery = match Discovery::new(client.clone()).run_aggregated().await {
        Ok(discovery) => discovery,
        Err(_) => Discovery::new(client.clone()).run().await.context("discovering the API's resources")?,
    };
    for group in discovery.groups() {
        for (resource, capabilities) in group.recommended_resources() {
            if capabilities.scope != Scope::Namespaced || !capabilities.supports_operation(verbs::LIST) {
                continue;
            }
            let gvkp =
                [resource.group.as_str(), resource.version.as_str(), resource.kind.as_str(), resource.plural.as_str()];
            let pods = resource.group.is_empty() && resource.kind == "Pod";
            for (name, object) in objects(WHERE, client, gvkp, None, None).await? {
                let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
                let finalized =
                    object.metadata.finalizers.iter().flatten().any(|finalizer| finalizer.contains("liqo.io"));
                if namespaces.iter().any(|n| n == namespace) && (pods || finalized) {
                    left.push(line(&resource.kind, &name, &object));
                }
            }
        }
    }
    // A Liqo object in Liqo's namespace with Liqo's finalizer is found twice (as a CRD's object and as held).
    let mut seen = std::collections::HashSet::new();
    left.retain(|entry| seen.insert(entry.clone()));
    Ok(left)
}

/// Fails with the table of what is left when any Liqo-related object is left on the given clusters (after a
/// destroy, nothing may be).
pub async fn nothing_left(ground: &Ground, clusters: &[&str]) -> Result<()> {
    let left = leftovers(ground, clusters).await?;
    ensure!(left.is_empty(), "Liqo objects are left behind:\n{}", table(&left));
    Ok(())
}

fn condition(data: &Value, ty: &str) -> Option<String> {
    data.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
        .and_then(|c| c["status"].as_str().map(str::to_string))
}

/// `name` and `labels` come from the object's metadata (a DynamicObject keeps metadata apart from `d`).
fn summary(kind: &str, name: &str, labels: &std::collections::BTreeMap<String, String>, d: &Value) -> String {
    let s = |p: &str| d.pointer(p).and_then(Value::as_str).unwrap_or("-").to_string();
    match kind {
        "Namespace" => s("/status/phase"),
        "Secret" => {
            if labels.contains_key("liqo.io/identity-type") {
                "control-plane identity (kubeconfig)".into()
            } else if labels.contains_key("networking.liqo.io/gateway-resource") {
                "WireGuard keys".into()
            } else if d.pointer("/data/csr").is_some() && name.starts_with("controlplane-key-") {
                "control-plane key (liqo_consumer_key)".into()
            } else if d.pointer("/data/csr").is_some() {
                // Liqo's own copy of a certificate it signed for a peer, with the CSR it answered.
                "certificate signed by Liqo".into()
            } else {
                "-".into()
            }
        }
        "Configuration" => {
            format!("NetworkCIDRsConfigured={}", condition(d, "NetworkCIDRsConfigured").unwrap_or("-".into()))
        }
        "PublicKey" => "peer key set".into(),
        "GatewayServer" => match d.pointer("/status/endpoint") {
            Some(e) => format!(
                "endpoint {}:{}",
                e["addresses"].as_array().and_then(|a| a.first()).and_then(Value::as_str).unwrap_or("?"),
                e["port"]
            ),
            None => "no endpoint yet".into(),
        },
        "GatewayClient" => {
            if d.pointer("/status/clientRef").is_some() {
                "gateway running".into()
            } else {
                "starting".into()
            }
        }
        // Liqo's gateways measure the tunnel's round trip and write it beside the state.
        "Connection" => match d.pointer("/status/latency/value").and_then(Value::as_str) {
            Some(latency) if !latency.is_empty() => format!("{} (latency {latency})", s("/status/value")),
            _ => s("/status/value"),
        },
        "CertificateSigningRequest" => {
            if d.pointer("/status/certificate").is_some() {
                "issued".into()
            } else {
                "pending".into()
            }
        }
        "RoleBinding" => format!("→ {}", s("/roleRef/name")),
        "Tenant" => format!("{} (tenant namespace {})", s("/spec/tenantCondition"), s("/status/tenantNamespace")),
        "ResourceSlice" => format!(
            "Authentication={} Resources={}",
            condition(d, "Authentication").unwrap_or("-".into()),
            condition(d, "Resources").unwrap_or("-".into())
        ),
        "VirtualNode" => format!(
            "VirtualKubelet={} Node={}",
            condition(d, "VirtualKubelet").unwrap_or("-".into()),
            condition(d, "Node").unwrap_or("-".into())
        ),
        "Node" => format!("Ready={}", condition(d, "Ready").unwrap_or("-".into())),
        "NamespaceOffloading" => format!("{} → {}", s("/status/offloadingPhase"), s("/status/remoteNamespaceName")),
        _ => "-".into(),
    }
}

/// Renders rows as an aligned text table.
pub fn table(rows: &[Row]) -> String {
    let header = Row { cluster: "CLUSTER".into(), kind: "KIND".into(), name: "NAME".into(), status: "STATUS".into() };
    let all: Vec<&Row> = std::iter::once(&header).chain(rows.iter()).collect();
    let w = |f: fn(&Row) -> &str| all.iter().map(|r| f(r).len()).max().unwrap_or(0);
    let (wc, wk, wn) = (w(|r| &r.cluster), w(|r| &r.kind), w(|r| &r.name));
    all.iter().map(|r| format!("{:wc$}  {:wk$}  {:wn$}  {}\n", r.cluster, r.kind, r.name, r.status)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summaries_read_liqo_status() {
        let rs = json!({"status": {"conditions": [
            {"type": "Authentication", "status": "Accepted"}, {"type": "Resources", "status": "Denied"}]}});
        let none = Default::default();
        assert_eq!(summary("ResourceSlice", "", &none, &rs), "Authentication=Accepted Resources=Denied");
        let gw = json!({"status": {"endpoint": {"addresses": ["127.0.0.1"], "port": 30742}}});
        assert_eq!(summary("GatewayServer", "", &none, &gw), "endpoint 127.0.0.1:30742");
        assert_eq!(summary("Connection", "", &none, &json!({"status": {"value": "Connected"}})), "Connected");
        assert_eq!(
            summary("Connection", "", &none, &json!({"status": {"value": "Connected", "latency": {"value": "1.2ms"}}})),
            "Connected (latency 1.2ms)"
        );
        let keys = [("networking.liqo.io/gateway-resource".to_string(), "true".to_string())].into();
        assert_eq!(summary("Secret", "", &keys, &json!({})), "WireGuard keys");
        let csr = json!({"data": {"csr": "LS0t"}});
        assert_eq!(summary("Secret", "controlplane-key-milan", &none, &csr), "control-plane key (liqo_consumer_key)");
        assert_eq!(summary("Secret", "liqo-remote-certificate-milan", &none, &csr), "certificate signed by Liqo");
    }

    #[test]
    fn table_aligns_columns() {
        let rows = vec![Row {
            cluster: "milan".into(),
            kind: "Tenant".into(),
            name: "t/rome".into(),
            status: "Active".into(),
        }];
        let t = table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0].find("KIND"), lines[1].find("Tenant"));
    }
}
