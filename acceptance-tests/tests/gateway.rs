//! `liqo_gateway` against the test ground, once per client (Terraform 1.16.4, Terraform 1.0.11, OpenTofu 1.11.7):
//! liqo_generate on both sides, the WireGuard server on `milan` and the client on `rome`. Liqo's own networking
//! controllers render the gateways and publish the server endpoint (milan's node address on the ground's wire);
//! Liqo's gateways report each Connection `Connected` once the real WireGuard handshake with the keys they loaded
//! from their key Secrets at start succeeds.
//!
//! The two clients run one after the other: there is one milan/rome pair, and Liqo allows one gateway per peer.
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use base64::Engine;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Client};
use liqo_acceptance::observe::{attributes, eventually, plan_text};
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME};
use liqo_schema::liqo::{
    CONNECTION_CONNECTED, Configuration, Connection, GatewayClient, GatewayServer, PublicKey, WgGatewayClient,
    WgGatewayServer, labels,
};
use serde_json::{Value, json};

const SERVER: &str = "liqo_gateway.server";
const CLIENT: &str = "liqo_gateway.client";
/// Tenant namespaces liqo_generate makes by default: on milan for rome, on rome for milan.
const MILAN_TENANT_NS: &str = "liqo-tenant-rome";
const ROME_TENANT_NS: &str = "liqo-tenant-milan";
/// The server's node port, as in gateway/gateways.tf.
const NODE_PORT: i64 = 30742;
/// A copy of Liqo's server template on milan ([`copy_server_template`]), and the label it adds to what it renders.
const TEMPLATE_COPY: &str = "wireguard-server-copy";
const COPY_LABEL: &str = "liqo-acceptance/rendered-from";
/// A valid WireGuard key that is nobody's: the client configured with it can never complete a handshake.
const WRONG_KEY: &str = "nBxGmUf2Fa4rYqgFpFyPq6KTTsqfPxDeUuQmuAxHXwM=";

/// The Connection the gateway in `namespace` made for `peer` (labelled like Liqo's), with its status value.
async fn connection(client: &Client, namespace: &str, peer: &str) -> Result<Option<(String, String)>> {
    let api: Api<Connection> = Api::namespaced(client.clone(), namespace);
    let list = api.list(&ListParams::default().labels(&format!("{}={peer}", labels::REMOTE_CLUSTER_ID))).await?;
    Ok(list.items.first().map(|c| {
        (
            c.metadata.name.clone().unwrap_or_default(),
            c.status.as_ref().and_then(|s| s.value.clone()).unwrap_or_default(),
        )
    }))
}

async fn both_connected(milan: &Client, rome: &Client, cli: Cli) -> Result<()> {
    for (client, ns, peer, side) in
        [(milan, MILAN_TENANT_NS, ROME, "milan (server)"), (rome, ROME_TENANT_NS, MILAN, "rome (client)")]
    {
        eventually(Duration::from_secs(30), &format!("{cli}: the Connection on {side} becoming Connected"), || async {
            Ok(connection(client, ns, peer).await?.filter(|(_, v)| v == CONNECTION_CONNECTED))
        })
        .await?;
    }
    Ok(())
}

/// The fields the provider's field manager owns on an object, as the API server records them.
fn owned_fields<K: kube::Resource>(obj: &K) -> String {
    obj.meta()
        .managed_fields
        .iter()
        .flatten()
        .filter(|m| m.manager.as_deref() == Some("terraform-provider-liqo"))
        .map(|m| serde_json::to_string(&m.fields_v1).unwrap_or_default())
        .collect()
}

/// The WireGuard public key (standard base64) of a cluster's key Secret.
async fn own_public_key(client: &Client, namespace: &str) -> Result<String> {
    let secret = Api::<Secret>::namespaced(client.clone(), namespace).get("gw-keys").await?;
    let raw =
        secret.data.and_then(|d| d.get(labels::WIREGUARD_PUBLIC_KEY).cloned()).context("gw-keys has no publicKey")?;
    Ok(base64::engine::general_purpose::STANDARD.encode(raw.0))
}

