//! `real-liqoctl`: the same peering made by Liqo's own CLI and by this provider, on the real-Liqo ground, one after
//! the other in each round: `liqoctl peer` + `liqoctl offload namespace` (and `liqoctl unoffload namespace` +
//! `liqoctl unpeer`) against `terraform apply` (and `destroy`) of the configuration of `examples/peering` (the
//! module with one offloaded namespace). Wall time, API requests to each cluster (audit logs: both clients use the
//! provider kubeconfig's user) and CPU time of the client side (the CLI and its provider processes; liqoctl), and
//! the objects the two leave on the clusters, compared one by one in the first round.
use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use liqo_acceptance::ground::{ClientRun, Ground, MILAN, ROME, audit};
use liqo_acceptance::inventory;
use liqo_acceptance::observe::eventually;
use liqo_acceptance::tf::Workdir;
use serde_json::Value;

use super::manifest::GATEWAY_NODE_PORT;
use super::peering::{OFFLOAD_NAMESPACE, offload_config};
use super::{Args, Report, list_secs, median, secs};

const GROUP: &str = "real vs liqoctl";
const CLUSTERS: [&str; 2] = [MILAN, ROME];

/// One client's figures over the rounds.
#[derive(Default)]
struct Side {
    up: Vec<ClientRun>,
    down: Vec<ClientRun>,
    /// API requests of the first round's peering and teardown, per cluster of [`CLUSTERS`].
    requests: Option<([usize; 2], [usize; 2])>,
}

impl Side {
    fn walls(runs: &[ClientRun]) -> Vec<Duration> {
        runs.iter().map(|r| r.wall).collect()
    }
    fn cpus(runs: &[ClientRun]) -> Vec<Duration> {
        runs.iter().map(|r| r.cpu).collect()
    }
}

/// Requests the provider kubeconfig's user made to each cluster so far.
fn requests(ground: &Ground) -> Result<[usize; 2]> {
    let mut counts = [0; 2];
    for (count, name) in counts.iter_mut().zip(CLUSTERS) {
        *count = audit::read(&ground.audit_log(name))?.iter().filter(|e| e.user == audit::PROVIDER_USER).count();
    }
    Ok(counts)
}

fn since(before: [usize; 2], after: [usize; 2]) -> [usize; 2] {
    [after[0].saturating_sub(before[0]), after[1].saturating_sub(before[1])]
}

/// What each client wrote, on both clusters.
async fn written(ground: &Ground) -> Result<BTreeMap<(String, String, String), Value>> {
    let mut all = BTreeMap::new();
    for cluster in CLUSTERS {
        for ((kind, name), object) in inventory::written(cluster, &ground.client(cluster).await?).await? {
            all.insert((cluster.to_string(), kind, name), object);
        }
    }
    Ok(all)
}

/// Waits (untimed) until no namespace of the peering is left on either cluster, so that each side starts from the
/// same clusters: namespace deletion goes on after both clients return.
async fn tenant_namespaces_gone(ground: &Ground) -> Result<()> {
    for cluster in CLUSTERS {
        let namespaces: Api<Namespace> = Api::all(ground.client(cluster).await?);
        eventually(Duration::from_secs(180), "the peering's namespaces to be gone", || async {
            let left = namespaces.list(&Default::default()).await?.items.into_iter().any(|ns| {
                let name = ns.metadata.name.unwrap_or_default();
                name.starts_with("liqo-tenant-") || name == OFFLOAD_NAMESPACE
            });
            Ok((!left).then_some(()))
        })
        .await
        .with_context(|| format!("on {cluster}"))?;
    }
    Ok(())
}

