//! Adopting a peering that Liqo's own `liqoctl peer` made (real Liqo, `Ground::shared`), with the files
//! (`examples/adopt/`) and commands of `docs/guides/adopting-liqoctl-peerings.md`:
//! - Terraform 1.16.4: `terraform query -generate-config-out=generated.tf` with a `list` block per managed type
//!   and cluster, then `apply` (imports only), an empty plan, and `destroy -target` of the peer;
//! - OpenTofu 1.11.7 (no `terraform query`): `import` blocks whose IDs come from the `liqo_import_ids` data
//!   source, `tofu plan -generate-config-out=generated.tf`, then the same.
//!
//! Each client adopts a fresh `liqoctl peer` peering — network (Liqo's real gateways with keys Liqo generated, a
//! real WireGuard tunnel), authentication, resource slice — plus a `liqoctl offload namespace`: the apply must
//! change no object (every resourceVersion of the peering's objects on both clusters is the same before and
//! after) and the tunnel stays `Connected`, and `destroy -target` of the peer must
//! leave the consumer as `liqoctl unpeer` leaves it (no ResourceSlice, VirtualNode, Node or control-plane
//! Identity for the provider) while the provider's Tenant stays, owned by `liqo_tenant`.
//!
//! Run: `acceptance-tests/test -p liqo-acceptance --test adopt`.
use std::collections::BTreeMap;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::{Api, Client};
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME};

/// The namespace `liqoctl offload namespace` offloads in each round.
const OFFLOADED: &str = "adopted-demo";

/// The guide's files (`examples/adopt/`), which name the ground's clusters: `milan` and `rome` are both the
/// aliases of the provider blocks and the clusters' Liqo IDs.
fn guide_file(name: &str) -> Result<String> {
    let path = liqo_acceptance::ground::repository_root().join("examples/adopt").join(name);
    std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
}