/// What the provider wrote, checked against Liqo's requirements (labels, references, owned fields).
async fn check_objects(ground: &Ground, cli: Cli, mtu: i64) -> Result<()> {
    let (milan, rome) = (&ground.client(MILAN).await?, &ground.client(ROME).await?);
    // Configuration on milan: rome's CIDRs in spec.remote, spec.local left to Liqo.
    let conf = Api::<Configuration>::namespaced(milan.clone(), MILAN_TENANT_NS).get(ROME).await?;
    assert_eq!(
        conf.metadata.labels.as_ref().and_then(|l| l.get(labels::REMOTE_CLUSTER_ID)).map(String::as_str),
        Some(ROME),
        "{cli}: Configuration label"
    );
    let remote = conf.spec.remote.as_ref().and_then(|r| r.cidr.clone()).context("spec.remote.cidr")?;
    let ground = Ground::shared();
    assert_eq!(remote.pod, Some(vec![ground.cluster(ROME).pod_cidr.clone()]), "{cli}: rome's pod CIDR");
    assert_eq!(remote.external, Some(vec![ground.cluster(ROME).external_cidr.clone()]), "{cli}: rome's external CIDR");
    assert!(conf.spec.local.is_some(), "{cli}: Liqo fills spec.local");
    let owned = owned_fields(&conf);
    assert!(
        owned.contains("f:remote") && !owned.contains("f:local") && !owned.contains("f:status"),
        "{cli}: the provider owns spec.remote only: {owned}"
    );

    // PublicKey on milan: rome's key, with both labels.
    let key = Api::<PublicKey>::namespaced(milan.clone(), MILAN_TENANT_NS).get(ROME).await?;
    let key_labels = key.metadata.labels.clone().unwrap_or_default();
    assert_eq!(key_labels.get(labels::REMOTE_CLUSTER_ID).map(String::as_str), Some(ROME), "{cli}: PublicKey label");
    assert_eq!(
        key_labels.get(labels::GATEWAY_RESOURCE).map(String::as_str),
        Some(labels::TRUE),
        "{cli}: PublicKey gateway-resource label"
    );
    let held = base64::engine::general_purpose::STANDARD.encode(&key.spec.public_key.context("spec.publicKey")?.0);
    assert_eq!(held, own_public_key(rome, ROME_TENANT_NS).await?, "{cli}: milan's PublicKey holds rome's key");

    // GatewayServer on milan and GatewayClient on rome: key Secret, Liqo's templates, MTU, endpoint.
    let server = Api::<GatewayServer>::namespaced(milan.clone(), MILAN_TENANT_NS).get(ROME).await?;
    assert_eq!(
        server.metadata.labels.as_ref().and_then(|l| l.get(labels::REMOTE_CLUSTER_ID)).map(String::as_str),
        Some(ROME)
    );
    assert_eq!(
        serde_json::to_value(&server.spec)?,
        json!({
            "serverTemplateRef": {"apiVersion": "networking.liqo.io/v1beta1", "kind": "WgGatewayServerTemplate",
                                  "name": "wireguard-server", "namespace": "liqo"},
            "mtu": mtu,
            "endpoint": {"port": 51840, "serviceType": "NodePort", "nodePort": NODE_PORT},
            "secretRef": {"name": "gw-keys"}
        }),
        "{cli}: GatewayServer spec"
    );
    assert!(!owned_fields(&server).contains("f:status"), "{cli}: the provider never owns a status");
    let client = Api::<GatewayClient>::namespaced(rome.clone(), ROME_TENANT_NS).get(MILAN).await?;
    assert_eq!(
        client.metadata.labels.as_ref().and_then(|l| l.get(labels::REMOTE_CLUSTER_ID)).map(String::as_str),
        Some(MILAN)
    );
    assert_eq!(
        serde_json::to_value(&client.spec)?,
        json!({
            "clientTemplateRef": {"apiVersion": "networking.liqo.io/v1beta1", "kind": "WgGatewayClientTemplate",
                                  "name": "wireguard-client", "namespace": "liqo"},
            "mtu": mtu,
            "endpoint": {"addresses": [ground.node_address(MILAN).to_string()], "port": NODE_PORT, "protocol": "UDP"},
            "secretRef": {"name": "gw-keys"}
        }),
        "{cli}: GatewayClient spec (dials the server's endpoint)"
    );
    Ok(())
}

/// Copies Liqo's `wireguard-server` template on `client` as [`TEMPLATE_COPY`], whose rendered WgGatewayServer also
/// carries [`COPY_LABEL`]: a user's own template, as `server.template_name` names it.
async fn copy_server_template(client: &Client) -> Result<()> {
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
    let gvk = GroupVersionKind::gvk("networking.liqo.io", "v1beta1", "WgGatewayServerTemplate");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "liqo", &ApiResource::from_gvk(&gvk));
    let liqos = api.get("wireguard-server").await.context("Liqo's server template")?;
    let mut spec = liqos.data["spec"].clone();
    let labels = &mut spec["template"]["metadata"]["labels"];
    if !labels.is_object() {
        *labels = json!({});
    }
    labels[COPY_LABEL] = json!(TEMPLATE_COPY);
    let copy = json!({
        "apiVersion": "networking.liqo.io/v1beta1", "kind": "WgGatewayServerTemplate",
        "metadata": {"name": TEMPLATE_COPY, "namespace": "liqo"}, "spec": spec,
    });
    api.patch(TEMPLATE_COPY, &PatchParams::apply("liqo-acceptance").force(), &Patch::Apply(&copy)).await?;
    Ok(())
}