pub async fn versus_liqoctl(args: &Args, ground: &Ground, report: &mut Report) -> Result<()> {
    let work = Workdir::new(args.cli, &offload_config(ground)).await?;
    let kubeconfig = |name| ground.provider_kubeconfig(name).display().to_string();
    let (rome, milan) = (kubeconfig(ROME), kubeconfig(MILAN));
    let (pods, port) = ("110".to_string(), GATEWAY_NODE_PORT.to_string());
    // `liqoctl peer` as the module peers: the provider's gateway behind a NodePort, the same resources.
    let peer = [
        "peer",
        "--kubeconfig",
        &rome,
        "--remote-kubeconfig",
        &milan,
        "--gw-server-service-type",
        "NodePort",
        "--gw-server-service-nodeport",
        &port,
        "--cpu",
        "4",
        "--memory",
        "8Gi",
        "--pods",
        &pods,
        "--timeout",
        "300s",
    ];
    let offload = ["offload", "namespace", OFFLOAD_NAMESPACE, "--kubeconfig", &rome, "--timeout", "120s"];
    // unoffload asks for a confirmation, which a closed stdin never gives.
    let unoffload =
        ["unoffload", "namespace", OFFLOAD_NAMESPACE, "--kubeconfig", &rome, "--timeout", "120s", "--skip-confirm"];
    // Deleting the tenant namespaces, as this provider's destroy does (liqo_generate's).
    let unpeer =
        ["unpeer", "--kubeconfig", &rome, "--remote-kubeconfig", &milan, "--delete-namespaces", "--timeout", "300s"];
    let namespaces: Api<Namespace> = Api::all(ground.client(ROME).await?);

    let (mut ours, mut theirs) = (Side::default(), Side::default());
    let (mut ours_wrote, mut theirs_wrote) = (BTreeMap::new(), BTreeMap::new());
    for round in 0..args.peering_runs {
        let before = requests(ground)?;
        let applied = work.apply_with(&["-json"]).await.context("terraform apply")?;
        let after_apply = requests(ground)?;
        if round == 0 {
            ours_wrote = written(ground).await?;
        }
        let destroyed = work.destroy_with(&["-json"]).await.context("terraform destroy")?;
        let after_destroy = requests(ground)?;
        let client = |run: &liqo_acceptance::tf::Run| -> Result<ClientRun> {
            Ok(ClientRun { wall: run.duration, cpu: run.cpu.context("the CLI's CPU time was not measured")? })
        };
        ours.up.push(client(&applied)?);
        ours.down.push(client(&destroyed)?);
        if round == 0 {
            ours.requests = Some((since(before, after_apply), since(after_apply, after_destroy)));
        }
        tenant_namespaces_gone(ground).await?;

        // The namespace to offload is the user's with liqoctl (the module creates it): made and removed by the
        // bench with its own user, outside the timed commands.
        let ns = Namespace {
            metadata: ObjectMeta { name: Some(OFFLOAD_NAMESPACE.into()), ..Default::default() },
            ..Default::default()
        };
        namespaces.create(&PostParams::default(), &ns).await.context("creating the namespace to offload")?;
        let before = requests(ground)?;
        let peered = ground.liqoctl(&peer).await?;
        let offloaded = ground.liqoctl(&offload).await?;
        let after_up = requests(ground)?;
        if round == 0 {
            theirs_wrote = written(ground).await?;
        }
        let unoffloaded = ground.liqoctl(&unoffload).await?;
        let unpeered = ground.liqoctl(&unpeer).await?;
        let after_down = requests(ground)?;
        let sum = |a: ClientRun, b: ClientRun| ClientRun { wall: a.wall + b.wall, cpu: a.cpu + b.cpu };
        theirs.up.push(sum(peered, offloaded));
        theirs.down.push(sum(unoffloaded, unpeered));
        if round == 0 {
            theirs.requests = Some((since(before, after_up), since(after_up, after_down)));
        }
        namespaces.delete(OFFLOAD_NAMESPACE, &DeleteParams::default()).await?;
        tenant_namespaces_gone(ground).await?;
    }

    let n = args.peering_runs;
    for (who, side) in [("liqo", &ours), ("liqoctl", &theirs)] {
        let (up, down) = (Side::walls(&side.up), Side::walls(&side.down));
        report.add(GROUP, format!("{who}: peering (+ offload), median of {n}"), secs(median(&up)), "", None);
        report.add(GROUP, format!("{who}: teardown, median of {n}"), secs(median(&down)), "", None);
        let cpu = |runs: &[ClientRun]| secs(median(&Side::cpus(runs)));
        report.add(
            GROUP,
            format!("{who}: client CPU, peering / teardown"),
            format!("{} / {}", cpu(&side.up), cpu(&side.down)),
            "",
            None,
        );
        if let Some((up, down)) = side.requests {
            report.add(
                GROUP,
                format!("{who}: API requests (milan + rome), peering / teardown"),
                format!("{} + {} / {} + {}", up[0], up[1], down[0], down[1]),
                "",
                None,
            );
        }
        report.notes.push(format!("{GROUP}: {who} runs (s): up {}; down {}", list_secs(&up), list_secs(&down)));
    }
    let ratio = |a: &[ClientRun], b: &[ClientRun], f: fn(&[ClientRun]) -> Vec<Duration>| {
        median(&f(a)).as_secs_f64() / median(&f(b)).as_secs_f64().max(1e-9)
    };
    let cycle = |s: &Side| -> Vec<ClientRun> {
        s.up.iter().zip(&s.down).map(|(u, d)| ClientRun { wall: u.wall + d.wall, cpu: u.cpu + d.cpu }).collect()
    };
    let (ours_cycle, theirs_cycle) = (cycle(&ours), cycle(&theirs));
    report.add(
        GROUP,
        "liqo ÷ liqoctl, wall, up + down",
        format!("{:.2}×", ratio(&ours_cycle, &theirs_cycle, Side::walls)),
        "",
        None,
    );
    report.add(
        GROUP,
        "liqo ÷ liqoctl, wall, up only",
        format!("{:.2}×", ratio(&ours.up, &theirs.up, Side::walls)),
        "",
        None,
    );
    report.add(
        GROUP,
        "liqo ÷ liqoctl, client CPU, up + down",
        format!("{:.2}×", ratio(&ours_cycle, &theirs_cycle, Side::cpus)),
        "",
        None,
    );
    if let (Some((ou, od)), Some((tu, td))) = (ours.requests, theirs.requests) {
        let total = |a: [usize; 2], b: [usize; 2]| (a[0] + a[1] + b[0] + b[1]) as f64;
        report.add(
            GROUP,
            "liqo ÷ liqoctl, API requests, up + down",
            format!("{:.2}×", total(ou, od) / total(tu, td).max(1.0)),
            "",
            None,
        );
    }
    for line in compare(&ours_wrote, &theirs_wrote) {
        report.notes.push(format!("{GROUP}: {line}"));
    }
    ensure!(!ours_wrote.is_empty() && !theirs_wrote.is_empty(), "a side wrote no Liqo object");
    Ok(())
}

