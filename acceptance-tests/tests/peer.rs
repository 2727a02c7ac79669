//! `liqo_peer` on the full chain liqo_generate → liqo_gateway → liqo_consumer_key → liqo_tenant → liqo_peer
//! between `milan` (provider) and `rome` (consumer), once per client (Terraform 1.16.4 and OpenTofu 1.11.7). Liqo's
//! crd-replicator copies the ResourceSlice to milan with the kubeconfig of the identity Secret (so rome's key and
//! the certificate milan signed for it are used for real), Liqo accepts it there and its virtual kubelet
//! registers the virtual node on rome.
//!
//! The two clients run one after the other: there is one milan/rome pair, and Liqo allows one peering per pair.
use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::{Namespace, Node, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, Client};
use liqo_acceptance::chain::{PEER, full_chain};
use liqo_acceptance::observe::{
    apply_planned, attributes, eventually, flat, instance, plan_text, planned_change, summary,
};
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME};
use liqo_schema::liqo::{GatewayClient, GatewayServer, ResourceSlice, Tenant, VirtualNode, labels};
use serde_json::{Value, json};

/// Tenant namespaces liqo_generate makes by default: on rome for milan, on milan for rome.
const ROME_TENANT_NS: &str = "liqo-tenant-milan";
const MILAN_TENANT_NS: &str = "liqo-tenant-rome";
/// The ResourceSlice and virtual node are named after the provider by default.
const SLICE: &str = MILAN;
const IDENTITY_SECRET: &str = "kubeconfig-controlplane-milan";

/// The whole peering, as in the contract's example, with `resources` given as HCL, the peer's outputs
/// (peer/peer.tf) and what the steps change in the chain (peer/chain_override.tf, filled in by the variables of
/// peer.tf; [`as_is`] leaves the chain as it is). [`brought_kubeconfig`] adds and removes an override of its own.
async fn chain(ground: &Ground, cli: Cli, resources: &str) -> Result<Workdir> {
    let work = Workdir::new(cli, &full_chain(ground, resources)).await?;
    work.write("peer.tf", include_str!("peer/peer.tf"))?;
    work.write("chain_override.tf", include_str!("peer/chain_override.tf"))?;
    Ok(work)
}

/// The resources the peer asks for after the resize step.
const RESIZED: &str = r#"{ cpu = "8", memory = "16Gi", pods = "110" }"#;

/// No variable of peer/peer.tf set: the chain as it is.
fn as_is() -> Value {
    json!({})
}

fn quantities(pairs: &[(&str, &str)]) -> Value {
    Value::Object(pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect())
}

/// The virtual node on rome is Ready with the given capacity (Liqo's virtual kubelet reports the accepted
/// resources as capacity).
async fn assert_node_ready(rome: &Client, cli: Cli, capacity: &[(&str, &str)]) -> Result<()> {
    let nodes: Api<Node> = Api::all(rome.clone());
    let want: BTreeMap<String, String> = capacity.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    eventually(Duration::from_secs(30), &format!("{cli}: Node {SLICE} Ready with capacity {want:?}"), || async {
        let Some(node) = nodes.get_opt(SLICE).await? else { return Ok(None) };
        let ready = liqo_acceptance::observe::node_ready(&node);
        let status = node.status.unwrap_or_default();
        let have: BTreeMap<String, String> = status
            .capacity
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| want.contains_key(k))
            .map(|(k, q)| (k, q.0))
            .collect();
        Ok((ready && have == want).then_some(()))
    })
    .await
}

/// Every object liqo_peer owns or Liqo derives from it on rome is gone (or goes within a short grace).
async fn assert_unpeered(rome: &Client, milan: &Client, cli: Cli) -> Result<()> {
    let slices: Api<ResourceSlice> = Api::namespaced(rome.clone(), ROME_TENANT_NS);
    let vns: Api<VirtualNode> = Api::namespaced(rome.clone(), ROME_TENANT_NS);
    let nodes: Api<Node> = Api::all(rome.clone());
    let secrets: Api<Secret> = Api::namespaced(rome.clone(), ROME_TENANT_NS);
    ensure!(slices.get_opt(SLICE).await?.is_none(), "{cli}: ResourceSlice {ROME_TENANT_NS}/{SLICE} is left");
    ensure!(vns.get_opt(SLICE).await?.is_none(), "{cli}: VirtualNode {ROME_TENANT_NS}/{SLICE} is left");
    ensure!(nodes.get_opt(SLICE).await?.is_none(), "{cli}: Node {SLICE} is left");
    ensure!(
        secrets.get_opt(IDENTITY_SECRET).await?.is_none(),
        "{cli}: Secret {ROME_TENANT_NS}/{IDENTITY_SECRET} is left"
    );
    let copies: Api<ResourceSlice> = Api::all(milan.clone());
    let selector = format!("{}={ROME}", labels::ORIGIN_ID);
    let left = copies.list(&ListParams::default().labels(&selector)).await?;
    ensure!(left.items.is_empty(), "{cli}: milan still holds replicated ResourceSlices: {:?}", names(&left.items));
    Ok(())
}

