//! Hub and spoke: one provider cluster (`hub`) peered with N consumer clusters (`c01`…), each its own control
//! plane, as `examples/hub` does with three. Liqo allows one cluster ID per cluster and looks per-peer objects up
//! by the peer's cluster ID cluster-wide, so consumers cannot share a control plane: N consumers are N control
//! planes (API server and controller-manager each, one etcd for all), and the memory of the machine bounds N.
//! Liqo's controllers are the simulator on every cluster.
//!
//! One ground of the largest size; for each size (`--hub-sizes`, default 1, 10, 25, 50) and each parallelism
//! (Terraform's default and `-parallelism=50`): one configuration with a peering per consumer is applied,
//! planned again (it must need no change) and destroyed. Figures per run: wall times, apply(N) ÷ apply(1),
//! API requests per peering (audit logs), peak RSS per provider process, and the load average at the run's start.
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use liqo_acceptance::ground::{Ground, process};
use liqo_acceptance::tf::Workdir;

use super::peering::{peering_module, provider_blocks, provider_requests};
use super::rss::RssRecorder;
use super::{Report, load_average, secs};

const HUB: &str = "hub";
/// The share of the machine's available memory the hub ground may take: the rest is for Terraform, its provider
/// processes and the other work on the machine. The per-cluster figure is PSS, what the ground really takes.
const MEMORY_SHARE: f64 = 0.8;
/// The ground starts at most 60 clusters, the hub included.
const MAX_CONSUMERS: usize = 59;
/// Terraform's and OpenTofu's default `-parallelism`.
const DEFAULT_PARALLELISM: usize = 10;
/// The wide run: every peering of the largest configuration at once.
const WIDE_PARALLELISM: usize = 50;
/// Goals: the apply of 50 peerings at `-parallelism=50` within this multiple of one peering, and a plan of the
/// 50-peering configuration that needs no change within this time.
const GROWTH_GOAL: f64 = 5.0;
const REPLAN_GOAL: Duration = Duration::from_secs(10);

/// How many consumers fit: the requested number, bounded by the available memory at the measured per-cluster
/// memory and by the ground's limit of clusters. Returns the number and why it is lower.
pub fn plan_size(requested: usize, per_cluster_kb: u64) -> (usize, Option<String>) {
    let available_kb = meminfo("MemAvailable:").unwrap_or(0);
    let by_memory = ((available_kb as f64 * MEMORY_SHARE) / per_cluster_kb.max(1) as f64) as usize;
    let by_memory = by_memory.saturating_sub(1);
    let n = requested.min(by_memory).min(MAX_CONSUMERS);
    let why = (n < requested).then(|| {
        format!(
            "{requested} consumers requested, {n} run: {:.1} GiB available now, {:.0} MB per cluster (PSS \
             measured on this ground: API server, controller-manager and a share of etcd and the simulator), at \
             most {:.0}% of the available memory → {by_memory} consumers; the ground starts at most {} clusters",
            available_kb as f64 / 1024.0 / 1024.0,
            per_cluster_kb as f64 / 1024.0,
            MEMORY_SHARE * 100.0,
            MAX_CONSUMERS + 1
        )
    });
    (n, why)
}

/// One apply / plan / destroy cycle of `consumers` peerings at `parallelism`.
struct Cycle {
    consumers: usize,
    parallelism: usize,
    load: String,
    apply: Duration,
    replan: Duration,
    destroy: Duration,
    /// API requests of the provider's user per peering, apply and destroy.
    requests: (f64, f64),
    rss: Option<(String, u64)>,
}

