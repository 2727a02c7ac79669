//! `liqo_offload` on the full chain liqo_generate → liqo_gateway → liqo_tenant → liqo_peer → liqo_offload
//! between `milan` (provider) and `rome` (consumer), once per client (Terraform 1.16.4,
//! Terraform 1.0.11, OpenTofu 1.11.7). Liqo's offloading controllers select virtual nodes, create the remote
//! namespaces on milan and report the phase.
//!
//! The two clients run one after the other: there is one milan/rome pair, and Liqo allows one peering per pair.
use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Client};
use liqo_acceptance::chain::full_chain;
use liqo_acceptance::observe::{attributes, create_namespace, eventually, flat, instance, plan_text, summary};
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME};
use liqo_schema::liqo::{NamespaceOffloading, ResourceSlice, labels};
use serde_json::json;

const DEMO: &str = "liqo_offload.demo";
/// Offloaded by `liqo_offload.demo`, which creates it (`create_namespace = true`); named in offload/offloads.tf.
const DEMO_NS: &str = "liqo-demo";
/// Created by the test (the user's namespace), offloaded by `liqo_offload.own`; named in offload/offloads.tf.
const OWN_NS: &str = "user-owned";
/// A namespace on milan whose name the SelectedName `liqo_offload.clash` asks for (in offload/offloads.tf): Liqo
/// cannot create it there.
const TAKEN: &str = "taken-on-milan";