/// `Kind namespace/name` of every object of kind `K` labelled for `peer`, in all namespaces.
async fn labelled_for<K>(client: &Client, peer: &str) -> Result<Vec<String>>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let by_peer = ListParams::default().labels(&format!("{}={peer}", labels::REMOTE_CLUSTER_ID));
    let items = Api::<K>::all(client.clone()).list(&by_peer).await?.items;
    Ok(items
        .iter()
        .map(|o| {
            format!(
                "{} {}/{}",
                K::kind(&()),
                o.meta().namespace.clone().unwrap_or_default(),
                o.meta().name.clone().unwrap_or_default()
            )
        })
        .collect())
}

/// No Liqo networking object for the peer is left in any namespace of the cluster.
async fn nothing_left(client: &Client, peer: &str, cli: Cli, cluster: &str) -> Result<()> {
    let mut left = labelled_for::<Configuration>(client, peer).await?;
    left.extend(labelled_for::<PublicKey>(client, peer).await?);
    left.extend(labelled_for::<GatewayServer>(client, peer).await?);
    left.extend(labelled_for::<GatewayClient>(client, peer).await?);
    left.extend(labelled_for::<WgGatewayServer>(client, peer).await?);
    left.extend(labelled_for::<WgGatewayClient>(client, peer).await?);
    left.extend(labelled_for::<Connection>(client, peer).await?);
    ensure!(left.is_empty(), "{cli}: Liqo objects for {peer} left on {cluster}: {left:?}");
    Ok(())
}

