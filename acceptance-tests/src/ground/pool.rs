//! Grounds handed from one test binary to the next: the test command's pool (`$LIQO_GROUND_POOL`, set by
//! `scripts/run-tests.py` for the real-Liqo lane).
//!
//! Why: the test command is bound by the CPU of its two cores, and a milan + rome real-Liqo ground costs about 15
//! CPU-seconds to start; most real-Liqo binaries start one for [`Ground::shared`] and another per extra client.
//! A ground whose tests destroyed what they made is, for the next binary, the ground it would have started.
//!
//! How, in the pool directory: `grounds/<id>/` are ground directories; `ready/<id>` marks a ground free to take;
//! `taken/<id>.<pid>` marks the ground process `<pid>` took or started. A binary takes a ready ground by renaming
//! its mark (atomic: one binary wins), else starts one detached in `grounds/` (its mark written first, so that
//! the runner stops whatever a failed start left). When the binary has ended, the runner runs `liqo-ground reuse`
//! on each ground it held ([`make_reusable`]): a ground back to its [baseline](record_baseline) is marked ready
//! again, any other is stopped. One binary at a time uses a ground, so binaries still never see each other's objects.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use kube::api::{Api, DeleteParams};

use super::{Ground, Lifetime, LiqoMode, MILAN, Options, ROME, once_more_if_not_started, process};
use liqo_schema::liqo::ForeignCluster;

use crate::inventory;
use crate::observe::eventually;

/// What a ground is compared on, per cluster: (group, version, kind, plural, only in this namespace). Objects a
/// test makes and does not remove (its namespaces, a Liqo object, a ForeignCluster, a peer's IPAM Network, a CRD,
/// a webhook, RBAC) would be seen by the next binary; the Liqo objects of [`inventory`] are compared too.
const COMPARED: &[(&str, &str, &str, &str, Option<&str>)] = &[
    ("", "v1", "Namespace", "namespaces", None),
    ("", "v1", "Node", "nodes", None),
    ("", "v1", "Secret", "secrets", Some("liqo")),
    ("core.liqo.io", "v1beta1", "ForeignCluster", "foreignclusters", None),
    ("ipam.liqo.io", "v1alpha1", "Network", "networks", None),
    ("ipam.liqo.io", "v1alpha1", "IP", "ips", None),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", None),
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", None),
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", None),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", None),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", None),
];
const BASELINE_FILE: &str = "pool-baseline.txt";

/// The pool directory, when the test command runs this binary with one.
fn pool() -> Option<PathBuf> {
    std::env::var_os("LIQO_GROUND_POOL").map(PathBuf::from)
}

/// A milan + rome ground of `liqo`'s kind: with real Liqo, a ready one from the pool, else one started for this
/// process (into the pool when there is one); any other kind, or without a pool, attached to this process as
/// [`Ground::start_with`] does.
pub async fn milan_rome(liqo: LiqoMode) -> Result<Ground> {
    let pool = pool().filter(|_| matches!(liqo, LiqoMode::Real { .. }));
    let Some(pool) = pool else {
        return Ground::start_with(&[MILAN, ROME], Options { liqo, ..Options::default() }).await;
    };
    if let Some(dir) = take(&pool)? {
        return Ground::attach(&dir, &liqo, "handed over by the test command's pool");
    }
    static STARTED: AtomicUsize = AtomicUsize::new(0);
    let mut ground = once_more_if_not_started(|| async {
        let id = format!("{}-{}", std::process::id(), STARTED.fetch_add(1, Ordering::Relaxed));
        let mark = pool.join("taken").join(format!("{id}.{}", std::process::id()));
        std::fs::write(&mark, "").with_context(|| format!("writing {}", mark.display()))?;
        let dir = pool.join("grounds").join(&id);
        let options =
            Options { dir: Some(dir), lifetime: Lifetime::Detached, liqo: liqo.clone(), ..Options::default() };
        Ground::start_with(&[MILAN, ROME], options).await
    })
    .await?;
    record_baseline(&ground).await?;
    // Its processes outlive this process: the runner checks the ground and hands it on, or stops it.
    ground.processes.get_mut().expect("process list").clear();
    Ok(ground)
}

/// Takes a ready ground of the pool, if any: its directory.
fn take(pool: &Path) -> Result<Option<PathBuf>> {
    let ready = pool.join("ready");
    let entries = std::fs::read_dir(&ready).with_context(|| format!("reading {}", ready.display()))?;
    for entry in entries.flatten() {
        let id = entry.file_name().to_string_lossy().into_owned();
        let mark = pool.join("taken").join(format!("{id}.{}", std::process::id()));
        // Another binary may take the same ground at the same moment: the rename succeeds for one of them.
        if std::fs::rename(entry.path(), &mark).is_ok() {
            return Ok(Some(pool.join("grounds").join(id)));
        }
    }
    Ok(None)
}