pub async fn hub(args: &super::Args, consumers: usize, recorder: &RssRecorder, report: &mut Report) -> Result<()> {
    let names: Vec<String> =
        std::iter::once(HUB.to_owned()).chain((1..=consumers).map(|k| format!("c{k:02}"))).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    // Fifty-one clusters with real Liqo do not fit on the machine; the simulated ones measure the provider's cost.
    let ground = Ground::start_simulated(&refs)
        .await
        .with_context(|| format!("starting a ground of {} clusters", refs.len()))?;
    report.add(
        "hub",
        format!("ground startup ({} clusters + simulator, load at end {})", refs.len(), load_average()),
        secs(ground.startup_time()),
        "",
        None,
    );
    let idle_kb = ground_memory_kb(&ground)?;
    report.add(
        "hub",
        format!("ground memory (PSS) at idle ({} control planes, shared etcd, simulator)", refs.len()),
        format!("{:.1} GiB ({:.0} MB per cluster)", gib(idle_kb), idle_kb as f64 / 1024.0 / refs.len() as f64),
        "",
        None,
    );

    let mut sizes: Vec<usize> = args.hub_sizes.iter().copied().filter(|&n| n <= consumers).collect();
    if !sizes.contains(&consumers) {
        sizes.push(consumers);
    }
    if !sizes.contains(&1) {
        sizes.insert(0, 1);
    }
    let mut cycles = Vec::new();
    let mut peak_kb = idle_kb;
    let mut failure = None;
    'sizes: for &n in &sizes {
        for parallelism in [DEFAULT_PARALLELISM, WIDE_PARALLELISM] {
            match cycle(args, &ground, &refs[..=n], parallelism, recorder).await {
                Ok((c, applied_kb)) => {
                    eprintln!(
                        "[bench] hub: {n} peering(s) at -parallelism={parallelism}: apply {}, plan {}, destroy {}",
                        secs(c.apply),
                        secs(c.replan),
                        secs(c.destroy)
                    );
                    peak_kb = peak_kb.max(applied_kb);
                    cycles.push(c);
                }
                Err(e) => {
                    failure = Some(e.context(format!("{n} peerings at -parallelism={parallelism}")));
                    break 'sizes;
                }
            }
        }
    }

    // One peering has fewer resources than either parallelism, so both of its applies measure the same thing; the
    // faster one is the base of every growth ratio (the slower one usually caught the load of the ground's start).
    let one = cycles.iter().filter(|o| o.consumers == 1).map(|o| o.apply).min();
    for c in &cycles {
        let growth = one.map(|o| c.apply.as_secs_f64() / o.as_secs_f64()).unwrap_or(f64::NAN);
        let wide_goal = c.consumers == 50 && c.parallelism == WIDE_PARALLELISM;
        report.add(
            "hub",
            format!(
                "N={}, -parallelism={}: apply (÷ faster apply of N=1; load {})",
                c.consumers, c.parallelism, c.load
            ),
            format!("{} ({growth:.1}×)", secs(c.apply)),
            if wide_goal { "≤ 5× N=1" } else { "" },
            wide_goal.then_some(growth <= GROWTH_GOAL),
        );
        report.add(
            "hub",
            format!("N={}, -parallelism={}: plan with no change / destroy", c.consumers, c.parallelism),
            format!("{} / {}", secs(c.replan), secs(c.destroy)),
            if c.consumers == 50 { "plan ≤ 10 s" } else { "" },
            (c.consumers == 50).then_some(c.replan <= REPLAN_GOAL),
        );
        report.add(
            "hub",
            format!("N={}, -parallelism={}: API requests per peering, apply / destroy", c.consumers, c.parallelism),
            format!("{:.1} / {:.1}", c.requests.0, c.requests.1),
            "",
            None,
        );
        if let Some((text, max_kb)) = &c.rss {
            report.add(
                "hub",
                format!("N={}, -parallelism={}: peak RSS per provider process (apply)", c.consumers, c.parallelism),
                text.clone(),
                "≤ 20 MB",
                Some(*max_kb <= 20 * 1024),
            );
        }
    }
    report.add(
        "hub",
        "ground memory (PSS), all control planes + etcd + simulator: idle → highest after an apply",
        format!("{:.1} GiB → {:.1} GiB", gib(idle_kb), gib(peak_kb)),
        "",
        None,
    );
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Applies, re-plans and destroys one peering per consumer of `clusters` (the hub first). Returns the figures and
/// the ground's memory right after the apply.
async fn cycle(
    args: &super::Args,
    ground: &Ground,
    clusters: &[&str],
    parallelism: usize,
    recorder: &RssRecorder,
) -> Result<(Cycle, u64)> {
    let consumers = clusters.len() - 1;
    let mut config = provider_blocks(ground, clusters);
    for consumer in &clusters[1..] {
        config.push_str(&peering_module(consumer, HUB, consumer, ""));
    }
    let work = Workdir::new(args.cli, &config).await?;
    let flag = format!("-parallelism={parallelism}");
    let load = load_average();
    let before = provider_requests(ground, clusters)?;
    recorder.start()?;
    let began = Instant::now();
    let applied = work.apply_with(&[&flag]).await;
    let apply = began.elapsed();
    recorder.stop();
    let applied_kb = ground_memory_kb(ground)?;
    let after_apply = provider_requests(ground, clusters)?;
    let rss = recorder.summary()?;
    applied.context("apply")?;
    let plan = work.plan_with(&[&flag]).await.context("plan after the apply")?;
    if !plan.is_empty() {
        bail!("the plan after the apply has changes:\n{}", plan.run().stdout);
    }
    let replan = plan.run().duration;
    let destroyed = work.destroy_with(&[&flag]).await.context("destroy")?;
    let after_destroy = provider_requests(ground, clusters)?;
    let per_peering = |n: usize| n as f64 / consumers as f64;
    Ok((
        Cycle {
            consumers,
            parallelism,
            load,
            apply,
            replan,
            destroy: destroyed.duration,
            requests: (
                per_peering(after_apply.saturating_sub(before)),
                per_peering(after_destroy.saturating_sub(after_apply)),
            ),
            rss,
        },
        applied_kb,
    ))
}

/// The memory of every process the ground started: the sum of their proportional set sizes. RSS would count the
/// pages of the kube-apiserver and kube-controller-manager executables once per process, though the kernel keeps
/// them once (60–80 MB per process).
pub fn ground_memory_kb(ground: &Ground) -> Result<u64> {
    let records = Ground::recorded_processes(ground.dir())?;
    Ok(records.iter().filter(|r| process::is_running(r)).filter_map(|r| pss_kb(r.pid)).sum())
}

fn pss_kb(pid: u32) -> Option<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    rollup.lines().find_map(|l| l.strip_prefix("Pss:"))?.split_whitespace().next()?.parse().ok()
}

fn meminfo(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines().find_map(|l| l.strip_prefix(field))?.split_whitespace().next()?.parse().ok()
}

fn gib(kb: u64) -> f64 {
    kb as f64 / 1024.0 / 1024.0
}
