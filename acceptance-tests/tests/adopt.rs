//! Adopting a peering that Liqo's own `liqoctl peer` made (real Liqo, `Ground::shared`), with the files
//! (`examples/adopt/`) and commands of `docs/guides/adopting-liqoctl-peerings.md`:
//! - Terraform 1.16.4: `terraform query -generate-config-out=generated.tf` with a `list` block per managed type
//!   and cluster, then `apply` (imports only), an empty plan, and `destroy -target` of the peer;
//! - OpenTofu 1.11.7 (no `terraform query`): `import` blocks whose IDs come from the `liqo_import_ids` data
//!   source, `tofu plan -generate-config-out=generated.tf`, then the same.
//!
//! Each client adopts a fresh `liqoctl peer --networking-disabled` peering plus a `liqoctl offload namespace`
//! (gateways do not run on the real ground yet): the apply must change no object (every resourceVersion of the
//! peering's objects on both clusters is the same before and after), and `destroy -target` of the peer must
//! leave the consumer as `liqoctl unpeer` leaves it (no ResourceSlice, VirtualNode, Node or control-plane
//! Identity for the provider) while the provider's Tenant stays, owned by `liqo_tenant`.
//!
//! Run: `acceptance-tests/test -p liqo-acceptance --test adopt`.
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine;
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

