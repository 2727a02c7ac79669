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
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use liqo_acceptance::ground::{Ground, Heap, LiqoMode, Options, process};
use liqo_acceptance::tf::Workdir;

use super::peering::{peering_module, provider_blocks, provider_requests};
use super::rss::RssRecorder;
use super::{Report, load_average, secs};

const HUB: &str = "hub";
/// The share of the machine's available memory the hub ground may take: the rest is for Terraform, its provider
/// processes and the other work on the machine. The per-cluster figure is PSS, what the ground really takes, and
/// it overstates a large ground's: on the two-cluster ground each cluster carries half of the shared etcd and
/// simulator (302–340 MB per cluster there against 235 MB on a ground of 49, measured 2026-11-24), so 90% still
/// leaves a quarter of the available memory unused at 50 consumers.
const MEMORY_SHARE: f64 = 0.9;
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
/// How long the ground's CPU use at idle is sampled.
const IDLE_WINDOW: Duration = Duration::from_secs(30);

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

/// A simulated ground whose API servers collect their heap tightly ([`Heap::Tight`]): memory bounds how many
/// consumers the hub gets, and the two-cluster ground that sizes it must measure the same control planes.
pub async fn start_tight_simulated(names: &[&str]) -> Result<Ground> {
    Ground::start_with(names, Options { liqo: LiqoMode::Simulated, heap: Heap::Tight, ..Options::default() }).await
}

/// One apply / plan / destroy cycle of `consumers` peerings at `parallelism`.
struct Cycle {
    consumers: usize,
    parallelism: usize,
    load: String,
    apply: Duration,
    replan: Duration,
    destroy: Duration,
    /// API requests of the provider's user per peering: apply, the plan with no change, destroy.
    requests: (f64, f64, f64),
    rss: Option<(String, u64)>,
    /// Where the CPU time of the apply and of the re-plan went.
    cpu: (CpuSplit, CpuSplit),
}

/// CPU time (user + system) spent during one interval, by who spent it.
struct CpuSplit {
    /// The CLI and everything it started (its provider processes included), from this process's reaped children.
    cli: Duration,
    /// The provider processes alone (GNU `time` in the bench wrapper).
    providers: Duration,
    /// The ground's processes by kind: `kube-apiserver`, `kube-controller-manager`, `etcd`, `simulator`.
    ground: BTreeMap<String, Duration>,
}

impl CpuSplit {
    fn text(&self) -> String {
        let mut parts = vec![format!("CLI + providers {} (providers {})", secs(self.cli), secs(self.providers))];
        parts.extend(self.ground.iter().map(|(kind, t)| format!("{kind} {}", secs(*t))));
        parts.join(", ")
    }
}

/// CPU counters at the start of an interval.
struct CpuMeter {
    cli: Duration,
    ground: BTreeMap<String, Duration>,
}

impl CpuMeter {
    fn start(ground: &Ground) -> Result<Self> {
        Ok(Self { cli: children_cpu(), ground: ground_cpu(ground)? })
    }

    /// The CPU time spent since `start`; the providers' share is what `recorder` recorded since its `start`.
    fn stop(self, ground: &Ground, recorder: &RssRecorder) -> Result<CpuSplit> {
        Ok(CpuSplit {
            cli: children_cpu().saturating_sub(self.cli),
            providers: recorder.cpu()?,
            ground: cpu_delta(&ground_cpu(ground)?, &self.ground),
        })
    }
}

/// CPU time of the ground's running processes by kind (the record's name without its cluster).
fn ground_cpu(ground: &Ground) -> Result<BTreeMap<String, Duration>> {
    let mut by_kind = BTreeMap::new();
    for record in Ground::recorded_processes(ground.dir())?.iter().filter(|r| process::is_running(r)) {
        let kind = record.name.rsplit('/').next().unwrap_or(&record.name).to_owned();
        if let Some(ticks) = stat_ticks(&format!("/proc/{}/stat", record.pid), 13) {
            *by_kind.entry(kind).or_insert(Duration::ZERO) += ticks;
        }
    }
    Ok(by_kind)
}

/// User + system CPU time of this process's waited-for children (`cutime` + `cstime`).
fn children_cpu() -> Duration {
    stat_ticks("/proc/self/stat", 15).unwrap_or_default()
}

/// The sum of two adjacent clock-tick fields of the `/proc/<pid>/stat` file at `path`, the first at `first`
/// (proc(5)'s field number less one: 13 for `utime` + `stime`, 15 for `cutime` + `cstime`).
fn stat_ticks(path: &str, first: usize) -> Option<Duration> {
    parse_ticks(&std::fs::read_to_string(path).ok()?, first)
}