/// A Liqo kind (`v1beta1`) or a core one (`group` empty, `v1`).
fn api_resource(group: &str, kind: &str, plural: &str) -> ApiResource {
    let version = if group.is_empty() { "v1" } else { "v1beta1" };
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// Every object of the peering on one cluster (`Kind namespace/name` → resourceVersion): the tenant and
/// offloaded namespaces, everything Liqo and liqoctl keep in them, and the virtual node.
async fn versions(cluster: &str, client: &Client) -> Result<BTreeMap<String, String>> {
    let gvk = |group: &str, version: &str, kind: &str, plural: &str| {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
    };
    let kinds = [
        gvk("", "v1", "Namespace", "namespaces"),
        gvk("", "v1", "Secret", "secrets"),
        gvk("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
        gvk("authentication.liqo.io", "v1beta1", "Tenant", "tenants"),
        gvk("authentication.liqo.io", "v1beta1", "Identity", "identities"),
        gvk("authentication.liqo.io", "v1beta1", "ResourceSlice", "resourceslices"),
        gvk("offloading.liqo.io", "v1beta1", "VirtualNode", "virtualnodes"),
        gvk("offloading.liqo.io", "v1beta1", "NamespaceOffloading", "namespaceoffloadings"),
        gvk("networking.liqo.io", "v1beta1", "Configuration", "configurations"),
        gvk("networking.liqo.io", "v1beta1", "PublicKey", "publickeies"),
        gvk("networking.liqo.io", "v1beta1", "GatewayServer", "gatewayservers"),
        gvk("networking.liqo.io", "v1beta1", "GatewayClient", "gatewayclients"),
    ];
    let ours = |ns: &str| ns.starts_with("liqo-tenant-") || ns == OFFLOADED;
    let mut out = BTreeMap::new();
    for ar in kinds {
        let kind = ar.kind.clone();
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        for o in api.list(&ListParams::default()).await.with_context(|| format!("listing {kind} on {cluster}"))? {
            let name = o.metadata.name.clone().unwrap_or_default();
            let place = match (kind.as_str(), o.metadata.namespace.as_deref()) {
                ("Namespace", _) if ours(&name) => name,
                (_, Some(ns)) if ours(ns) => format!("{ns}/{name}"),
                _ => continue,
            };
            out.insert(format!("{cluster} {kind} {place}"), o.metadata.resource_version.clone().unwrap_or_default());
        }
    }
    Ok(out)
}

async fn peering_versions(ground: &Ground) -> Result<BTreeMap<String, String>> {
    let mut all = versions(MILAN, &ground.client(MILAN).await?).await?;
    all.extend(versions(ROME, &ground.client(ROME).await?).await?);
    Ok(all)
}

/// `liqoctl peer` from rome to milan (the gateway server behind a NodePort Service: the ground has no load
/// balancer, like kind) and `liqoctl offload namespace`, as a user did it before adopting.
async fn peer_with_liqoctl(ground: &Ground) -> Result<()> {
    let (rome, milan) = (ground.kubeconfig(ROME).display().to_string(), ground.kubeconfig(MILAN).display().to_string());
    let took = ground
        .liqoctl(&[
            "peer",
            "--kubeconfig",
            &rome,
            "--remote-kubeconfig",
            &milan,
            "--gw-server-service-type",
            "NodePort",
            "--timeout",
            "180s",
        ])
        .await?;
    eprintln!("[adopt] liqoctl peer: {:.1?}", took.wall);
    let namespaces: Api<Namespace> = Api::all(ground.client(ROME).await?);
    if namespaces.get_opt(OFFLOADED).await?.is_none() {
        let ns = Namespace {
            metadata: ObjectMeta { name: Some(OFFLOADED.into()), ..Default::default() },
            ..Default::default()
        };
        namespaces.create(&PostParams::default(), &ns).await?;
    }
    ground
        .liqoctl(&["offload", "namespace", OFFLOADED, "--kubeconfig", &rome, "--pod-offloading-strategy", "Remote"])
        .await?;
    Ok(())
}

/// What `liqoctl unpeer` removes from the consumer: the slices for the provider, the virtual node, and the
/// control-plane Identity with its Secret.
async fn consumer_unpeered(ground: &Ground) -> Result<Vec<String>> {
    let client = ground.client(ROME).await?;
    let ns = format!("liqo-tenant-{MILAN}");
    let mut left = Vec::new();
    for (group, kind, plural, name) in [
        ("authentication.liqo.io", "ResourceSlice", "resourceslices", MILAN.to_string()),
        ("offloading.liqo.io", "VirtualNode", "virtualnodes", MILAN.to_string()),
        ("authentication.liqo.io", "Identity", "identities", format!("controlplane-{MILAN}")),
        ("", "Secret", "secrets", format!("kubeconfig-controlplane-{MILAN}")),
    ] {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &api_resource(group, kind, plural));
        if api.get_opt(&name).await?.is_some() {
            left.push(format!("{kind} {ns}/{name}"));
        }
    }
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client);
    if nodes.get_opt(MILAN).await?.is_some() {
        left.push(format!("Node {MILAN}"));
    }
    Ok(left)
}

/// Undoes what a round left (the remaining adopted resources are destroyed by the client first), so the next
/// round adopts a fresh liqoctl peering.
async fn unpeer_with_liqoctl(ground: &Ground) -> Result<()> {
    let (rome, milan) = (ground.kubeconfig(ROME).display().to_string(), ground.kubeconfig(MILAN).display().to_string());
    ground.liqoctl(&["unpeer", "--kubeconfig", &rome, "--remote-kubeconfig", &milan, "--timeout", "120s"]).await?;
    Ok(())
}