/// The peering of the contract's example; the offloadings are in offload/offloads.tf.
fn chain(ground: &Ground) -> String {
    full_chain(ground, r#"{ cpu = "4", memory = "8Gi", pods = "110" }"#)
}

async fn namespace_exists(client: &Client, name: &str) -> Result<bool> {
    Ok(Api::<Namespace>::all(client.clone())
        .get_opt(name)
        .await?
        .is_some_and(|n| n.metadata.deletion_timestamp.is_none()))
}

/// Waits until the namespace is present (`true`) or fully gone (`false`).
async fn await_namespace(client: &Client, name: &str, present: bool, what: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    eventually(Duration::from_secs(60), what, || async {
        let found = api.get_opt(name).await?;
        Ok((found.is_some() == present && found.is_none_or(|n| n.metadata.deletion_timestamp.is_none())).then_some(()))
    })
    .await
}

async fn delete_namespace(client: &Client, name: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    if api.get_opt(name).await?.is_some() {
        api.delete(name, &DeleteParams::default()).await?;
    }
    await_namespace(client, name, false, &format!("namespace {name} deleted")).await
}

async fn lifecycle(ground: &Ground, cli: Cli) -> Result<()> {
    let (rome, milan) = (ground.client(ROME).await?, ground.client(MILAN).await?);
    let demo_api: Api<NamespaceOffloading> = Api::namespaced(rome.clone(), DEMO_NS);
    create_namespace(&rome, OWN_NS).await?;
    let work = Workdir::new(cli, &chain(ground)).await?;
    work.write("offloads.tf", include_str!("offload/offloads.tf"))?;

    // Create: the demo namespace is made (with the marker), both namespaces are offloaded to milan.
    work.apply().await?;
    let attrs = attributes(&work, DEMO)?;
    assert_eq!(attrs["id"], json!(DEMO_NS), "{cli}: id");
    assert_eq!(attrs["offloading_phase"], json!("Ready"), "{cli}: offloading_phase");
    assert_eq!(attrs["remote_namespace_name"], json!(format!("{DEMO_NS}-{ROME}")), "{cli}: DefaultName remote name");
    assert_eq!(attrs["namespace_mapping_strategy"], json!("DefaultName"));
    assert_eq!(attrs["pod_offloading_strategy"], json!("LocalAndRemote"));
    let demo_ns = Api::<Namespace>::all(rome.clone()).get(DEMO_NS).await?;
    let marker = demo_ns.metadata.labels.unwrap_or_default().get(labels::MANAGED_BY).cloned();
    assert_eq!(marker.as_deref(), Some("terraform-provider-liqo"), "{cli}: create_namespace marks the namespace");
    ensure!(
        namespace_exists(&milan, &format!("{DEMO_NS}-{ROME}")).await?,
        "{cli}: remote namespace of {DEMO_NS} on milan"
    );
    ensure!(
        namespace_exists(&milan, &format!("{OWN_NS}-{ROME}")).await?,
        "{cli}: remote namespace of {OWN_NS} on milan"
    );
    let nso = demo_api.get(labels::NAMESPACE_OFFLOADING_NAME).await?;
    let terms = nso.spec.cluster_selector.as_ref().map(|s| s.node_selector_terms.len());
    assert_eq!(terms, Some(0), "{cli}: no selector = an empty term list, never null");
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "{cli}: the plan after apply must be empty:\n{}", plan_text(&plan));

    // Strategy and selector: updated in place.
    let selected = json!({"pod_offloading_strategy": "Remote", "selected_clusters": [MILAN]});
    work.write_vars(&selected)?;
    let plan = work.plan().await?;
    ensure!(
        summary(&plan).contains("0 to add, 1 to change, 0 to destroy"),
        "{cli}: in-place update:\n{}",
        plan_text(&plan)
    );
    work.apply().await?;
    let nso = demo_api.get(labels::NAMESPACE_OFFLOADING_NAME).await?;
    assert_eq!(nso.spec.pod_offloading_strategy.as_deref(), Some("Remote"), "{cli}: podOffloadingStrategy");
    let expr = &nso.spec.cluster_selector.context("clusterSelector")?.node_selector_terms[0]
        .match_expressions
        .clone()
        .unwrap_or_default()[0];
    assert_eq!(
        (expr.key.as_str(), expr.operator.as_str(), expr.values.clone()),
        (labels::REMOTE_CLUSTER_ID, "In", Some(vec![MILAN.to_string()]))
    );
    assert_eq!(attributes(&work, DEMO)?["offloading_phase"], json!("Ready"));
    ensure!(work.plan().await?.is_empty(), "{cli}: the plan after the update must be empty");

    // A selector matching no virtual node: accepted with a warning; the remote namespace goes away.
    work.write_vars(&json!({"selected_clusters": ["nowhere"]}))?;
    let run = work.apply().await?;
    let output = flat(&format!("{}\n{}", run.stdout, run.stderr));
    ensure!(
        output.contains("No virtual node selected for namespace liqo-demo"),
        "{cli}: NoClusterSelected warns:\n{output}"
    );
    assert_eq!(attributes(&work, DEMO)?["offloading_phase"], json!("NoClusterSelected"), "{cli}: phase");
    await_namespace(&milan, &format!("{DEMO_NS}-{ROME}"), false, "deselected remote namespace removed").await?;
    work.write_vars(&selected)?;
    work.apply().await?;
    ensure!(namespace_exists(&milan, &format!("{DEMO_NS}-{ROME}")).await?, "{cli}: remote namespace back");

    // Drift: a strategy changed out of band shows up, and apply restores it.
    let patch = json!({"spec": {"podOffloadingStrategy": "Local"}});
    demo_api.patch(labels::NAMESPACE_OFFLOADING_NAME, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    let plan = work.plan().await?;
    ensure!(
        plan_text(&plan).contains("pod_offloading_strategy") && summary(&plan).contains("1 to change"),
        "{cli}: drift:\n{}",
        plan_text(&plan)
    );
    work.apply().await?;
    let nso = demo_api.get(labels::NAMESPACE_OFFLOADING_NAME).await?;
    assert_eq!(nso.spec.pod_offloading_strategy.as_deref(), Some("Remote"), "{cli}: apply restores the strategy");

    // Import: both offloadings come back with an empty plan (create_namespace read from the marker).
    for (address, ns) in [(DEMO, DEMO_NS), ("liqo_offload.own", OWN_NS)] {
        let rm = work.run(&["state", "rm", address]).await?;
        ensure!(rm.success(), "{rm}");
        work.import(address, ns).await?;
    }
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "{cli}: the plan after import must be empty:\n{}", plan_text(&plan));

    // The mapping strategy is immutable in Liqo: changing it replaces the offloading.
    let mut same_name = selected.clone();
    same_name["namespace_mapping_strategy"] = json!("EnforceSameName");
    work.write_vars(&same_name)?;
    let plan = work.plan().await?;
    ensure!(
        summary(&plan).contains("1 to add, 0 to change, 1 to destroy"),
        "{cli}: replacement:\n{}",
        plan_text(&plan)
    );
    work.apply().await?;
    assert_eq!(attributes(&work, DEMO)?["remote_namespace_name"], json!(DEMO_NS), "{cli}: EnforceSameName");
    ensure!(namespace_exists(&milan, DEMO_NS).await?, "{cli}: remote namespace {DEMO_NS} on milan");
    await_namespace(&milan, &format!("{DEMO_NS}-{ROME}"), false, "old remote namespace removed").await?;
    ensure!(work.plan().await?.is_empty(), "{cli}: the plan after the replacement must be empty");

    // A SelectedName whose remote name is taken on milan fails with Liqo's per-cluster conditions.
    create_namespace(&milan, TAKEN).await?;
    let mut clash = same_name.clone();
    clash["clash"] = json!(true);
    work.write_vars(&clash)?;
    let failed = work.apply_fails().await?;
    let stderr = flat(&failed.stderr);
    for needle in ["offloadingPhase is AllFailed", "milan:", TAKEN] {
        ensure!(stderr.contains(needle), "{cli}: the failure mentions {needle:?}:\n{}", failed.stderr);
    }
    assert_eq!(
        instance(&work, "liqo_offload.clash")?.context("the failed offloading is recorded")?["status"],
        json!("tainted")
    );
    work.write_vars(&same_name)?;
    work.apply().await?;
    ensure!(
        !namespace_exists(&rome, "liqo-clash").await?,
        "{cli}: the failed offloading and its namespace are cleaned up"
    );
    ensure!(namespace_exists(&milan, TAKEN).await?, "{cli}: someone else's namespace on milan is untouched");
    delete_namespace(&milan, TAKEN).await?;

    // Unoffload one namespace: its offloading, remote namespace and (created) namespace go; the peering stays.
    work.destroy_with(&[&format!("-target={DEMO}")]).await?;
    ensure!(demo_api.get_opt(labels::NAMESPACE_OFFLOADING_NAME).await?.is_none(), "{cli}: NamespaceOffloading deleted");
    ensure!(!namespace_exists(&milan, DEMO_NS).await?, "{cli}: remote namespace deleted");
    await_namespace(&rome, DEMO_NS, false, "namespace created by liqo_offload deleted").await?;
    let node = Api::<Node>::all(rome.clone()).get(MILAN).await.context("the virtual node stays")?;
    ensure!(liqo_acceptance::observe::node_ready(&node), "{cli}: the virtual node stays Ready");
    ensure!(
        Api::<ResourceSlice>::namespaced(rome.clone(), "liqo-tenant-milan").get_opt(MILAN).await?.is_some(),
        "{cli}: the slice stays"
    );
    ensure!(instance(&work, "liqo_peer.rome_to_milan")?.is_some(), "{cli}: the peer stays in state");
    let plan = work.plan().await?;
    ensure!(
        summary(&plan).contains("1 to add, 0 to change, 0 to destroy"),
        "{cli}: only the offloading is missing:\n{}",
        plan_text(&plan)
    );

    // Full destroy: every offloading and remote namespace goes; the user's namespace stays.
    work.destroy().await?;
    let left: BTreeMap<String, String> = Api::<NamespaceOffloading>::all(rome.clone())
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .map(|o| (o.metadata.namespace.unwrap_or_default(), o.metadata.name.unwrap_or_default()))
        .collect();
    ensure!(left.is_empty(), "{cli}: NamespaceOffloadings left: {left:?}");
    ensure!(
        !namespace_exists(&milan, &format!("{OWN_NS}-{ROME}")).await?,
        "{cli}: remote namespace of {OWN_NS} deleted"
    );
    ensure!(namespace_exists(&rome, OWN_NS).await?, "{cli}: the user's namespace {OWN_NS} is never deleted");
    delete_namespace(&rome, OWN_NS).await?;
    Ok(())
}

#[tokio::test]
async fn offloading_lifecycle_on_the_full_chain() -> Result<()> {
    tf::each_client_on_own_ground(Cli::all(), |ground, cli| Box::pin(lifecycle(ground, cli))).await
}
