//! A hub of ten: `milan` provides resources to ten consumer control planes through the shipped peering module,
//! applied with `-parallelism=10`, so ten liqo_gateway servers, ten liqo_tenants (ten CSRs approved) and the
//! consumers' peers hit milan's API server at once. The apply must succeed without a single 409 answered to the
//! provider (the provider authenticates with the ground's provider kubeconfig, so milan's audit log tells its
//! requests from the simulator's), re-plan empty and destroy leaving no Liqo object on any cluster.
//!
//! One client (the first of `Cli::available()`): eleven control planes are the most this 2-core machine runs
//! next to the rest of the suite, and the provider's behaviour under parallelism does not depend on the client.
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use liqo_acceptance::ground::{audit, process};
use liqo_acceptance::observe::plan_text;
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, inventory};

const CONSUMERS: usize = 10;

fn consumers() -> Vec<String> {
    (1..=CONSUMERS).map(|k| format!("consumer-{k:02}")).collect()
}

/// Providers for every cluster (through the provider kubeconfigs) and one peering module call per consumer.
fn hub(ground: &Ground) -> String {
    let mut hcl = tf::required_providers();
    for cluster in ground.clusters() {
        hcl.push_str(&format!(
            "\nprovider \"liqo\" {{\n  alias      = \"{name}\"\n  kubernetes = {{ config_path = \"{path}\" }}\n}}\n",
            name = cluster.name,
            path = ground.provider_kubeconfig(&cluster.name).display()
        ));
    }
    for consumer in consumers() {
        hcl.push_str(&format!(
            r#"
module "{consumer}" {{
  source    = "./modules/peering"
  providers = {{ liqo.provider = liqo.{MILAN}, liqo.consumer = liqo.{consumer} }}
  resources = {{ cpu = "1", memory = "2Gi", pods = "20" }}
}}
"#
        ));
    }
    hcl
}

/// The ground's processes' resident memory in MiB (from /proc), to report what eleven control planes cost.
fn ground_rss_mib(ground: &Ground) -> Result<u64> {
    let mut kib = 0;
    for record in Ground::recorded_processes(ground.dir())?.iter().filter(|r| process::is_running(r)) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", record.pid)).unwrap_or_default();
        kib += status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    Ok(kib / 1024)
}

/// The number of the provider's requests on every cluster, and the 409 answers among them as
/// `cluster: verb resource namespace/name`.
fn provider_conflicts(ground: &Ground) -> Result<(usize, Vec<String>)> {
    let mut requests = 0;
    let mut conflicts = Vec::new();
    for cluster in ground.clusters() {
        for event in audit::read(&ground.audit_log(&cluster.name))? {
            requests += usize::from(event.user == audit::PROVIDER_USER);
            if event.user == audit::PROVIDER_USER && event.code == Some(409) {
                conflicts.push(format!(
                    "{}: {} {} {}/{}",
                    cluster.name,
                    event.verb,
                    event.resource.unwrap_or_default(),
                    event.namespace.unwrap_or_default(),
                    event.name.unwrap_or_default()
                ));
            }
        }
    }
    Ok((requests, conflicts))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hub_of_ten_applies_in_parallel_without_conflicts() -> Result<()> {
    let began = Instant::now();
    let owned: Vec<String> = std::iter::once(MILAN.to_owned()).chain(consumers()).collect();
    let names: Vec<&str> = owned.iter().map(String::as_str).collect();
    let ground = Ground::start_simulated(&names).await?;
    let cli = Cli::available()[0];
    let work = Workdir::new(cli, "").await?;
    let module_dir = work.path().join("modules/peering");
    std::fs::create_dir_all(&module_dir)?;
    let module_src = liqo_acceptance::ground::repository_root().join("examples/modules/peering");
    for entry in std::fs::read_dir(&module_src)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "tf") {
            std::fs::copy(&path, module_dir.join(path.file_name().context("file name")?))?;
        }
    }
    work.write("main.tf", &hub(&ground))?;
    let init = work.run(&["init", "-input=false", "-no-color"]).await?;
    ensure!(init.success(), "init:\n{init}");

    let apply = work.apply_with(&["-parallelism=10"]).await?;
    let rss = ground_rss_mib(&ground)?;
    eprintln!(
        "[concurrency {cli}] {CONSUMERS} peerings applied with -parallelism=10 in {:.1}s; ground RSS {rss} MiB",
        apply.duration.as_secs_f64()
    );
    let stderr = apply.stderr.to_lowercase();
    ensure!(!stderr.contains("conflict") && !stderr.contains("409"), "{cli}: the apply reported conflicts:\n{apply}");
    let (requests, conflicts) = provider_conflicts(&ground)?;
    eprintln!("[concurrency {cli}] the provider made {requests} API requests during the apply");
    ensure!(
        requests > 0,
        "{cli}: no request of user {} in the audit logs: is the provider kubeconfig in use?",
        audit::PROVIDER_USER
    );
    ensure!(conflicts.is_empty(), "{cli}: the API servers answered the provider with 409: {conflicts:#?}");

    let plan = work.plan_with(&["-parallelism=10"]).await?;
    ensure!(plan.is_empty(), "{cli}: the plan after the parallel apply must be empty:\n{}", plan_text(&plan));

    let destroy = work.destroy_with(&["-parallelism=10"]).await?;
    eprintln!("[concurrency {cli}] destroyed in {:.1}s", destroy.duration.as_secs_f64());
    inventory::nothing_left(&ground, &names).await.with_context(|| format!("{cli}: destroy"))?;
    eprintln!(
        "[concurrency {cli}] {:.0}s in all (ground of {} control planes included)",
        began.elapsed().as_secs_f64(),
        names.len()
    );
    Ok(())
}
