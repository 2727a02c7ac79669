//! What the acceptance tests read back after running a client: the state file, saved plans, plan output and
//! diagnostics, and polling for what Liqo or the simulator does asynchronously.
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::core::v1::{Namespace, Node};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams, PostParams};
use liqo_schema::liqo::ResourceSlice;
use serde_json::Value;

use crate::tf::{Plan, Run, Workdir};

/// Polls `check` every 200 ms until it returns `Some`, failing with `what` after `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<T>>>,
{
    until(timeout, Duration::from_millis(200), what, || {
        let looked = check();
        async move { Ok(looked.await?.map_or_else(|| Seen::NotYet(String::new()), Seen::Done)) }
    })
    .await
}

/// What one look found: done, with a value, or not yet, with what was seen (for the error if it stays so).
pub enum Seen<T> {
    Done(T),
    NotYet(String),
}

/// Polls `look` every `every` until it is done, failing after `timeout` with `what` and the last state seen: the
/// one polling loop of the tests.
pub async fn until<T, F, Fut>(timeout: Duration, every: Duration, what: &str, mut look: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Seen<T>>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let last = match look().await? {
            Seen::Done(value) => return Ok(value),
            Seen::NotYet(last) => last,
        };
        if Instant::now() > deadline {
            match last.is_empty() {
                true => bail!("{what} did not happen within {timeout:?}"),
                false => bail!("{what} did not happen within {timeout:?}; last seen: {last}"),
            }
        }
        tokio::time::sleep(every).await;
    }
}

/// The node's `Ready` condition is `True`.
pub fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Node `name` exists on the cluster and is Ready.
pub async fn node_ready_on(client: &kube::Client, name: &str) -> Result<bool> {
    Ok(Api::<Node>::all(client.clone()).get_opt(name).await?.is_some_and(|n| node_ready(&n)))
}

/// Liqo keeps a peering up on `consumer`: a virtual node is Ready and a ResourceSlice is Accepted (Authentication
/// and Resources; Liqo's crd-replicator used the identity Secret to replicate it), each within two minutes.
pub async fn peering_up(consumer: &kube::Client, what: &str) -> Result<()> {
    let nodes: Api<Node> = Api::all(consumer.clone());
    eventually(Duration::from_secs(120), &format!("{what}: a Ready virtual node"), || async {
        let virtual_nodes = nodes.list(&ListParams::default().labels("liqo.io/type=virtual-node")).await?;
        let ready = virtual_nodes.items.iter().any(node_ready);
        Ok(ready.then_some(()))
    })
    .await?;
    let slices: Api<ResourceSlice> = Api::all(consumer.clone());
    eventually(Duration::from_secs(120), &format!("{what}: the ResourceSlice Accepted"), || async {
        let accepted = slices
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .any(|s| s.status.as_ref().is_some_and(|status| status.is_accepted()));
        Ok(accepted.then_some(()))
    })
    .await
}

/// One managed resource instance (`type.name`) of the state file, read from the file so that no command prints
/// sensitive values such as a kubeconfig. `None` when the state does not hold it.
pub fn instance(work: &Workdir, address: &str) -> Result<Option<Value>> {
    let path = work.path().join("terraform.tfstate");
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?)?;
    let (kind, name) = address.split_once('.').context("address")?;
    Ok(state["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["type"] == kind && r["name"] == name && r["mode"] == "managed")
        .map(|r| r["instances"][0].clone()))
}

/// The attributes of one resource instance in the state file; an error when it is not there.
pub fn attributes(work: &Workdir, address: &str) -> Result<Value> {
    Ok(instance(work, address)?.with_context(|| format!("{address} is not in the state"))?["attributes"].clone())
}

/// The saved plan [`planned_change`] reads and [`apply_planned`] applies.
const SAVED_PLAN: &str = "change.tfplan";

/// The change planned for `address` (from a saved plan, as JSON: `actions`, `before`, `after`). The plan stays
/// saved for [`apply_planned`].
pub async fn planned_change(work: &Workdir, address: &str) -> Result<Value> {
    let out = format!("-out={SAVED_PLAN}");
    let plan = work.run(&["plan", &out, "-input=false", "-no-color"]).await?;
    ensure!(plan.success(), "{plan}");
    let show = work.run(&["show", "-json", "-no-color", SAVED_PLAN]).await?;
    ensure!(show.success(), "{show}");
    let doc: Value = serde_json::from_str(&show.stdout)?;
    doc["resource_changes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["address"] == address)
        .map(|c| c["change"].clone())
        .with_context(|| format!("the plan has no change for {address}"))
}

/// Applies the plan [`planned_change`] saved: what the test inspected is what Terraform does, as a user's
/// `plan -out` then `apply PLAN`, without a second refresh and plan of every resource.
pub async fn apply_planned(work: &Workdir) -> Result<Run> {
    work.apply_with(&[SAVED_PLAN]).await
}

/// What the plan command printed.
pub fn plan_text(plan: &Plan) -> &str {
    &plan.run().stdout
}

/// The plan's `Plan: …` line, or `no changes`.
pub fn summary(plan: &Plan) -> &str {
    plan_text(plan).lines().find(|l| l.starts_with("Plan:")).unwrap_or("no changes")
}

/// Creates the namespace `name` (plain, no labels).
pub async fn create_namespace(client: &kube::Client, name: &str) -> Result<()> {
    let namespace =
        Namespace { metadata: ObjectMeta { name: Some(name.into()), ..Default::default() }, ..Default::default() };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .with_context(|| format!("creating Namespace {name}"))?;
    Ok(())
}

/// Diagnostics as one line of text: Terraform frames and wraps them, which must not split a phrase.
pub fn flat(text: &str) -> String {
    text.replace('│', " ").split_whitespace().collect::<Vec<_>>().join(" ")
}