fn parse_ticks(stat: &str, first: usize) -> Option<Duration> {
    // The command name (field 2) may hold spaces and parentheses; the fields after its last ')' start at field 3.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(first - 2)?.parse::<u64>().ok()? + fields.get(first - 1)?.parse::<u64>().ok()?;
    // The kernel reports in USER_HZ, 100 on Linux.
    Some(Duration::from_millis(ticks * 10))
}

fn cpu_delta(after: &BTreeMap<String, Duration>, before: &BTreeMap<String, Duration>) -> BTreeMap<String, Duration> {
    after.iter().map(|(k, t)| (k.clone(), t.saturating_sub(before.get(k).copied().unwrap_or_default()))).collect()
}

pub async fn hub(args: &super::Args, consumers: usize, recorder: &RssRecorder, report: &mut Report) -> Result<()> {
    let names: Vec<String> =
        std::iter::once(HUB.to_owned()).chain((1..=consumers).map(|k| format!("c{k:02}"))).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    // Fifty-one clusters with real Liqo do not fit on the machine; the simulated ones measure the provider's cost.
    let ground =
        start_tight_simulated(&refs).await.with_context(|| format!("starting a ground of {} clusters", refs.len()))?;
    report.add(
        "hub",
        format!("ground startup ({} clusters + simulator, load at end {})", refs.len(), load_average()),
        secs(ground.startup_time()),
        "",
        None,
    );
    let idle_kb = ground_memory_kb(&ground)?;
    // What the ground itself takes of the machine's cores with nothing to do: every run below competes with it.
    let idle_before = ground_cpu(&ground)?;
    tokio::time::sleep(IDLE_WINDOW).await;
    let idle = cpu_delta(&ground_cpu(&ground)?, &idle_before);
    let cores = |t: Duration| t.as_secs_f64() / IDLE_WINDOW.as_secs_f64();
    let split: Vec<String> = idle.iter().map(|(kind, t)| format!("{kind} {:.2}", cores(*t))).collect();
    report.add(
        "hub",
        format!("ground CPU at idle, cores busy over {} s ({} clusters)", IDLE_WINDOW.as_secs(), refs.len()),
        format!("{:.2} ({})", cores(idle.values().sum()), split.join(", ")),
        "",
        None,
    );
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
            format!(
                "N={}, -parallelism={}: API requests per peering, apply / plan with no change / destroy",
                c.consumers, c.parallelism
            ),
            format!("{:.1} / {:.1} / {:.1}", c.requests.0, c.requests.1, c.requests.2),
            "",
            None,
        );
        for (step, cpu) in [("the apply", &c.cpu.0), ("the plan with no change", &c.cpu.1)] {
            report.add(
                "hub",
                format!("N={}, -parallelism={}: CPU time during {step}", c.consumers, c.parallelism),
                cpu.text(),
                "",
                None,
            );
        }
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
    let meter = CpuMeter::start(ground)?;
    let began = Instant::now();
    let applied = work.apply_with(&[&flag]).await;
    let apply = began.elapsed();
    recorder.stop();
    let apply_cpu = meter.stop(ground, recorder)?;
    let applied_kb = ground_memory_kb(ground)?;
    let after_apply = provider_requests(ground, clusters)?;
    let rss = recorder.summary()?;
    applied.context("apply")?;
    recorder.start()?;
    let meter = CpuMeter::start(ground)?;
    let plan = work.plan_with(&[&flag]).await;
    recorder.stop();
    let replan_cpu = meter.stop(ground, recorder)?;
    let plan = plan.context("plan after the apply")?;
    // Counted apart: the destroy's own count must not include the re-plan's reads.
    let after_plan = provider_requests(ground, clusters)?;
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
                per_peering(after_plan.saturating_sub(after_apply)),
                per_peering(after_destroy.saturating_sub(after_plan)),
            ),
            rss,
            cpu: (apply_cpu, replan_cpu),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_and_children_cpu_ticks_past_a_command_name_with_spaces() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime …
        let stat = "4242 (kube apiserver) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 12 0 123456 0 0";
        assert_eq!(parse_ticks(stat, 13), Some(Duration::from_millis(3000)));
        assert_eq!(parse_ticks(stat, 15), Some(Duration::from_millis(100)));
        assert_eq!(parse_ticks("no closing parenthesis", 13), None);
    }
}
