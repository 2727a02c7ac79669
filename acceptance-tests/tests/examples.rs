//! examples/bidirectional, as a user runs it: it applies on the test ground, re-plans empty and destroys leaving no
//! Liqo object behind, with Terraform 1.16.4, Terraform 1.0.11 and OpenTofu 1.11.7, each client on a ground of its
//! own. examples/peering and examples/hub are applied in tests/secrets.rs, whose tests make each example's checks
//! (virtual nodes Ready, the peering's status, for the hub `destroy -target` of one consumer leaving the others up
//! throughout) in the middle of the traced cycle they scan for leaks: one apply serves both proofs.

use anyhow::{Context, Result, ensure};
use liqo_acceptance::chain::example;
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME, inventory};

/// Applies, checks that a second plan is empty, and returns the outputs.
async fn apply_converges(work: &Workdir, what: &str) -> Result<serde_json::Value> {
    work.apply().await.with_context(|| format!("{what}: apply"))?;
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "{what}: the plan after apply is not empty:\n{}", plan.run().stdout);
    work.output_json().await
}

async fn destroy_leaves_nothing(work: &Workdir, ground: &Ground, clusters: &[&str], what: &str) -> Result<()> {
    work.destroy().await.with_context(|| format!("{what}: destroy"))?;
    inventory::nothing_left(ground, clusters).await.with_context(|| format!("{what}: destroy"))
}

async fn node_ready(ground: &Ground, cluster: &str, node: &str) -> Result<bool> {
    liqo_acceptance::observe::node_ready_on(&ground.client(cluster).await?, node).await
}

fn output<'a>(outputs: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    &outputs[name]["value"]
}

/// examples/bidirectional with one client, on its ground.
async fn bidirectional(ground: &Ground, cli: Cli) -> Result<()> {
    let what = format!("examples/bidirectional with {}", cli.name());
    let work = example(cli, "bidirectional", ground, &[MILAN, ROME]).await?;
    let out = apply_converges(&work, &what).await?;
    let nodes = output(&out, "virtual_nodes");
    let (on_rome, on_milan) =
        (nodes["on_rome"].as_str().unwrap_or_default(), nodes["on_milan"].as_str().unwrap_or_default());
    ensure!(node_ready(ground, ROME, on_rome).await?, "{what}: no Ready virtual node {on_rome} on rome");
    ensure!(node_ready(ground, MILAN, on_milan).await?, "{what}: no Ready virtual node {on_milan} on milan");
    destroy_leaves_nothing(&work, ground, &[MILAN, ROME], &what).await
}

#[tokio::test(flavor = "multi_thread")]
async fn bidirectional_example_applies_replans_empty_and_destroys_cleanly() -> Result<()> {
    tf::each_client_on_own_ground(Cli::all(), |ground, cli| Box::pin(bidirectional(ground, cli))).await
}