async fn lifecycle(ground: &Ground, cli: Cli) -> Result<()> {
    let milan = ground.client(MILAN).await?;
    let rome = ground.client(ROME).await?;
    let work = Workdir::new(cli, &tf::provider_config(ground)).await?;
    work.write("gateways.tf", include_str!("gateway/gateways.tf"))?;
    work.write_vars(&json!({"mtu": 1340}))?;

    // Create: the server publishes its endpoint, the client dials it, both tunnels come up.
    work.apply().await?;
    both_connected(&milan, &rome, cli).await?;
    let server = attributes(&work, SERVER)?;
    let node = ground.node_address(MILAN).to_string();
    assert_eq!(server["endpoint_addresses"], json!([node]), "{cli}: server endpoint_addresses (milan's node)");
    assert_eq!(server["endpoint_port"], json!(NODE_PORT), "{cli}: server endpoint_port (the node port)");
    assert_eq!(server["id"], json!(format!("{MILAN_TENANT_NS}/{ROME}")));
    let client = attributes(&work, CLIENT)?;
    assert_eq!(client["connection_status"], json!("Connected"), "{cli}: the client waited for Connected");
    assert_eq!(client["endpoint_addresses"], Value::Null, "{cli}: the client has no endpoint outputs");
    check_objects(ground, cli, 1340).await?;
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after apply must be empty");
    work.apply_with(&["-refresh-only"]).await?;
    assert_eq!(
        attributes(&work, SERVER)?["connection_status"],
        json!("Connected"),
        "{cli}: the server reports its Connection on read"
    );

    // MTU: updated in place on both sides.
    let bigger = json!({"mtu": 1400});
    work.write_vars(&bigger)?;
    let plan = work.plan().await?;
    let text = plan_text(&plan);
    assert!(
        text.contains("0 to add, 2 to change, 0 to destroy") && !text.contains("forces replacement"),
        "{cli}: mtu updates in place:\n{text}"
    );
    work.apply().await?;
    check_objects(ground, cli, 1400).await?;
    both_connected(&milan, &rome, cli).await?;
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after the mtu update must be empty");

    // A template of one's own on the server: one that does not exist fails the update before anything is
    // written; an existing one is changed in place, Liqo renders the gateway from it and the tunnel comes back;
    // then Liqo's own again.
    work.write_vars(&json!({"mtu": 1400, "server_template": "no-such-template"}))?;
    let run = work.apply_fails().await?;
    for needle in ["Gateway template no-such-template not found", "server.template_name", "wggatewayservertemplates"] {
        assert!(run.stderr.contains(needle), "{cli}: the failed update mentions `{needle}`:\n{}", run.stderr);
    }
    let server = Api::<GatewayServer>::namespaced(milan.clone(), MILAN_TENANT_NS).get(ROME).await?;
    let reference = server.spec.server_template_ref.and_then(|r| r.name);
    assert_eq!(reference.as_deref(), Some("wireguard-server"), "{cli}: nothing written for a missing template");
    copy_server_template(&milan).await?;
    work.write_vars(&json!({"mtu": 1400, "server_template": TEMPLATE_COPY}))?;
    let plan = work.plan().await?;
    let text = plan_text(&plan);
    assert!(
        text.contains("0 to add, 1 to change, 0 to destroy") && text.contains(TEMPLATE_COPY),
        "{cli}: template_name updates the server in place:\n{text}"
    );
    work.apply().await?;
    let server = Api::<GatewayServer>::namespaced(milan.clone(), MILAN_TENANT_NS).get(ROME).await?;
    let reference = server.spec.server_template_ref.and_then(|r| r.name);
    assert_eq!(reference.as_deref(), Some(TEMPLATE_COPY), "{cli}: the GatewayServer names the copy");
    let rendered = Api::<WgGatewayServer>::namespaced(milan.clone(), MILAN_TENANT_NS);
    eventually(Duration::from_secs(60), "Liqo to render the gateway from the copied template", || async {
        let labels = rendered.get_opt(ROME).await?.and_then(|w| w.metadata.labels).unwrap_or_default();
        Ok(labels.get(COPY_LABEL).is_some_and(|v| v == TEMPLATE_COPY).then_some(()))
    })
    .await?;
    both_connected(&milan, &rome, cli).await?;
    assert_eq!(attributes(&work, SERVER)?["server"]["template_name"], json!(TEMPLATE_COPY));
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after the template change must be empty");
    work.write_vars(&bigger)?;
    work.apply().await?;
    check_objects(ground, cli, 1400).await?;
    both_connected(&milan, &rome, cli).await?;

    // Out-of-band deletion of the PublicKey: detected, and the apply recreates it.
    Api::<PublicKey>::namespaced(milan.clone(), MILAN_TENANT_NS).delete(ROME, &DeleteParams::default()).await?;
    let plan = work.plan().await?;
    let text = plan_text(&plan);
    assert!(
        text.contains(&format!("{SERVER} will be created")) && text.contains("0 to destroy"),
        "{cli}: a missing PublicKey is repaired by re-creating the resource:\n{text}"
    );
    work.apply().await?;
    Api::<PublicKey>::namespaced(milan.clone(), MILAN_TENANT_NS).get(ROME).await.context("the PublicKey is back")?;
    check_objects(ground, cli, 1400).await?;
    both_connected(&milan, &rome, cli).await?;
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after the repair must be empty");

    // The server's Service deleted out of band: Liqo 1.2.0 reads it before it would create it, so the gateway stays
    // half-made (shown first: the fault holds), the plan says so, and the apply repairs it (the rendered Deployment
    // deleted, Liqo renders both again) with the tunnel back when it ends.
    let services = Api::<Service>::namespaced(milan.clone(), MILAN_TENANT_NS);
    services.delete(&format!("gw-{ROME}"), &DeleteParams::default()).await?;
    tokio::time::sleep(Duration::from_secs(15)).await;
    ensure!(
        services.get_opt(&format!("gw-{ROME}")).await?.is_none(),
        "{cli}: Liqo rendered the deleted Service again by itself: the half-made gateway no longer happens"
    );
    let plan = work.run(&["plan", "-input=false", "-no-color"]).await?;
    let said = liqo_acceptance::observe::flat(&format!("{}{}", plan.stdout, plan.stderr));
    for needle in [
        format!("liqo_gateway {MILAN_TENANT_NS}/{ROME} is half-made and will be repaired"),
        "exists without its Service".to_string(),
        format!("{SERVER} will be created"),
    ] {
        ensure!(said.contains(&needle), "{cli}: the plan says {needle:?}:\n{said}");
    }
    work.apply().await?;
    services.get(&format!("gw-{ROME}")).await.context("Liqo rendered the Service again")?;
    both_connected(&milan, &rome, cli).await?;
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after the half-made repair must be empty");

    // rome's key pair lost under its running gateway (the Secret deleted out of band): the plan says what the
    // apply will do; the apply writes a new pair, restarts rome's gateway (Liqo's reads its key only at start) and
    // hands milan the new public key, so the tunnel is back when the apply ends.
    let gateway_pods = || async {
        let pods = Api::<Pod>::namespaced(rome.clone(), ROME_TENANT_NS)
            .list(&ListParams::default().labels("networking.liqo.io/component=gateway"))
            .await?;
        anyhow::Ok(pods.items.into_iter().filter_map(|p| p.metadata.name).collect::<Vec<_>>())
    };
    let before = gateway_pods().await?;
    ensure!(!before.is_empty(), "{cli}: rome's gateway runs in a pod");
    Api::<Secret>::namespaced(rome.clone(), ROME_TENANT_NS).delete("gw-keys", &DeleteParams::default()).await?;
    let plan = work.run(&["plan", "-input=false", "-no-color"]).await?;
    let said = liqo_acceptance::observe::flat(&format!("{}{}", plan.stdout, plan.stderr));
    for needle in ["The WireGuard key pair in liqo-tenant-milan is gone or was changed", "restarts the pods"] {
        ensure!(said.contains(needle), "{cli}: the plan says {needle:?}:\n{said}");
    }
    work.apply().await?;
    both_connected(&milan, &rome, cli).await?;
    let after = gateway_pods().await?;
    ensure!(
        before.iter().all(|p| !after.contains(p)),
        "{cli}: rome's gateway pods were restarted: {before:?} → {after:?}"
    );
    check_objects(ground, cli, 1400).await?;
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after the new key pair must be empty");

    // Import of both sides: the state is rebuilt from the cluster, and the plan is empty.
    for (address, id) in [(SERVER, format!("{MILAN_TENANT_NS}/{ROME}")), (CLIENT, format!("{ROME_TENANT_NS}/{MILAN}"))]
    {
        let rm = work.run(&["state", "rm", address]).await?;
        ensure!(rm.success(), "{rm}");
        work.import(address, &id).await?;
        let plan = work.plan().await?;
        assert!(plan.is_empty(), "{cli}: the plan after importing {address} must be empty:\n{}", plan_text(&plan));
    }

    // A wrong key on the client, changed in place: Liqo's gateway reports Error and the update fails naming the
    // key mismatch, even though the Connection was Connected before the change.
    work.write_vars(&json!({"mtu": 1400, "client_remote_public_key": WRONG_KEY}))?;
    let run = work.apply_fails().await?;
    let endpoint = format!("{}:{NODE_PORT}", ground.node_address(MILAN));
    for needle in [
        "Connection liqo-tenant-milan/gw-milan",
        "Key mismatch",
        "wireguard_public_key",
        endpoint.as_str(),
        "status.value has been Error",
    ] {
        assert!(run.stderr.contains(needle), "{cli}: the failed update mentions `{needle}`:\n{}", run.stderr);
    }

    // -target destroy of the client: the server side stays as it is.
    work.destroy_with(&[&format!("-target={CLIENT}")]).await?;
    assert!(
        Api::<GatewayClient>::namespaced(rome.clone(), ROME_TENANT_NS).get_opt(MILAN).await?.is_none(),
        "{cli}: the client is gone"
    );
    nothing_left(&rome, MILAN, cli, ROME).await?;
    Api::<GatewayServer>::namespaced(milan.clone(), MILAN_TENANT_NS)
        .get(ROME)
        .await
        .context("the server survives a targeted destroy of the client")?;
    Api::<PublicKey>::namespaced(milan.clone(), MILAN_TENANT_NS).get(ROME).await?;
    Api::<Configuration>::namespaced(milan.clone(), MILAN_TENANT_NS).get(ROME).await?;
    assert!(attributes(&work, SERVER).is_ok(), "{cli}: the server stays in the state");

    // The wrong key on a new client: the create fails the same way.
    let run = work.apply_fails().await?;
    assert!(
        run.stderr.contains("Key mismatch") && run.stderr.contains("Error for more than 60s"),
        "{cli}: the failed create explains the Error:\n{}",
        run.stderr
    );

    // The right key again: the (tainted) client is replaced and the tunnel comes up.
    work.write_vars(&bigger)?;
    work.apply().await?;
    both_connected(&milan, &rome, cli).await?;
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after fixing the key must be empty");

    // Destroy: Liqo's order, nothing left on either cluster.
    work.destroy().await?;
    nothing_left(&milan, ROME, cli, MILAN).await?;
    nothing_left(&rome, MILAN, cli, ROME).await?;
    Ok(())
}

#[tokio::test]
async fn gateway_lifecycle_server_on_milan_client_on_rome() -> Result<()> {
    tf::each_client_on_own_ground(Cli::all(), |ground, cli| Box::pin(lifecycle(ground, cli))).await
}