async fn liqoctl(program: &Path, args: &[&str]) -> Result<Duration> {
    let started = Instant::now();
    let output = tokio::process::Command::new(program).args(args).output().await.context("running liqoctl")?;
    if !output.status.success() {
        bail!(
            "liqoctl {} failed ({}):\n{}{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(started.elapsed())
}

/// `liqoctl peer --networking-disabled` from rome to milan and `liqoctl offload namespace`, as a user did it
/// before adopting.
async fn peer_with_liqoctl(ground: &Ground, cli: &Path) -> Result<()> {
    let (rome, milan) = (ground.kubeconfig(ROME).display().to_string(), ground.kubeconfig(MILAN).display().to_string());
    let took = liqoctl(
        cli,
        &["peer", "--kubeconfig", &rome, "--remote-kubeconfig", &milan, "--networking-disabled", "--timeout", "120s"],
    )
    .await?;
    eprintln!("[adopt] liqoctl peer --networking-disabled: {took:.1?}");
    let namespaces: Api<Namespace> = Api::all(ground.client(ROME).await?);
    if namespaces.get_opt(OFFLOADED).await?.is_none() {
        let ns = Namespace {
            metadata: ObjectMeta { name: Some(OFFLOADED.into()), ..Default::default() },
            ..Default::default()
        };
        namespaces.create(&PostParams::default(), &ns).await?;
    }
    liqoctl(cli, &["offload", "namespace", OFFLOADED, "--kubeconfig", &rome, "--pod-offloading-strategy", "Remote"])
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
async fn unpeer_with_liqoctl(ground: &Ground, cli: &Path) -> Result<()> {
    let (rome, milan) = (ground.kubeconfig(ROME).display().to_string(), ground.kubeconfig(MILAN).display().to_string());
    liqoctl(cli, &["unpeer", "--kubeconfig", &rome, "--remote-kubeconfig", &milan, "--timeout", "120s"]).await?;
    Ok(())
}

#[tokio::test]
async fn a_liqoctl_peering_is_adopted_without_touching_an_object() -> Result<()> {
    let ground = Ground::shared();
    let state = Ground::recorded_liqo(ground.dir())?.context("ground.json records real Liqo")?;
    let cli = state.bin.join("liqoctl");
    for client in Cli::available() {
        let what = format!("adopting a liqoctl peering with {}", client.name());
        peer_with_liqoctl(ground, &cli).await.with_context(|| format!("{what}: liqoctl"))?;
        let before = peering_versions(ground).await?;

        let work = Workdir::new(client, &tf::provider_config(ground)).await?;
        let (peer, generate) = match client {
            Cli::OpenTofu => {
                work.write("import.tf", &guide_file("import.tf")?)?;
                let run = work.run(&["plan", "-input=false", "-no-color", "-generate-config-out=generated.tf"]).await?;
                ensure!(run.success() || work.path().join("generated.tf").exists(), "{what}: {run}");
                // OpenTofu writes every optional argument from state; the one liqo_offload takes only with the
                // SelectedName strategy is the guide's single edit.
                let generated = std::fs::read_to_string(work.path().join("generated.tf"))?;
                let edited: String = generated
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("remote_namespace_name"))
                    .map(|l| format!("{l}\n"))
                    .collect();
                work.write("generated.tf", &edited)?;
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
        for ty in ["liqo_generate", "liqo_tenant", "liqo_peer", "liqo_offload"] {
            ensure!(generated.contains(&format!("resource \"{ty}\"")), "{what}: no {ty} generated:\n{generated}");
        }
        // The handshake Tenant's `csr` is Liqo's (public) CSR; no key, and no liqo_consumer_key: Liqo keeps its own.
        ensure!(!generated.contains("PRIVATE KEY"), "{what}: key material in the generated configuration");
        ensure!(
            !generated.contains("resource \"liqo_consumer_key\""),
            "{what}: a liqoctl peering has no key Secret of this provider:\n{generated}"
        );

        let applied = work.apply().await.with_context(|| format!("{what}: apply"))?;
        ensure!(
            applied.stdout.contains("5 imported, 0 added, 0 changed, 0 destroyed"),
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
        unpeer_with_liqoctl(ground, &cli).await.with_context(|| format!("{what}: cleaning up"))?;
    }
    Ok(())
}

/// Objects as `liqoctl network connect` writes them (v1.2.0, `pkg/liqo-controller-manager/networking/forge`):
/// the tenant namespaces, each side's Configuration with the peer's CIDRs, a GatewayServer on milan and a
/// GatewayClient on rome without `secretRef` (Liqo generates their keys, Secret `gw-<gateway>`), and the
/// PublicKeys, owned by the gateway, with the other side's generated key.
async fn connect_like_liqoctl(ground: &Ground) -> Result<()> {
    let dynamic = |group: &str, kind: &str, plural: &str| api_resource(group, kind, plural);
    let configuration = dynamic("networking.liqo.io", "Configuration", "configurations");
    let server = dynamic("networking.liqo.io", "GatewayServer", "gatewayservers");
    let client = dynamic("networking.liqo.io", "GatewayClient", "gatewayclients");
    let public_key = dynamic("networking.liqo.io", "PublicKey", "publickeies");
    let create = |client: Client, ar: ApiResource, namespace: String, object: serde_json::Value| async move {
        let api: Api<DynamicObject> = Api::namespaced_with(client, &namespace, &ar);
        let object: DynamicObject = serde_json::from_value(object)?;
        api.create(&PostParams::default(), &object)
            .await
            .with_context(|| format!("creating {} in {namespace}", ar.kind))
    };
    for (cluster, peer) in [(MILAN, ROME), (ROME, MILAN)] {
        let c = ground.client(cluster).await?;
        let ns = format!("liqo-tenant-{peer}");
        let namespace: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": ns, "labels": {
            "liqo.io/remote-cluster-id": peer, "liqo.io/tenant-namespace": "true",
            "pod-security.kubernetes.io/enforce": "privileged", "pod-security.kubernetes.io/audit": "privileged",
            "pod-security.kubernetes.io/warn": "privileged"}}}))?;
        Api::<Namespace>::all(c.clone()).create(&PostParams::default(), &namespace).await?;
        let remote = ground.cluster(peer);
        create(
            c,
            configuration.clone(),
            ns.clone(),
            serde_json::json!({
                "apiVersion": "networking.liqo.io/v1beta1", "kind": "Configuration",
                "metadata": {"name": peer, "labels": {"liqo.io/remote-cluster-id": peer}},
                "spec": {"remote": {"cidr": {"pod": [remote.pod_cidr], "external": [remote.external_cidr]}}}
            }),
        )
        .await?;
    }
    let template = |kind: &str, name: &str| serde_json::json!({"apiVersion": "networking.liqo.io/v1beta1", "kind": kind, "name": name, "namespace": "liqo"});
    let (milan, rome) = (ground.client(MILAN).await?, ground.client(ROME).await?);
    let gw_server = create(
        milan.clone(),
        server.clone(),
        format!("liqo-tenant-{ROME}"),
        serde_json::json!({
            "apiVersion": "networking.liqo.io/v1beta1", "kind": "GatewayServer",
            "metadata": {"name": ROME, "labels": {"liqo.io/remote-cluster-id": ROME}},
            "spec": {"mtu": 1340, "endpoint": {"port": 51840, "serviceType": "NodePort", "nodePort": 30743},
                     "serverTemplateRef": template("WgGatewayServerTemplate", "wireguard-server")}
        }),
    )
    .await?;
    let servers: Api<DynamicObject> = Api::namespaced_with(milan.clone(), &format!("liqo-tenant-{ROME}"), &server);
    let endpoint =
        liqo_acceptance::observe::eventually(Duration::from_secs(60), "the GatewayServer's endpoint", || async {
            Ok(servers.get(ROME).await?.data.pointer("/status/endpoint").filter(|e| e["addresses"].is_array()).cloned())
        })
        .await?;
    let gw_client = create(rome.clone(), client.clone(), format!("liqo-tenant-{MILAN}"), serde_json::json!({
        "apiVersion": "networking.liqo.io/v1beta1", "kind": "GatewayClient",
        "metadata": {"name": MILAN, "labels": {"liqo.io/remote-cluster-id": MILAN}},
        "spec": {"mtu": 1340, "endpoint": {"addresses": endpoint["addresses"], "port": endpoint["port"], "protocol": "UDP"},
                 "clientTemplateRef": template("WgGatewayClientTemplate", "wireguard-client")}
    }))
    .await?;
    // Each side's key, from the Secret Liqo generated for its gateway, goes to the other side's PublicKey, owned
    // by the other side's gateway.
    let to_rome = Exchange { from: &milan, gateways: &server, name: ROME, to: &rome, owner: (&client, &gw_client) };
    let to_milan = Exchange { from: &rome, gateways: &client, name: MILAN, to: &milan, owner: (&server, &gw_server) };
    for x in [to_rome, to_milan] {
        let from_ns = format!("liqo-tenant-{}", x.name);
        let gateways: Api<DynamicObject> = Api::namespaced_with(x.from.clone(), &from_ns, x.gateways);
        let secret_name =
            liqo_acceptance::observe::eventually(Duration::from_secs(60), "the generated key Secret", || async {
                let gateway = gateways.get(x.name).await?;
                Ok(gateway.data.pointer("/status/secretRef/name").and_then(|n| n.as_str()).map(str::to_string))
            })
            .await?;
        let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(x.from.clone(), &from_ns);
        let secret = secrets.get(&secret_name).await?;
        let key =
            secret.data.as_ref().and_then(|d| d.get("publicKey")).context("the generated Secret has a publicKey")?;
        let (owner_kind, owner) = (&x.owner.0.kind, x.owner.1);
        let owner_ns = owner.metadata.namespace.clone().unwrap_or_default();
        let peer = owner.metadata.name.clone().unwrap_or_default();
        create(x.to.clone(), public_key.clone(), owner_ns, serde_json::json!({
            "apiVersion": "networking.liqo.io/v1beta1", "kind": "PublicKey",
            "metadata": {"name": peer, "labels": {"liqo.io/remote-cluster-id": peer, "networking.liqo.io/gateway-resource": "true"},
                         "ownerReferences": [{"apiVersion": "networking.liqo.io/v1beta1", "kind": owner_kind,
                                              "name": peer, "uid": owner.metadata.uid, "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"publicKey": base64::engine::general_purpose::STANDARD.encode(&key.0)}
        }))
        .await?;
    }
    Ok(())
}

/// One key hand-over of [`connect_like_liqoctl`]: the key of gateway `name` on `from` becomes a PublicKey on
/// `to`, owned by `owner` (its kind and the object).
struct Exchange<'a> {
    from: &'a Client,
    gateways: &'a ApiResource,
    name: &'a str,
    to: &'a Client,
    owner: (&'a ApiResource, &'a DynamicObject),
}

/// SIMULATED networking (Liqo's gateways do not run on the real ground yet): gateways made as `liqoctl network
/// connect` makes them, with keys Liqo generated, are found by the guide's query and adopted with no change —
/// no `gw-keys` Secret appears and no gateway is pointed at one. The simulator plays Liqo's gateway controllers
/// (endpoint, generated key Secrets, Connections). To run on real Liqo once its gateways run on the ground.
#[tokio::test]
async fn simulated_liqoctl_gateways_are_adopted_with_their_generated_keys() -> Result<()> {
    let ground = Ground::start_simulated(&[MILAN, ROME]).await?;
    connect_like_liqoctl(&ground).await?;
    for (cluster, peer) in [(MILAN, ROME), (ROME, MILAN)] {
        let connections: Api<DynamicObject> = Api::namespaced_with(
            ground.client(cluster).await?,
            &format!("liqo-tenant-{peer}"),
            &api_resource("networking.liqo.io", "Connection", "connections"),
        );
        liqo_acceptance::observe::eventually(Duration::from_secs(60), "the simulated Connection", || async {
            let all = connections.list(&ListParams::default()).await?;
            Ok(all
                .items
                .iter()
                .any(|c| c.data.pointer("/status/value") == Some(&serde_json::json!("Connected")))
                .then_some(()))
        })
        .await?;
    }
    let before = peering_versions(&ground).await?;

    let work = Workdir::new(Cli::Terraform, &tf::provider_config(&ground)).await?;
    work.write("adopt.tfquery.hcl", &guide_file("adopt.tfquery.hcl")?)?;
    let run = work.run(&["query", "-no-color", "-generate-config-out=generated.tf"]).await?;
    ensure!(run.success(), "{run}");
    let generated = std::fs::read_to_string(work.path().join("generated.tf"))?;
    ensure!(generated.matches("resource \"liqo_gateway\"").count() == 2, "both gateways are generated:\n{generated}");
    ensure!(!generated.contains("gw-keys"), "Liqo's keys are kept:\n{generated}");

    let applied = work.apply().await?;
    ensure!(applied.stdout.contains("4 imported, 0 added, 0 changed, 0 destroyed"), "{}", applied.stdout);
    let after = peering_versions(&ground).await?;
    ensure!(before == after, "adopting changed objects:\nbefore {before:#?}\nafter {after:#?}");
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "the plan after adoption is not empty:\n{}", plan.run().stdout);
    Ok(())
}
