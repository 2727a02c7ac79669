//! Hub and spoke: one provider cluster (`hub`) peered with N consumer clusters (`c01`…), each its own control
//! plane, as `examples/hub` does with three. Liqo allows one cluster ID per cluster and looks per-peer objects up
//! by the peer's cluster ID cluster-wide, so consumers cannot share a control plane: N consumers are N control
//! planes, and the memory of the machine bounds N.
//!
//! Figures: apply of all N peerings vs. apply of one (same ground, same run), destroy of all N, peak RSS per
//! provider process, API requests per peering (audit logs), and the ground's own memory.
use std::time::Instant;

use anyhow::{Context, Result};
use liqo_acceptance::ground::{Ground, process};
use liqo_acceptance::tf::Workdir;

use super::peering::{peering_module, provider_blocks, provider_requests};
use super::rss::RssRecorder;
use super::{Report, secs};

const HUB: &str = "hub";
/// The share of the machine's available memory the hub ground may take (others work on the machine too).
const MEMORY_SHARE: f64 = 0.6;

/// How many consumers fit: the requested number, bounded by the available memory at the measured per-cluster
/// RSS and by the ground's limit of 50 clusters (hub included). Returns the number and why it is lower.
pub fn plan_size(requested: usize, per_cluster_kb: u64) -> (usize, Option<String>) {
    let available_kb = meminfo("MemAvailable:").unwrap_or(0);
    let by_memory = ((available_kb as f64 * MEMORY_SHARE) / per_cluster_kb.max(1) as f64) as usize;
    let by_memory = by_memory.saturating_sub(1);
    let by_ground = 49;
    let n = requested.min(by_memory).min(by_ground);
    let why = (n < requested).then(|| {
        format!(
            "{requested} consumers requested, {n} run: {:.1} GiB available now, {:.0} MB per control plane \
             (etcd + kube-apiserver + kube-controller-manager, measured on this ground), at most {:.0}% of the \
             available memory → {by_memory} consumers; the ground starts at most 50 clusters → {by_ground}",
            available_kb as f64 / 1024.0 / 1024.0,
            per_cluster_kb as f64 / 1024.0,
            MEMORY_SHARE * 100.0
        )
    });
    (n, why)
}

pub async fn hub(args: &super::Args, consumers: usize, recorder: &RssRecorder, report: &mut Report) -> Result<()> {
    let names: Vec<String> =
        std::iter::once(HUB.to_owned()).chain((1..=consumers).map(|k| format!("c{k:02}"))).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let ground = Ground::start(&refs).await.with_context(|| format!("starting a ground of {} clusters", refs.len()))?;
    report.add(
        "hub",
        format!("ground startup ({} clusters + simulator)", refs.len()),
        secs(ground.startup_time()),
        "",
        None,
    );
    let idle_kb = ground_rss_kb(&ground)?;

    let one = Workdir::new(
        args.cli,
        &format!("{}{}", provider_blocks(&ground, &refs[..2]), peering_module("c01", HUB, "c01", "")),
    )
    .await?;
    let single = one.apply().await.context("one hub peering")?;
    one.destroy().await.context("destroying the one hub peering")?;

    let mut config = provider_blocks(&ground, &refs);
    for consumer in &refs[1..] {
        config.push_str(&peering_module(consumer, HUB, consumer, ""));
    }
    let all = Workdir::new(args.cli, &config).await?;
    let before = provider_requests(&ground, &refs)?;
    recorder.start()?;
    let began = Instant::now();
    let applied = all.apply().await;
    let apply_time = began.elapsed();
    recorder.stop();
    let applied_kb = ground_rss_kb(&ground)?;
    let after_apply = provider_requests(&ground, &refs)?;
    applied.context("applying the hub")?;
    let destroyed = all.destroy().await.context("destroying the hub")?;
    let after_destroy = provider_requests(&ground, &refs)?;

    report.add("hub", "one peering (hub ↔ c01): apply", secs(single.duration), "", None);
    report.add(
        "hub",
        format!("{consumers} peerings in one configuration: apply"),
        format!("{} ({:.1}× one peering)", secs(apply_time), apply_time.as_secs_f64() / single.duration.as_secs_f64()),
        "",
        None,
    );
    report.add("hub", format!("{consumers} peerings: destroy"), secs(destroyed.duration), "", None);
    if let Some((text, max_kb)) = recorder.summary()? {
        report.add("hub", "peak RSS per provider process (hub apply)", text, "≤ 50 MB", Some(max_kb <= 50 * 1024));
    }
    report.add(
        "hub",
        "API requests per peering (hub apply / destroy, audit logs)",
        format!(
            "{:.0} / {:.0}",
            after_apply.saturating_sub(before) as f64 / consumers as f64,
            after_destroy.saturating_sub(after_apply) as f64 / consumers as f64
        ),
        "",
        None,
    );
    report.add(
        "hub",
        "ground RSS, all control planes + simulator (idle → after apply)",
        format!("{:.1} GiB → {:.1} GiB", gib(idle_kb), gib(applied_kb)),
        "",
        None,
    );
    Ok(())
}

/// Sum of the RSS of every process the ground started.
pub fn ground_rss_kb(ground: &Ground) -> Result<u64> {
    let records = Ground::recorded_processes(ground.dir())?;
    Ok(records.iter().filter(|r| process::is_running(r)).filter_map(|r| vm_rss_kb(r.pid)).sum())
}

fn vm_rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.split_whitespace().next()?.parse().ok()
}

fn meminfo(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines().find_map(|l| l.strip_prefix(field))?.split_whitespace().next()?.parse().ok()
}

fn gib(kb: u64) -> f64 {
    kb as f64 / 1024.0 / 1024.0
}