#[tokio::test]
async fn a_liqoctl_peering_is_adopted_without_touching_an_object() -> Result<()> {
    let ground = Ground::shared();
    for client in Cli::available() {
        let what = format!("adopting a liqoctl peering with {}", client.name());
        peer_with_liqoctl(ground).await.with_context(|| format!("{what}: liqoctl"))?;
        let before = peering_versions(ground).await?;

        let work = Workdir::new(client, &tf::provider_config(ground)).await?;
        let (peer, generate) = match client {
            Cli::OpenTofu => {
                work.write("import.tf", &guide_file("import.tf")?)?;
                let run = work.run(&["plan", "-input=false", "-no-color", "-generate-config-out=generated.tf"]).await?;
                ensure!(run.success() || work.path().join("generated.tf").exists(), "{what}: {run}");
                // OpenTofu writes every optional argument from state (liqo_offload's remote_namespace_name too):
                // the guide applies that file as written.
                ensure!(
                    std::fs::read_to_string(work.path().join("generated.tf"))?.contains("remote_namespace_name"),
                    "{what}: OpenTofu no longer writes liqo_offload's remote_namespace_name; the guide's note is stale"
                );
                ("liqo_peer.rome_to_milan", run)
            }
            _ => {
                work.write("adopt.tfquery.hcl", &guide_file("adopt.tfquery.hcl")?)?;
                let run = work.run(&["query", "-no-color", "-generate-config-out=generated.tf"]).await?;
                ensure!(run.success(), "{what}: {run}");
                ("liqo_peer.rome_0", run)
            }
        };
        eprintln!("[adopt] {}: generate: {:.1?}", client.name(), generate.duration);
        let generated = std::fs::read_to_string(work.path().join("generated.tf"))?;
        for ty in ["liqo_generate", "liqo_gateway", "liqo_tenant", "liqo_peer", "liqo_offload"] {
            ensure!(generated.contains(&format!("resource \"{ty}\"")), "{what}: no {ty} generated:\n{generated}");
        }
        // Both gateways, keeping the keys Liqo generated (no `gw-keys` Secret of this provider).
        ensure!(
            generated.matches("resource \"liqo_gateway\"").count() == 2,
            "{what}: both gateways are generated:\n{generated}"
        );
        ensure!(!generated.contains("gw-keys"), "{what}: Liqo's gateway keys are kept:\n{generated}");
        // The handshake Tenant's `csr` is Liqo's (public) CSR; no key, and no liqo_consumer_key: Liqo keeps its own.
        ensure!(!generated.contains("PRIVATE KEY"), "{what}: key material in the generated configuration");
        ensure!(
            !generated.contains("resource \"liqo_consumer_key\""),
            "{what}: a liqoctl peering has no key Secret of this provider:\n{generated}"
        );

        let applied = work.apply().await.with_context(|| format!("{what}: apply"))?;
        ensure!(
            applied.stdout.contains("7 imported, 0 added, 0 changed, 0 destroyed"),
            "{what}: the apply must only import:\n{}",
            applied.stdout
        );
        eprintln!("[adopt] {}: apply (imports): {:.1?}", client.name(), applied.duration);
        let after = peering_versions(ground).await?;
        let changed: Vec<String> = before
            .iter()
            .filter(|(k, v)| after.get(*k) != Some(*v))
            .map(|(k, v)| format!("{k}: {v} → {}", after.get(k).map(String::as_str).unwrap_or("gone")))
            .chain(after.keys().filter(|k| !before.contains_key(*k)).map(|k| format!("{k}: new")))
            .collect();
        ensure!(changed.is_empty(), "{what}: adopting changed objects:\n{}", changed.join("\n"));
        ensure!(before.len() > 10, "{what}: the snapshot missed the peering: {before:?}");

        let plan = work.plan().await?;
        ensure!(plan.is_empty(), "{what}: the plan after adoption is not empty:\n{}", plan.run().stdout);
        for (cluster, namespace) in [(MILAN, format!("liqo-tenant-{ROME}")), (ROME, format!("liqo-tenant-{MILAN}"))] {
            let connections: Api<DynamicObject> = Api::namespaced_with(
                ground.client(cluster).await?,
                &namespace,
                &api_resource("networking.liqo.io", "Connection", "connections"),
            );
            let states: Vec<String> = connections
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .map(|c| c.data.pointer("/status/value").and_then(|v| v.as_str()).unwrap_or("-").to_owned())
                .collect();
            ensure!(states == ["Connected"], "{what}: the adopted tunnel on {cluster} is {states:?}");
        }

        let destroyed =
            work.destroy_with(&[&format!("-target={peer}")]).await.with_context(|| format!("{what}: unpeer"))?;
        eprintln!("[adopt] {}: destroy -target={peer}: {:.1?}", client.name(), destroyed.duration);
        let left = consumer_unpeered(ground).await?;
        ensure!(left.is_empty(), "{what}: destroy -target={peer} left what liqoctl unpeer removes: {left:?}");
        let tenants: Api<DynamicObject> = Api::namespaced_with(
            ground.client(MILAN).await?,
            &format!("liqo-tenant-{ROME}"),
            &api_resource("authentication.liqo.io", "Tenant", "tenants"),
        );
        ensure!(tenants.get_opt(ROME).await?.is_some(), "{what}: the Tenant belongs to liqo_tenant and must stay");

        work.destroy().await.with_context(|| format!("{what}: destroy"))?;
        unpeer_with_liqoctl(ground).await.with_context(|| format!("{what}: cleaning up"))?;
    }
    Ok(())
}
