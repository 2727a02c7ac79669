//! A peer cluster that goes away for good, on real Liqo: `examples/peering` applied, then one cluster's API server
//! taken away (killed: connections refused; frozen with SIGSTOP: connections accepted and never answered), then
//! what a user does next (docs/guides/day-2.md):
//! - without the opt-in, `destroy` fails within two minutes, naming the unreachable cluster and the opt-in; with
//!   `-refresh=false` (the surviving side only) the delete held by Liqo's finalizer fails just as fast, naming
//!   the object, the finalizer and the peer Liqo reports unreachable;
//! - with the opt-in (`gone_for_good`, which sets `permanently_unreachable` and `permanently_unreachable_peers`),
//!   `destroy` succeeds: the surviving cluster is unpeered as `liqoctl force unpeer` does and keeps nothing of the
//!   peering; the gone cluster's resources leave the state, each with the command that cleans up after them.
//!
//! Each case has a ground of its own (its API server is taken away); the test command runs each as a process of
//! its own. Both directions, both faults, each case once, with the client `tf::assignment` gives it (two cases
//! each); the provider-gone killed case also brings the cluster back, runs the cleanup the warnings print and peers
//! again; the consumer-gone frozen case then peers milan with a fresh cluster of the same name in rome's place.
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use liqo_acceptance::chain::example;
use liqo_acceptance::ground::Down;
use liqo_acceptance::observe::eventually;
use liqo_acceptance::tf::{self, Cli, Run, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME, inventory};
use liqo_schema::liqo::ForeignCluster;

/// The bound: a destroy without the opt-in fails within two minutes of finding the peer unreachable.
const FAIL_FAST: Duration = Duration::from_secs(120);

fn gone_var(cluster: &str) -> String {
    // On the ground a cluster's Liqo cluster ID is its name.
    format!("-var=gone_for_good={{cluster=\"{cluster}\", cluster_id=\"{cluster}\"}}")
}

/// Fails unless `run` failed within [`FAIL_FAST`] and its errors contain every needle.
fn failed_fast(run: &Run, what: &str, needles: &[&str]) -> Result<()> {
    ensure!(!run.success(), "{what}: expected a failure, it succeeded:\n{run}");
    ensure!(
        run.duration < FAIL_FAST,
        "{what}: failed only after {:.0}s (bound {FAIL_FAST:?}):\n{run}",
        run.duration.as_secs_f64()
    );
    for needle in needles {
        ensure!(run.stderr.contains(needle), "{what}: the error does not say {needle:?}:\n{run}");
    }
    Ok(())
}

/// Nothing of the peering with `gone` is left on `survivor`: no Liqo object of the inventory, no ForeignCluster,
/// no tenant namespace, no offloaded namespace.
async fn nothing_left_on(ground: &Ground, survivor: &str, gone: &str) -> Result<()> {
    inventory::nothing_left(ground, &[survivor]).await?;
    let client = ground.client(survivor).await?;
    let foreign: Api<ForeignCluster> = Api::all(client.clone());
    ensure!(foreign.get_opt(gone).await?.is_none(), "ForeignCluster {gone} is left on {survivor}");
    let namespaces: Api<Namespace> = Api::all(client);
    ensure!(namespaces.get_opt("liqo-demo").await?.is_none(), "namespace liqo-demo is left on {survivor}");
    Ok(())
}

async fn peered(cli: Cli, ground: &Ground) -> Result<Workdir> {
    let work = example(cli, "peering", ground, &[MILAN, ROME]).await?;
    work.apply().await.context("apply of examples/peering")?;
    Ok(work)
}

