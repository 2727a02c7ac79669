//! The shipped examples, as a user runs them: each applies on the test ground, re-plans empty and destroys leaving
//! no Liqo object behind, with Terraform 1.16.4, Terraform 1.0.11 and OpenTofu 1.11.7. The hub runs on its own
//! ground of one provider and three consumer control planes, and `destroy -target` of one consumer's module
//! instance must leave the other two peerings up throughout.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::ListParams;
use liqo_acceptance::chain::example;
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME, inventory};
use liqo_schema::liqo::networking::Connection;

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

/// [`peering_state`] of a consumer whose peering is up.
const UP: &str = "virtual node Ready=True, Connection Connected";

/// One consumer's side of its peering with milan: its virtual node's Ready condition and its gateway's
/// Connection status, as strings (a read error is a state too).
async fn peering_state(client: &kube::Client) -> String {
    let read = async {
        let node = match Api::<Node>::all(client.clone()).get_opt(MILAN).await? {
            None => "absent".to_owned(),
            Some(node) => node
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .into_iter()
                .find(|c| c.type_ == "Ready")
                .map_or("no Ready condition".to_owned(), |c| format!("Ready={}", c.status)),
        };
        let connections: Api<Connection> = Api::namespaced(client.clone(), &format!("liqo-tenant-{MILAN}"));
        let connection = connections.list(&ListParams::default()).await?.items.into_iter().next();
        let connection = connection
            .and_then(|c| c.status)
            .map_or("no Connection status".to_owned(), |s| s.value.unwrap_or_else(|| "empty".to_owned()));
        anyhow::Ok(format!("virtual node {node}, Connection {connection}"))
    };
    read.await.unwrap_or_else(|e| format!("unreadable: {e:#}"))
}

/// Runs `during` while polling every 250 ms the peerings of `consumers` with milan; returns its result and every
/// state seen that was not Ready and Connected (time since the start, consumer, state), in order.
async fn watch_peerings<T>(
    ground: &Ground,
    consumers: &[&str],
    during: impl std::future::Future<Output = Result<T>>,
) -> (Result<T>, Vec<String>) {
    // One client per consumer for the whole watch: a new one per poll is a new TLS handshake on its API server.
    let mut clients = Vec::new();
    for consumer in consumers {
        match ground.client(consumer).await {
            Ok(client) => clients.push((consumer, client)),
            Err(err) => return (Err(err.context(format!("a client of {consumer} to watch its peering"))), Vec::new()),
        }
    }
    let done = AtomicBool::new(false);
    let began = Instant::now();
    let run = async {
        let result = during.await;
        done.store(true, Ordering::SeqCst);
        result
    };
    let watch = async {
        let mut not_up = Vec::new();
        while !done.load(Ordering::SeqCst) {
            for (consumer, client) in &clients {
                let state = peering_state(client).await;
                if state != UP {
                    not_up.push(format!("{:6.1}s {consumer}: {state}", began.elapsed().as_secs_f64()));
                }
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        not_up
    };
    tokio::join!(run, watch)
}

fn output<'a>(outputs: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    &outputs[name]["value"]
}

/// examples/peering and examples/bidirectional share milan and rome, so they run one after the other (each
/// client on a ground of its own).
async fn pair_examples(ground: &Ground, cli: Cli) -> Result<()> {
    let what = format!("examples/peering with {}", cli.name());
    let work = example(cli, "peering", ground, &[MILAN, ROME]).await?;
    let out = apply_converges(&work, &what).await?;
    let node = output(&out, "virtual_node_name").as_str().context("virtual_node_name output")?.to_string();
    ensure!(node_ready(ground, ROME, &node).await?, "{what}: virtual node {node} is not Ready on rome");
    ensure!(output(&out, "status")["connection"] == "Connected", "{what}: status output {}", output(&out, "status"));
    ensure!(
        output(&out, "status")["offloaded_namespaces"]["liqo-demo"]["phase"] == "Ready",
        "{what}: offloading not Ready: {}",
        output(&out, "status")
    );
    destroy_leaves_nothing(&work, ground, &[MILAN, ROME], &what).await?;

    let what = format!("examples/bidirectional with {}", cli.name());
    let work = example(cli, "bidirectional", ground, &[MILAN, ROME]).await?;
    let out = apply_converges(&work, &what).await?;
    let nodes = output(&out, "virtual_nodes");
    let (on_rome, on_milan) =
        (nodes["on_rome"].as_str().unwrap_or_default(), nodes["on_milan"].as_str().unwrap_or_default());
    ensure!(node_ready(ground, ROME, on_rome).await?, "{what}: no Ready virtual node {on_rome} on rome");
    ensure!(node_ready(ground, MILAN, on_milan).await?, "{what}: no Ready virtual node {on_milan} on milan");
    destroy_leaves_nothing(&work, ground, &[MILAN, ROME], &what).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn pair_examples_apply_replan_empty_and_destroy_cleanly() -> Result<()> {
    tf::each_client_on_own_ground(Cli::all(), |ground, cli| Box::pin(pair_examples(ground, cli))).await
}

/// examples/hub: milan serves rome, turin and naples, each on its own control plane.
#[tokio::test(flavor = "multi_thread")]
async fn hub_example_serves_three_consumers_and_targets_one() -> Result<()> {
    const CONSUMERS: [&str; 3] = ["rome", "turin", "naples"];
    let all = [MILAN, "rome", "turin", "naples"];
    let ground = Ground::start(&all).await?;
    for cli in Cli::all() {
        let what = format!("examples/hub with {}", cli.name());
        let work = example(cli, "hub", &ground, &all).await?;
        let out = apply_converges(&work, &what).await?;
        for c in CONSUMERS {
            let node = output(&out, "virtual_nodes")[c].as_str().context("virtual_nodes output")?.to_string();
            ensure!(node_ready(&ground, c, &node).await?, "{what}: no Ready virtual node {node} on {c}");
        }

        // The other consumers' peerings are watched through the whole targeted destroy, not read once after it:
        // unpeering one consumer of a hub must not disturb the others even for a moment.
        let others = ["turin", "naples"];
        let (destroyed, not_up) = watch_peerings(&ground, &others, work.destroy_with(&["-target=module.rome"])).await;
        destroyed.with_context(|| format!("{what}: destroy -target"))?;
        inventory::nothing_left(&ground, &["rome"]).await.with_context(|| format!("{what}: destroy -target"))?;
        ensure!(
            not_up.is_empty(),
            "{what}: while module.rome was destroyed, the other consumers' peerings were not all up:\n{}",
            not_up.join("\n")
        );
        for c in others {
            let state = peering_state(&ground.client(c).await?).await;
            ensure!(state == UP, "{what}: {c}'s peering after targeting rome: {state}");
        }

        destroy_leaves_nothing(&work, &ground, &all, &what).await?;
    }
    drop(ground);
    Ok(())
}