fn names<K: kube::Resource>(items: &[K]) -> Vec<String> {
    items.iter().map(|o| o.meta().name.clone().unwrap_or_default()).collect()
}

async fn lifecycle(ground: &Ground, cli: Cli) -> Result<()> {
    let (rome, milan) = (ground.client(ROME).await?, ground.client(MILAN).await?);
    let slices: Api<ResourceSlice> = Api::namespaced(rome.clone(), ROME_TENANT_NS);
    let secrets: Api<Secret> = Api::namespaced(rome.clone(), ROME_TENANT_NS);
    let first = r#"{ cpu = "4", memory = "8Gi", pods = "110" }"#;
    let work = chain(ground, cli, first).await?;

    // Create: nothing in the plan is secret, so it hides nothing; apply waits for the virtual node.
    let plan = work.plan().await?;
    ensure!(plan_text(&plan).contains("client_certificate"), "{cli}: the plan lists the certificate");
    ensure!(!plan_text(&plan).contains("sensitive"), "{cli}: no value is secret:\n{}", plan_text(&plan));
    work.apply().await?;
    assert_node_ready(&rome, cli, &[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")]).await?;
    let attrs = attributes(&work, PEER)?;
    assert_eq!(attrs["id"], json!(format!("{ROME_TENANT_NS}/{SLICE}")), "{cli}: id");
    assert_eq!(attrs["virtual_node_name"], json!(SLICE), "{cli}: virtual_node_name");
    // Liqo grants what was asked and its chart's default for what was not (ephemeral-storage 20Gi).
    assert_eq!(
        attrs["accepted_resources"],
        quantities(&[("cpu", "4"), ("ephemeral-storage", "20Gi"), ("memory", "8Gi"), ("pods", "110")]),
        "{cli}: accepted_resources"
    );
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "{cli}: the plan after apply must be empty:\n{}", plan_text(&plan));

    // The objects as Liqo expects them.
    let secret = secrets.get(IDENTITY_SECRET).await?;
    let secret_labels = secret.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        secret_labels.get(labels::IDENTITY_TYPE).map(String::as_str),
        Some("ControlPlane"),
        "{cli}: identity-type label"
    );
    assert_eq!(
        secret_labels.get(labels::REMOTE_CLUSTER_ID).map(String::as_str),
        Some(MILAN),
        "{cli}: remote-cluster-id label"
    );
    let annotations = secret.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations.get(labels::REMOTE_TENANT_NAMESPACE).map(String::as_str),
        Some(MILAN_TENANT_NS),
        "{cli}: annotation"
    );
    // The identity kubeconfig joins milan's certificate to rome's key, both read on rome's side.
    let kubeconfig = String::from_utf8(
        secret.data.unwrap_or_default().remove(labels::KUBECONFIG_KEY).context("data.kubeconfig")?.0,
    )?;
    let doc: Value = serde_yaml::from_str(&kubeconfig)?;
    let tenant = attributes(&work, "liqo_tenant.rome")?;
    let decoded = |v: &Value| -> Result<Value> {
        use base64::Engine;
        let text = base64::engine::general_purpose::STANDARD.decode(v.as_str().context("base64 field")?)?;
        Ok(json!(String::from_utf8(text)?))
    };
    assert_eq!(decoded(&doc["users"][0]["user"]["client-certificate-data"])?, tenant["client_certificate"], "{cli}");
    assert_eq!(
        decoded(&doc["clusters"][0]["cluster"]["certificate-authority-data"])?,
        tenant["cluster_ca_certificate"]
    );
    assert_eq!(doc["clusters"][0]["cluster"]["server"], tenant["api_server_url"], "{cli}: server");
    assert_eq!(doc["contexts"][0]["context"]["namespace"], json!(MILAN_TENANT_NS), "{cli}: context namespace");
    let key_secret = secrets.get("controlplane-key-milan").await?;
    let key = key_secret.data.unwrap_or_default().remove("privateKey").context("data.privateKey")?.0;
    assert_eq!(
        decoded(&doc["users"][0]["user"]["client-key-data"])?,
        json!(String::from_utf8(key)?),
        "{cli}: the key is liqo_consumer_key's"
    );
    let rs = slices.get(SLICE).await?;
    let rs_labels = rs.metadata.labels.clone().unwrap_or_default();
    for (key, value) in [(labels::REMOTE_CLUSTER_ID, MILAN), (labels::REMOTE_ID, MILAN), (labels::REPLICATION, "true")]
    {
        assert_eq!(rs_labels.get(key).map(String::as_str), Some(value), "{cli}: ResourceSlice label {key}");
    }
    assert_eq!(rs.spec.consumer_cluster_id.as_deref(), Some(ROME), "{cli}: Liqo fills spec.consumerClusterID");

    // Resize: in place; Liqo's grant flows back into accepted_resources and the node.
    work.write("main.tf", &full_chain(ground, RESIZED))?;
    let plan = work.plan().await?;
    ensure!(
        summary(&plan).contains("0 to add, 1 to change, 0 to destroy"),
        "{cli}: resizing updates in place:\n{}",
        plan_text(&plan)
    );
    work.apply().await?;
    let resized = quantities(&[("cpu", "8"), ("ephemeral-storage", "20Gi"), ("memory", "16Gi"), ("pods", "110")]);
    assert_eq!(attributes(&work, PEER)?["accepted_resources"], resized, "{cli}: accepted_resources after resize");
    assert_eq!(work.output_json().await?["accepted_resources"]["value"], resized, "{cli}: output");
    let uid = slices.get(SLICE).await?.metadata.uid;
    assert_eq!(uid, rs.metadata.uid, "{cli}: the ResourceSlice is updated, not replaced");
    assert_node_ready(&rome, cli, &[("cpu", "8"), ("memory", "16Gi"), ("pods", "110")]).await?;
    ensure!(work.plan().await?.is_empty(), "{cli}: the plan after resizing must be empty");

    // Import: the state comes back from the cluster (the certificate's public parts from the Secret) and the plan
    // is empty.
    let rm = work.run(&["state", "rm", PEER]).await?;
    ensure!(rm.success(), "{rm}");
    work.import(PEER, &format!("{ROME_TENANT_NS}/{SLICE}")).await?;
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "{cli}: the plan after import must be empty:\n{}", plan_text(&plan));

    // Drift: a requested quantity changed out of band shows up and apply restores it; a key someone else added
    // is theirs (neither shown nor removed).
    let patch = json!({"spec": {"resources": {"cpu": "2", "ephemeral-storage": "1Gi"}}});
    slices.patch(SLICE, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    let change = planned_change(&work, PEER).await?;
    assert_eq!(change["actions"], json!(["update"]), "{cli}: drift is repaired in place");
    assert_eq!(
        change["before"]["resources"],
        quantities(&[("cpu", "2"), ("memory", "16Gi"), ("pods", "110")]),
        "{cli}: drift"
    );
    assert_eq!(
        change["after"]["resources"],
        quantities(&[("cpu", "8"), ("memory", "16Gi"), ("pods", "110")]),
        "{cli}: repair"
    );
    apply_planned(&work).await?;
    let spec = slices.get(SLICE).await?.spec.resources.unwrap_or_default();
    let spec: BTreeMap<String, String> = spec.into_iter().map(|(k, q)| (k, q.0)).collect();
    let expected = [("cpu", "8"), ("ephemeral-storage", "1Gi"), ("memory", "16Gi"), ("pods", "110")];
    assert_eq!(
        spec,
        expected.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        "{cli}: apply restores the request"
    );
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "{cli}: the plan after repairing drift must be empty:\n{}", plan_text(&plan));

    // The slice deleted out of band: the plan creates the peering again.
    slices.delete(SLICE, &DeleteParams::default()).await?;
    eventually(Duration::from_secs(60), &format!("{cli}: ResourceSlice deleted out of band is gone"), || async {
        Ok(slices.get_opt(SLICE).await?.is_none().then_some(()))
    })
    .await?;
    let plan = work.plan().await?;
    ensure!(
        summary(&plan).contains("1 to add, 0 to change, 0 to destroy"),
        "{cli}: a deleted slice is re-created:\n{}",
        plan_text(&plan)
    );
    work.apply().await?;
    assert_node_ready(&rome, cli, &[("cpu", "8"), ("memory", "16Gi"), ("pods", "110")]).await?;

    // Unpeer only: slice, virtual node and identity Secret go; networking and authentication stay.
    work.destroy_with(&[&format!("-target={PEER}")]).await?;
    assert_unpeered(&rome, &milan, cli).await?;
    let clients: Api<GatewayClient> = Api::namespaced(rome.clone(), ROME_TENANT_NS);
    ensure!(clients.get_opt(MILAN).await?.is_some(), "{cli}: GatewayClient {ROME_TENANT_NS}/{MILAN} must stay");
    let servers: Api<GatewayServer> = Api::namespaced(milan.clone(), MILAN_TENANT_NS);
    ensure!(servers.get_opt(ROME).await?.is_some(), "{cli}: GatewayServer {MILAN_TENANT_NS}/{ROME} must stay");
    let tenants: Api<Tenant> = Api::namespaced(milan.clone(), MILAN_TENANT_NS);
    ensure!(tenants.get_opt(ROME).await?.is_some(), "{cli}: Tenant {MILAN_TENANT_NS}/{ROME} must stay");
    ensure!(
        instance(&work, "liqo_tenant.rome")?.is_some() && instance(&work, "liqo_gateway.client")?.is_some(),
        "{cli}: state keeps the rest"
    );
    let plan = work.plan().await?;
    ensure!(
        summary(&plan).contains("1 to add, 0 to change, 0 to destroy"),
        "{cli}: only the peer is missing:\n{}",
        plan_text(&plan)
    );

    // A slice the provider denies fails the apply with Liqo's reason; the failed peer is tainted. Liqo denies the
    // new slices of a Cordoned tenant.
    work.write_vars(&json!({"tenant_condition": "Cordoned"}))?;
    let failed = work.apply_fails().await?;
    let stderr = flat(&failed.stderr);
    for needle in ["Resources is Denied", "ResourceSliceResourcesDenied", "Cordoned or Drained"] {
        ensure!(stderr.contains(needle), "{cli}: the failure mentions {needle:?}:\n{}", failed.stderr);
    }
    let tainted = instance(&work, PEER)?.context("the failed peer is recorded")?;
    assert_eq!(tainted["status"], json!("tainted"), "{cli}: the failed peer is tainted");

    // The following apply (the tenant Active again) replaces it and restores the peering.
    work.write_vars(&as_is())?;
    work.apply().await?;
    assert_node_ready(&rome, cli, &[("cpu", "8"), ("memory", "16Gi"), ("pods", "110")]).await?;
    ensure!(work.plan().await?.is_empty(), "{cli}: the plan after restoring the peering must be empty");

    // With networking configured, Liqo keeps the virtual node NotReady until the Connection is Connected: a peer
    // created while the tunnel is down times out, and its error names the Connection and its state. The tunnel is
    // down because the client gateway is re-created with a stranger's key and without waiting for its Connection.
    work.destroy_with(&["-target=liqo_gateway.client"]).await?;
    assert_unpeered(&rome, &milan, cli).await?;
    work.write_vars(&json!({
        "client_remote_public_key": liqo_acceptance::chain::stranger_public_key(),
        "client_wait_for_connection": false,
        "peer_create_timeout": "20s",
    }))?;
    let failed = work.apply_fails().await?;
    let stderr = flat(&failed.stderr);
    for needle in [
        &format!("Timed out waiting for Node {SLICE}"),
        "NotReady until the network Connection is Connected",
        &format!("Connection {ROME_TENANT_NS}/"),
    ] {
        ensure!(stderr.contains(needle), "{cli}: the timeout mentions {needle:?}:\n{stderr}");
    }
    // Liqo's gateway reports Connecting until its pings have failed long enough, then Error.
    ensure!(
        stderr.contains("is Error") || stderr.contains("is Connecting"),
        "{cli}: the timeout names the Connection's state:\n{stderr}"
    );
    // The next apply gives the client milan's key back (re-creating it: Liqo's wireguard did not always apply an
    // in-place PublicKey change on this ground), waits for the tunnel and replaces the timed-out peer.
    work.write_vars(&as_is())?;
    work.apply_with(&["-replace=liqo_gateway.client"]).await?;
    assert_node_ready(&rome, cli, &[("cpu", "8"), ("memory", "16Gi"), ("pods", "110")]).await?;

    // A brought kubeconfig (write-only) replaces the assembled one in place, and Terraform keeps none of it.
    brought_kubeconfig(&work, &secrets, cli).await?;

    // Full destroy leaves nothing behind on either cluster.
    work.destroy().await?;
    assert_unpeered(&rome, &milan, cli).await?;
    let vns: Api<VirtualNode> = Api::all(rome.clone());
    ensure!(vns.list(&ListParams::default()).await?.items.is_empty(), "{cli}: VirtualNodes left on rome");
    let virtual_nodes = format!("{}={}", labels::NODE_TYPE, labels::NODE_TYPE_VIRTUAL_NODE);
    ensure!(
        Api::<Node>::all(rome.clone()).list(&ListParams::default().labels(&virtual_nodes)).await?.items.is_empty(),
        "{cli}: virtual Nodes left"
    );
    ensure!(
        Api::<Tenant>::all(milan.clone()).list(&ListParams::default()).await?.items.is_empty(),
        "{cli}: Tenants left on milan"
    );
    for (client, ns) in [(&rome, ROME_TENANT_NS), (&milan, MILAN_TENANT_NS)] {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        eventually(Duration::from_secs(120), &format!("{cli}: tenant namespace {ns} gone"), || async {
            Ok(namespaces.get_opt(ns).await?.is_none().then_some(()))
        })
        .await?;
    }
    Ok(())
}

