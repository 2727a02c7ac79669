//! Faults during an apply, through a real client: the provider cluster's API server crashing mid-apply, Ctrl-C
//! while a resource waits, and Liqo faults (a failed Connection, status that never comes within `timeouts`) that
//! must end with Liqo's reason or the condition that never came, and a Liqo still starting (its cluster-ID
//! ConfigMap written late), which is waited for. A denied ResourceSlice is covered by peer.rs.
//!
//! Every client of `Cli::available()` (Terraform 1.16.4 and OpenTofu 1.11.7: Ctrl-C and a crashed API server reach
//! each client differently) on a simulated ground of its own, all at once: faults are switched per cluster and an
//! API server restart disturbs everything on its ground, so clients cannot share one. A client's steps share its
//! ground and run in sequence.
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use liqo_acceptance::chain::{PEER, full_chain};
use liqo_acceptance::ground::process;
use liqo_acceptance::inventory;
use liqo_acceptance::observe::{Seen, eventually, flat, instance, plan_text, until};
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME};
use liqo_schema::liqo::{GatewayServer, ResourceSlice};
use rustix::process::{Pid, Signal};

const MILAN_NS: &str = "liqo-tenant-rome";
const ROME_NS: &str = "liqo-tenant-milan";

/// Both clusters' Liqo objects, keyed by `(cluster, kind, name)` with the random suffix of CSR names removed, so
/// two inventories of equivalent peerings compare equal; the value counts objects with that key.
async fn inventory(ground: &Ground) -> Result<BTreeMap<(String, String, String), usize>> {
    let rows = inventory::leftovers(ground, &[MILAN, ROME]).await?;
    let mut counted = BTreeMap::new();
    for row in rows {
        let name = match row.kind.as_str() {
            "CertificateSigningRequest" => {
                row.name.rsplit_once('-').map(|(stem, _)| stem.to_owned()).unwrap_or(row.name)
            }
            _ => row.name,
        };
        *counted.entry((row.cluster, row.kind, name)).or_insert(0) += 1;
    }
    Ok(counted)
}

/// Waits until the inventory equals `expected` (namespaces terminate and finalizers are released asynchronously).
async fn assert_inventory(
    ground: &Ground,
    expected: &BTreeMap<(String, String, String), usize>,
    what: &str,
) -> Result<()> {
    let what = format!("{what}: the inventory as expected");
    until(Duration::from_secs(120), Duration::from_millis(500), &what, || async {
        let now = inventory(ground).await?;
        if &now == expected {
            return Ok(Seen::Done(()));
        }
        let extra: Vec<_> = now.iter().filter(|(k, n)| expected.get(*k) != Some(n)).collect();
        let missing: Vec<_> = expected.iter().filter(|(k, n)| now.get(*k) != Some(n)).collect();
        Ok(Seen::NotYet(format!("orphaned or duplicated objects {extra:?}; missing {missing:?}")))
    })
    .await
}