/// Everything up to and including the destroy with the opt-in; returns the destroy's output.
async fn gone_case(cli: Cli, ground: &Ground, gone: &str, down: Down) -> Result<(Workdir, Run)> {
    let survivor = if gone == MILAN { ROME } else { MILAN };
    let work = peered(cli, ground).await?;
    ground.take_api_server_down(gone, down)?;
    let server = ground.cluster(gone).api_server.clone();

    let refused = work.run(&["destroy", "-auto-approve", "-input=false", "-no-color"]).await?;
    failed_fast(&refused, "destroy without the opt-in", &["Cluster unreachable", &server, "permanently_unreachable"])?;

    if gone == MILAN {
        // Before anyone destroys: rome's liqo_peering reports milan unreachable, as Liqo sees it, with a warning.
        let watch = Workdir::new(
            cli,
            &format!(
                "{}\ndata \"liqo_peering\" \"milan\" {{\n  provider          = liqo.rome\n  remote_cluster_id = \"milan\"\n}}\n\
                 output \"api_server_status\" {{ value = data.liqo_peering.milan.api_server_status }}\n\
                 output \"healthy\" {{ value = data.liqo_peering.milan.healthy }}\n",
                tf::provider_config(ground)
            ),
        )
        .await?;
        let read = eventually(Duration::from_secs(60), "rome's liqo_peering to report milan unreachable", || async {
            let run = watch.run(&["apply", "-auto-approve", "-input=false", "-no-color"]).await?;
            let outputs = watch.output_json().await?;
            Ok((outputs["api_server_status"]["value"] == "Error").then_some((run, outputs)))
        })
        .await?;
        ensure!(read.1["healthy"]["value"] == false, "liqo_peering reports an unreachable peer healthy: {}", read.1);
        ensure!(
            read.0.stderr.contains("Liqo reports the peer cluster unreachable")
                || read.0.stdout.contains("Liqo reports the peer cluster unreachable"),
            "no warning about the unreachable peer:\n{}",
            read.0
        );

        // What a user tries next: skip the refresh. rome's offloading waits for milan: named, fast.
        let held = work.run(&["destroy", "-auto-approve", "-input=false", "-no-color", "-refresh=false"]).await?;
        failed_fast(
            &held,
            "destroy -refresh=false without the opt-in",
            &[
                "NamespaceOffloading liqo-demo/offloading cannot be deleted while peer cluster milan is unreachable",
                "namespaceoffloading-controller.liqo.io/finalizer",
                "APIServerStatus",
                "permanently_unreachable_peers",
            ],
        )?;
    }

    // As JSON: the warnings' text unwrapped, so that the cleanup command they print can be run as printed.
    let destroyed = work.destroy_with(&[&gone_var(gone), "-json"]).await.context("destroy with the opt-in")?;
    let all = format!("{}{}", destroyed.stdout, destroyed.stderr);
    for needle in [
        "left the state without its cluster",
        "kubectl annotate foreignclusters",
        "kubectl delete namespace",
        "kubectl delete certificatesigningrequests -l liqo.io/remote-cluster-id=",
    ] {
        ensure!(all.contains(needle), "the destroy's warnings do not say {needle:?}:\n{destroyed}");
    }
    nothing_left_on(ground, survivor, gone).await.context("after the destroy with the opt-in")?;
    let replan = work.plan_with(&["-destroy", &gone_var(gone)]).await?;
    ensure!(replan.is_empty(), "a destroy plan after the destroy is not empty:\n{}", replan.run().stdout);
    Ok((work, destroyed))
}

/// The cleanup command the warnings of a `destroy -json` print for a cluster gone for good (each resource of that
/// cluster prints it; they must agree).
fn printed_cleanup(destroyed: &Run) -> Result<String> {
    const BEFORE: &str = "remove them there with:\n  ";
    let commands: std::collections::BTreeSet<String> = destroyed
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|message| {
            let detail = message["diagnostic"]["detail"].as_str()?;
            let (_, command) = detail.split_once(BEFORE)?;
            Some(command.lines().next().unwrap_or_default().to_string())
        })
        .collect();
    match commands.len() {
        1 => Ok(commands.into_iter().next().unwrap_or_default()),
        _ => anyhow::bail!("the destroy's warnings print {} cleanup commands, not one: {commands:?}", commands.len()),
    }
}