/// What the ground holds now, one line per object (`cluster kind namespace/name`), sorted.
async fn snapshot(dir: &Path) -> Result<BTreeSet<String>> {
    let mut lines = BTreeSet::new();
    for cluster in Ground::recorded_clusters(dir)? {
        let client = super::kubeconfig::client(&cluster.kubeconfig).await?;
        for (group, version, kind, plural, namespace) in COMPARED {
            for (name, _) in
                inventory::objects(&cluster.name, &client, [group, version, kind, plural], *namespace, None).await?
            {
                lines.insert(format!("{} {kind} {name}", cluster.name));
            }
        }
        for row in inventory::list(&cluster.name, &client).await? {
            lines.insert(format!("{} {} {}", row.cluster, row.kind, row.name));
        }
    }
    Ok(lines)
}

/// Records what a ground holds right after its start, for [`make_reusable`] (`ground up` records it too, so that
/// `ground reuse` tells what a test left on a ground of the inner loop).
pub async fn record_baseline(ground: &Ground) -> Result<()> {
    let lines: Vec<String> = snapshot(ground.dir()).await?.into_iter().collect();
    let path = ground.dir().join(BASELINE_FILE);
    std::fs::write(&path, lines.join("\n")).with_context(|| format!("writing {}", path.display()))
}

/// Objects Liqo makes at a cluster's first peering and keeps for the cluster's life (on every real cluster that
/// has peered once): the IPAM's addresses of the API server and its proxy as peers see them, and the cluster's own
/// authentication key pair. A ground that has them is, for the next binary, a cluster that peered before.
const KEPT_BY_LIQO: &[&str] = &["IP liqo/api-server", "IP liqo/api-server-proxy", "Secret liqo/authentication-keys"];

/// Makes the pool ground in `dir` ready for the next binary, or says why it cannot be: a process of it that ended,
/// or an object gone or added since its start (`-`/`+` lines). Only what Liqo keeps by design after an unpeer is
/// tolerated: the peer's ForeignCluster, which Liqo keeps with every module disabled (deleted here once nothing
/// else of the peering is left, as on a ground that never had the peer), and [`KEPT_BY_LIQO`]. Empty when the
/// ground can be handed on.
pub async fn make_reusable(dir: &Path) -> Result<Vec<String>> {
    let ended: Vec<String> = Ground::recorded_processes(dir)?
        .iter()
        .filter(|record| !process::is_running(record))
        .map(|record| format!("process {} (pid {}) has ended", record.name, record.pid))
        .collect();
    if !ended.is_empty() {
        return Ok(ended);
    }
    let path = dir.join(BASELINE_FILE);
    let baseline: BTreeSet<String> = std::fs::read_to_string(&path)
        .with_context(|| format!("reading {} (a ground the pool did not start?)", path.display()))?
        .lines()
        .map(str::to_owned)
        .collect();
    let changes = |now: &BTreeSet<String>| -> (Vec<String>, Vec<(String, String)>) {
        let mut why: Vec<String> = baseline.difference(now).map(|line| format!("- {line}")).collect();
        let mut foreign = Vec::new();
        for line in now.difference(&baseline) {
            let (cluster, object) = line.split_once(' ').unwrap_or((line, ""));
            match object.strip_prefix("ForeignCluster ") {
                Some(name) => foreign.push((cluster.to_owned(), name.to_owned())),
                None if KEPT_BY_LIQO.contains(&object) => {}
                None => why.push(format!("+ {line}")),
            }
        }
        (why, foreign)
    };
    let (why, foreign) = changes(&snapshot(dir).await?);
    if !why.is_empty() {
        return Ok(why);
    }
    let clusters = Ground::recorded_clusters(dir)?;
    for (cluster, name) in &foreign {
        let kubeconfig = &clusters.iter().find(|c| &c.name == cluster).context("a recorded cluster")?.kubeconfig;
        let api: Api<ForeignCluster> = Api::all(super::kubeconfig::client(kubeconfig).await?);
        api.delete(name, &DeleteParams::default()).await.with_context(|| format!("{cluster}: deleting {name}"))?;
        eventually(Duration::from_secs(30), &format!("{cluster}: ForeignCluster {name} gone"), || async {
            Ok(api.get_opt(name).await?.is_none().then_some(()))
        })
        .await?;
    }
    // Nothing may have come back (Liqo makes a ForeignCluster again for any object that names the peer).
    let (mut why, foreign) = changes(&snapshot(dir).await?);
    why.extend(foreign.iter().map(|(cluster, name)| format!("+ {cluster} ForeignCluster {name} (made again)")));
    Ok(why)
}
