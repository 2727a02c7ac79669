//! The lifecycle a user runs, on real Liqo of version `$LIQO_VERSION` (default v1.2.0) with real gateways:
//! `examples/peering` applied, re-planned empty, its peer destroyed alone (`destroy -target`), applied again and
//! destroyed, leaving no Liqo object — with every client of `Cli::available()`. `acceptance-tests/matrix` runs it
//! for each Liqo version and prints the table of `$LIQO_MATRIX_LEDGER`.
//!
//! Run: `LIQO_VERSION=v1.1.2 cargo test -p liqo-acceptance --test version_lifecycle`.
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use liqo_acceptance::chain;
use liqo_acceptance::observe::eventually;
use liqo_acceptance::tf::Cli;
use liqo_acceptance::{Ground, MILAN, ROME, inventory};

const PEER: &str = "module.rome_to_milan.liqo_peer.this";

async fn virtual_node_ready(ground: &Ground, name: &str) -> Result<bool> {
    liqo_acceptance::observe::node_ready_on(&ground.client(ROME).await?, name).await
}

async fn lifecycle(ground: &Ground, cli: Cli) -> Result<()> {
    let what = format!("examples/peering on Liqo {} with {}", ground.real_liqo().unwrap_or("?"), cli.name());
    let work = chain::example(cli, "peering", ground, &[MILAN, ROME]).await?;
    work.apply().await.with_context(|| format!("{what}: apply"))?;
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "{what}: the plan after apply is not empty:\n{}", plan.run().stdout);
    let outputs = work.output_json().await?;
    let node = outputs["virtual_node_name"]["value"].as_str().context("virtual_node_name output")?.to_owned();
    ensure!(virtual_node_ready(ground, &node).await?, "{what}: virtual node {node} is not Ready");
    ensure!(outputs["status"]["value"]["connection"] == "Connected", "{what}: status {}", outputs["status"]);

    work.destroy_with(&[&format!("-target={PEER}")]).await.with_context(|| format!("{what}: destroy -target"))?;
    eventually(Duration::from_secs(60), "the virtual node to go after destroy -target", || async {
        let nodes: Api<Node> = Api::all(ground.client(ROME).await?);
        Ok(nodes.get_opt(&node).await?.is_none().then_some(()))
    })
    .await
    .with_context(|| format!("{what}: destroy -target"))?;
    work.apply().await.with_context(|| format!("{what}: re-apply"))?;
    ensure!(virtual_node_ready(ground, &node).await?, "{what}: virtual node {node} is not Ready after re-apply");
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "{what}: the plan after re-apply is not empty:\n{}", plan.run().stdout);

    work.destroy().await.with_context(|| format!("{what}: destroy"))?;
    inventory::nothing_left(ground, &[MILAN, ROME]).await.with_context(|| format!("{what}: destroy"))
}

/// One row of the matrix per client, in `$LIQO_MATRIX_LEDGER` (Liqo version, gateways, client, result, seconds).
fn record(ground: &Ground, cli: Cli, result: &Result<()>, took: Duration) {
    let Some(ledger) = std::env::var_os("LIQO_MATRIX_LEDGER") else { return };
    let gateways = match ground.gateways() {
        Some(liqo_acceptance::ground::liqo::Gateways::Real) => "real tunnel",
        _ => "simulated gateways",
    };
    let line = format!(
        "{}\t{gateways}\t{}\t{}\t{}\n",
        ground.real_liqo().unwrap_or("?"),
        cli.version().unwrap_or_else(|_| cli.name().to_owned()),
        if result.is_ok() { "ok" } else { "FAILED" },
        took.as_secs()
    );
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&ledger)
        .and_then(|mut file| std::io::Write::write_all(&mut file, line.as_bytes()));
    if let Err(e) = written {
        eprintln!("[matrix] could not record the result in {}: {e}", std::path::PathBuf::from(ledger).display());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_peering_example_lifecycle_runs_on_this_liqo_version() -> Result<()> {
    let ground = Ground::shared();
    let mut failures = Vec::new();
    for cli in Cli::available() {
        let began = Instant::now();
        let result = lifecycle(ground, cli).await;
        record(ground, cli, &result, began.elapsed());
        if let Err(err) = result {
            failures.push(format!("{err:#}"));
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n\n"));
    Ok(())
}