/// The objects each side left on the clusters, one by one: those only one of them made, and for those both made
/// (same cluster, kind and name) the fields whose values differ.
fn compare(
    ours: &BTreeMap<(String, String, String), Value>,
    theirs: &BTreeMap<(String, String, String), Value>,
) -> Vec<String> {
    let label = |(cluster, kind, name): &(String, String, String)| format!("{cluster} {kind} {name}");
    let mut lines = Vec::new();
    let only = |a: &BTreeMap<_, Value>, b: &BTreeMap<_, Value>| -> Vec<String> {
        a.keys().filter(|k| !b.contains_key(*k)).map(label).collect()
    };
    let (only_ours, only_theirs) = (only(ours, theirs), only(theirs, ours));
    let both: Vec<_> = ours.keys().filter(|k| theirs.contains_key(*k)).collect();
    lines.push(format!(
        "objects: {} made by both, {} by this provider only, {} by liqoctl only",
        both.len(),
        only_ours.len(),
        only_theirs.len()
    ));
    if !only_ours.is_empty() {
        lines.push(format!("only this provider's: {}", only_ours.join(", ")));
    }
    if !only_theirs.is_empty() {
        lines.push(format!("only liqoctl's: {}", only_theirs.join(", ")));
    }
    for key in both {
        let mut differ = Vec::new();
        leaf_differences(&ours[key], &theirs[key], String::new(), &mut differ);
        if !differ.is_empty() {
            lines.push(format!("{} differs in {}", label(key), differ.join(", ")));
        }
    }
    lines
}

/// Paths (`spec.foo.bar`) at which `a` and `b` hold different values, one present where the other is not included.
fn leaf_differences(a: &Value, b: &Value, path: String, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let at = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                leaf_differences(x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null), at, out);
            }
        }
        _ if a != b => out.push(format!("{path} ({} vs {})", short(a), short(b))),
        _ => {}
    }
}

/// A value as the comparison prints it: short, secrets and keys elided by length.
fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 48 { format!("{}…", text.chars().take(45).collect::<String>()) } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_comparison_names_what_only_one_side_made_and_the_fields_that_differ() {
        let key = |kind: &str, name: &str| ("milan".to_string(), kind.to_string(), name.to_string());
        let ours = BTreeMap::from([
            (key("Tenant", "liqo-tenant-rome/rome"), serde_json::json!({"spec": {"a": 1, "b": {"c": "x"}}})),
            (key("Secret", "s"), serde_json::json!({"labels": {}})),
        ]);
        let theirs = BTreeMap::from([
            (key("Tenant", "liqo-tenant-rome/rome"), serde_json::json!({"spec": {"a": 1, "b": {"c": "y"}, "d": true}})),
            (key("Nonce", "n"), serde_json::json!({})),
        ]);
        let lines = compare(&ours, &theirs);
        assert_eq!(lines[0], "objects: 1 made by both, 1 by this provider only, 1 by liqoctl only");
        assert_eq!(lines[1], "only this provider's: milan Secret s");
        assert_eq!(lines[2], "only liqoctl's: milan Nonce n");
        assert_eq!(
            lines[3],
            "milan Tenant liqo-tenant-rome/rome differs in spec.b.c (\"x\" vs \"y\"), spec.d (null vs true)"
        );
    }
}