/// (1) milan's kube-apiserver is killed while the full chain is being applied and comes back 5 s later.
async fn api_server_crash_mid_apply(ground: &Ground, cli: Cli) -> Result<()> {
    let empty = inventory(ground).await?;
    let work = Workdir::new(cli, &full_chain(ground, r#"{ cpu = "4", memory = "8Gi" }"#)).await?;
    let servers: Api<GatewayServer> = Api::namespaced(ground.client(MILAN).await?, MILAN_NS);
    let began = Instant::now();
    let apply = work.run(&["apply", "-auto-approve", "-input=false", "-no-color"]);
    let crash = async {
        // Mid-apply: the server gateway exists, the tenant and the peer are still to come.
        eventually(Duration::from_secs(120), "GatewayServer on milan (the apply is under way)", || async {
            Ok(servers.get_opt(ROME).await?.map(|_| ()))
        })
        .await?;
        let at = began.elapsed();
        ground.restart_api_server(MILAN, Duration::from_secs(5)).await?;
        anyhow::Ok(at)
    };
    let (first, crashed_at) = tokio::join!(apply, crash);
    let (first, crashed_at) = (first?, crashed_at?);
    // The fault must hit the apply: an API server that went down after the apply ended proves nothing.
    ensure!(crashed_at < first.duration, "{cli}: milan's API server went down only after the apply had ended");
    eprintln!(
        "[faults {cli}] milan's API server killed {:.1}s into the apply, down 5 s; the apply {} after {:.1}s",
        crashed_at.as_secs_f64(),
        if first.success() { "succeeded" } else { "failed" },
        first.duration.as_secs_f64()
    );
    if !first.success() {
        // The error must say where: the cluster (its API server address) or the object.
        let stderr = flat(&first.stderr);
        let api_server = &ground.cluster(MILAN).api_server;
        let names_it = stderr.contains(api_server.trim_start_matches("https://"))
            || ["liqo-tenant-rome", "Tenant ", "GatewayServer ", "RoleBinding ", "CertificateSigningRequest "]
                .iter()
                .any(|needle| stderr.contains(needle));
        ensure!(names_it, "{cli}: the failed apply names neither milan's API server nor an object:\n{}", first.stderr);
        eprintln!("[faults {cli}] the failed apply said: {}", stderr.lines().next().unwrap_or_default());
    }
    let second = work.apply().await.context("the second apply after the API server came back")?;
    eprintln!("[faults {cli}] the second apply converged in {:.1}s", second.duration.as_secs_f64());
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "{cli}: the plan after converging must be empty:\n{}", plan_text(&plan));
    let after_crash = inventory(ground).await?;

    // The same peering built without a fault is the reference: no duplicate, no orphan.
    let reference = Instant::now();
    work.destroy().await?;
    assert_inventory(ground, &empty, "destroy after the crash").await?;
    work.apply().await?;
    assert_inventory(ground, &after_crash, "a clean apply compared with the one that survived the crash").await?;
    eprintln!("[faults {cli}] destroy and clean re-apply for the reference: {:.1}s", reference.elapsed().as_secs_f64());
    eprintln!("[faults {cli}] {} objects after the crash, the same as after a clean apply", after_crash.len());
    work.destroy().await?;
    assert_inventory(ground, &empty, "destroy").await
}

/// (2) Ctrl-C while liqo_peer waits for its ResourceSlice to be accepted (milan's status writes held back).
async fn interrupt_during_a_wait(ground: &Ground, cli: Cli) -> Result<()> {
    let work = Workdir::new(cli, &full_chain(ground, r#"{ cpu = "2", memory = "4Gi" }"#)).await?;
    work.apply().await?;
    work.destroy_with(&[&format!("-target={PEER}")]).await?;
    const DELAY: Duration = Duration::from_secs(20);
    ground.set_fault(MILAN, "status-delay-ms", &DELAY.as_millis().to_string()).await?;

    let mirror = tf::mirror::get()?;
    let mut command = Command::new(cli.program()?);
    command
        .args(["apply", "-auto-approve", "-input=false", "-no-color"])
        .current_dir(work.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("TF_CLI_CONFIG_FILE", &mirror.cli_config)
        .env("TOFU_CLI_CONFIG_FILE", &mirror.cli_config)
        .env("TF_IN_AUTOMATION", "1")
        .env("CHECKPOINT_DISABLE", "1");
    let child = process::spawn_attached(command)?;
    let pid = child.id();
    let slices: Api<ResourceSlice> = Api::namespaced(ground.client(ROME).await?, ROME_NS);
    eventually(Duration::from_secs(60), "the ResourceSlice (liqo_peer is waiting for it to be accepted)", || async {
        Ok(slices.get_opt(MILAN).await?.map(|_| ()))
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let signalled = Instant::now();
    rustix::process::kill_process(Pid::from_raw(pid as i32).context("pid")?, Signal::INT)?;
    let output = tokio::task::spawn_blocking(move || child.wait_with_output()).await??;
    let exited_after = signalled.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("[faults {cli}] SIGINT during liqo_peer's wait: {cli} exited {:?} after {exited_after:?}", output.status);
    ensure!(exited_after <= Duration::from_secs(2), "{cli} took {exited_after:?} to exit after SIGINT:\n{stderr}");
    ensure!(!output.status.success(), "{cli}: an interrupted apply must not report success");
    ensure!(
        flat(&stderr).to_lowercase().contains("cancel") || flat(&stderr).to_lowercase().contains("interrupt"),
        "{cli}: the interrupted apply says it was cancelled:\n{stderr}"
    );

    // The state is sane: readable, not locked, and the peer either absent or tainted (to be replaced).
    ensure!(!work.path().join(".terraform.tfstate.lock.info").exists(), "{cli}: the state is still locked");
    if let Some(peer) = instance(&work, PEER)? {
        ensure!(peer["status"] == "tainted", "{cli}: an interrupted create is recorded as tainted: {peer}");
    }
    ensure!(instance(&work, "liqo_tenant.rome")?.is_some(), "{cli}: the rest of the chain stays in the state");

    ground.clear_faults(MILAN).await?;
    work.apply().await.context("apply after the interruption")?;
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "{cli}: the plan after converging must be empty:\n{}", plan_text(&plan));
    work.destroy().await?;
    Ok(())
}

/// (4) Liqo reports a failed Connection: the apply ends with Liqo's message. Then status that never arrives
/// within `timeouts.create`: the apply names the object and the condition it waited for.
async fn liqo_faults_end_with_the_reason(ground: &Ground, cli: Cli) -> Result<()> {
    let chain = full_chain(ground, r#"{ cpu = "2", memory = "4Gi" }"#);
    let work = Workdir::new(cli, &chain).await?;
    ground.set_fault(ROME, "fail-connections", "true").await?;
    let failed =
        work.run(&["apply", "-auto-approve", "-input=false", "-no-color", "-target=liqo_gateway.client"]).await;
    ground.clear_faults(ROME).await?;
    let failed = failed?;
    ensure!(!failed.success(), "{cli}: a Connection in Error must fail the apply");
    let stderr = flat(&failed.stderr);
    for needle in ["Connection", "Error", "fault fail-connections is switched on"] {
        ensure!(stderr.contains(needle), "{cli}: the failure gives Liqo's reason ({needle:?}):\n{}", failed.stderr);
    }
    work.destroy().await?;

    // A GatewayServer whose endpoint status comes 30 s late, with a 5 s create timeout.
    let timed = chain.replace(
        "server = { service_type = \"NodePort\", port = 51840, node_port = 30742 }",
        "server = { service_type = \"NodePort\", port = 51840, node_port = 30742 }\n  timeouts { create = \"5s\" }",
    );
    ensure!(timed != chain, "the chain's server block changed; update this test");
    work.write("main.tf", &timed)?;
    ground.set_fault(MILAN, "status-delay-ms", "30000").await?;
    let late = work.run(&["apply", "-auto-approve", "-input=false", "-no-color", "-target=liqo_gateway.server"]).await;
    ground.clear_faults(MILAN).await?;
    let late = late?;
    ensure!(!late.success(), "{cli}: status later than timeouts.create must fail the apply");
    let stderr = flat(&late.stderr);
    // The first wait of the create (the Configuration's CIDRs, then the server's endpoint) is the one that expires.
    let condition = [
        (format!("Configuration {MILAN_NS}/{ROME}"), "NetworkCIDRsConfigured"),
        (format!("GatewayServer {MILAN_NS}/{ROME}"), "status.endpoint"),
    ]
    .into_iter()
    .find(|(object, _)| stderr.contains(&format!("Timed out waiting for {object}")));
    let (_, awaited) =
        condition.with_context(|| format!("{cli}: the timeout names no gateway object:\n{}", late.stderr))?;
    ensure!(
        stderr.contains(awaited) && stderr.contains("which never came"),
        "{cli}: the timeout names {awaited:?}:\n{}",
        late.stderr
    );
    eprintln!("[faults {cli}] timeout reported as: {}", stderr.lines().next().unwrap_or_default());
    // The late status still arrives; the next apply (no timeout pressure) converges and destroy cleans up.
    work.write("main.tf", &chain)?;
    work.apply().await?;
    work.destroy().await?;
    Ok(())
}

/// (5) Liqo still starting, as just after its chart was installed: milan's cluster-ID ConfigMap (which the chart
/// makes) is written 6 s into the apply of a liqo_generate, which waits for it and succeeds instead of failing.
async fn liqo_still_starting_is_waited_for(ground: &Ground, cli: Cli) -> Result<()> {
    const LATE: Duration = Duration::from_secs(6);
    let maps: Api<ConfigMap> = Api::namespaced(ground.client(MILAN).await?, "liqo");
    let name = "liqo-clusterid-configmap";
    let mut map = maps.get(name).await.context("milan's cluster-ID ConfigMap")?;
    maps.delete(name, &DeleteParams::default()).await?;
    let config = format!(
        "{}\nresource \"liqo_generate\" \"milan\" {{\n  provider          = liqo.milan\n  remote_cluster_id = \"{ROME}\"\n}}\n",
        tf::provider_config(ground)
    );
    let work = Workdir::new(cli, &config).await?;
    let written_late = async {
        tokio::time::sleep(LATE).await;
        map.metadata.resource_version = None;
        map.metadata.uid = None;
        maps.create(&PostParams::default(), &map).await.context("writing the ConfigMap back")
    };
    let (applied, written) = tokio::join!(work.apply(), written_late);
    written?;
    let applied = applied.with_context(|| format!("{cli}: the apply did not wait for the ConfigMap"))?;
    ensure!(applied.duration >= LATE, "{cli}: the apply ended after {:?}, before the ConfigMap came", applied.duration);
    work.destroy().await?;
    Ok(())
}

/// Runs one step and prints how long it took.
async fn timed<F: std::future::Future<Output = Result<()>>>(cli: Cli, step: &str, run: F) -> Result<()> {
    let began = Instant::now();
    let result = run.await.with_context(|| format!("{step} with {cli}"));
    eprintln!("[faults {cli}] {step}: {:.0}s", began.elapsed().as_secs_f64());
    result
}

#[tokio::test(flavor = "multi_thread")]
async fn faults_during_apply_end_cleanly_and_converge() -> Result<()> {
    let runs = Cli::available().into_iter().map(|cli| {
        let run = async move {
            let ground = Ground::start_simulated(&[MILAN, ROME]).await.context("ground")?;
            timed(cli, "API server crash mid-apply", api_server_crash_mid_apply(&ground, cli)).await?;
            timed(cli, "Ctrl-C during a wait", interrupt_during_a_wait(&ground, cli)).await?;
            timed(cli, "Liqo faults", liqo_faults_end_with_the_reason(&ground, cli)).await?;
            timed(cli, "Liqo still starting", liqo_still_starting_is_waited_for(&ground, cli)).await
        };
        (cli, run)
    });
    tf::each_client(runs).await.map(drop)
}