/// The one client `tf::assignment` gives the running case: each case runs once, in the whole matrix too.
fn the_client() -> Cli {
    let [cli] = tf::assignment::assigned()[..] else { panic!("tf::assignment gives a peer_gone case one client") };
    cli
}

/// The same configuration, without the opt-in, peers the two clusters again, re-plans empty and destroys clean.
async fn peers_again(work: &Workdir, ground: &Ground, what: &str) -> Result<()> {
    work.apply().await.with_context(|| format!("{what}: apply"))?;
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "{what}: the plan after the apply is not empty:\n{}", plan.run().stdout);
    work.destroy().await.with_context(|| format!("{what}: destroy"))?;
    inventory::nothing_left(ground, &[MILAN, ROME]).await.with_context(|| format!("{what}: destroy"))
}

#[tokio::test]
async fn provider_gone_killed_then_back() -> Result<()> {
    let ground = Ground::start(&[MILAN, ROME]).await?;
    let (work, destroyed) = gone_case(the_client(), &ground, MILAN, Down::Killed).await?;

    // milan comes back with what it had; the cleanup the warnings print, run there as printed, leaves nothing; then
    // the same configuration peers again.
    ground.bring_api_server_back(MILAN, Down::Killed).await?;
    let cleanup = printed_cleanup(&destroyed)?;
    eprintln!("[peer_gone] running on milan what the destroy's warnings print: {cleanup}");
    // `kubectl delete namespace` waits until the namespace is gone, which takes Kubernetes' own controllers on milan
    // a while after its API server came back: in one run, milan's kube-controller-manager began deleting the
    // namespace's content 114 s after the delete (the audit log shows no request of its namespace controller before
    // then; its watches had backed off while the API server was down, and some were refused while the restarted
    // API server's RBAC warmed up), and the gateway pod's 30 s grace period comes on top. What is checked is that
    // the printed commands leave nothing, not how soon Kubernetes acts on them.
    let ran = ground.shell_on(MILAN, &cleanup, Duration::from_secs(420)).await?;
    eprintln!("[peer_gone] the printed cleanup finished in {:.0}s", ran.wall.as_secs_f64());
    let milan = ground.client(MILAN).await?;
    let namespace = Api::<Namespace>::all(milan.clone()).get_opt("liqo-tenant-rome").await?;
    ensure!(namespace.is_none(), "milan's tenant namespace for rome is still there after the printed cleanup");
    let foreign = Api::<ForeignCluster>::all(milan).get_opt(ROME).await?;
    ensure!(foreign.is_none(), "milan's ForeignCluster rome is still there after the printed cleanup");
    inventory::nothing_left(&ground, &[MILAN]).await.context("milan after the cleanup the warnings print")?;

    peers_again(&work, &ground, "peering again once milan is back").await
}

#[tokio::test]
async fn provider_gone_frozen() -> Result<()> {
    let ground = Ground::start(&[MILAN, ROME]).await?;
    gone_case(the_client(), &ground, MILAN, Down::Frozen).await.map(|_| ())
}

#[tokio::test]
async fn consumer_gone_killed() -> Result<()> {
    let ground = Ground::start(&[MILAN, ROME]).await?;
    gone_case(the_client(), &ground, ROME, Down::Killed).await.map(|_| ())
}

#[tokio::test]
async fn consumer_gone_frozen_then_made_anew() -> Result<()> {
    let mut ground = Ground::start(&[MILAN, ROME]).await?;
    let (work, _) = gone_case(the_client(), &ground, ROME, Down::Frozen).await?;

    // A fresh cluster of the same name (and so the same Liqo cluster ID) takes rome's place: the same
    // configuration peers milan with it, re-plans empty and destroys clean.
    ground.recreate_cluster(ROME).await?;
    inventory::nothing_left(&ground, &[ROME]).await.context("the fresh rome")?;
    peers_again(&work, &ground, "peering milan with a fresh cluster named rome").await
}