/// Switches the peer to `kubeconfig_wo` (equivalent credentials, assembled by the test from rome's key and milan's
/// certificate): the identity Secret holds exactly the brought kubeconfig, the state and the plan hold nothing of
/// it, the re-plan is empty, and a new `kubeconfig_wo_version` rewrites the Secret in place.
async fn brought_kubeconfig(work: &Workdir, secrets: &Api<Secret>, cli: Cli) -> Result<()> {
    use liqo_acceptance::ground::kubeconfig;
    let tenant = attributes(work, "liqo_tenant.rome")?;
    let field = |k: &str| tenant[k].as_str().with_context(|| format!("liqo_tenant.rome.{k}"));
    let key = secrets.get("controlplane-key-milan").await?.data.unwrap_or_default().remove("privateKey");
    let key = String::from_utf8(key.context("data.privateKey")?.0)?;
    let brought = |user: &str| {
        kubeconfig::render(
            MILAN,
            user,
            field("api_server_url")?,
            field("cluster_ca_certificate")?,
            field("client_certificate")?,
            &key,
        )
    };
    work.write("brought_kubeconfig_override.tf", include_str!("peer/brought_kubeconfig_override.tf"))?;
    for (version, user) in [(1, "brought"), (2, "rotated")] {
        let text = brought(user)?;
        work.write("byo.kubeconfig", &text)?;
        work.write_vars(&json!({"kubeconfig_wo_version": version}))?;
        let plan = work.plan().await?;
        ensure!(
            summary(&plan).contains("0 to add, 1 to change, 0 to destroy"),
            "{cli}: kubeconfig_wo_version {version} updates in place:\n{}",
            plan_text(&plan)
        );
        work.apply().await?;
        let stored = secrets.get(IDENTITY_SECRET).await?.data.unwrap_or_default().remove(labels::KUBECONFIG_KEY);
        assert_eq!(
            String::from_utf8(stored.context("data.kubeconfig")?.0)?,
            text,
            "{cli}: the identity Secret holds the brought kubeconfig (version {version})"
        );
        let attrs = attributes(work, PEER)?;
        assert_eq!(attrs["kubeconfig_wo"], Value::Null, "{cli}: a write-only value is never stored");
        let state = std::fs::read_to_string(work.path().join("terraform.tfstate"))?;
        ensure!(!state.contains(&key.lines().nth(1).unwrap_or_default().to_string()), "{cli}: key in state");
        let plan = work.plan().await?;
        ensure!(plan.is_empty(), "{cli}: the plan after bringing a kubeconfig must be empty:\n{}", plan_text(&plan));
    }
    // Back to the issued-certificate flow: the assembled kubeconfig replaces the brought one in place.
    std::fs::remove_file(work.path().join("brought_kubeconfig_override.tf"))?;
    work.write_vars(&as_is())?;
    work.apply().await?;
    ensure!(work.plan().await?.is_empty(), "{cli}: the plan after switching back must be empty");
    Ok(())
}

#[tokio::test]
async fn peering_lifecycle_on_the_full_chain() -> Result<()> {
    tf::each_client_on_own_ground(Cli::available(), |ground, cli| Box::pin(lifecycle(ground, cli))).await
}
