//! Liqo's NamespaceOffloading controller (consumer side) and, standing in for the NamespaceMap round trip, the
//! provider's remote-namespace creation.
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::{Namespace, Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::ListParams;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use liqo_schema::liqo::labels::{self, REMOTE_CLUSTER_ID};
use liqo_schema::liqo::{
    LiqoCondition, MAPPING_ENFORCE_SAME_NAME, MAPPING_SELECTED_NAME, NamespaceOffloading, NamespaceOffloadingStatus,
    OFFLOADING_PHASE_ALL_FAILED, OFFLOADING_PHASE_IN_PROGRESS, OFFLOADING_PHASE_NO_CLUSTER_SELECTED,
    OFFLOADING_PHASE_READY, OFFLOADING_PHASE_SOME_FAILED, OFFLOADING_PHASE_TERMINATING, POD_OFFLOADING_LOCAL,
    REMOTE_NAMESPACE_OFFLOADING_REQUIRED, REMOTE_NAMESPACE_READY, upsert_liqo_condition,
};
use serde_json::json;

use super::context::{Ctx, Topic};
use super::ops::{self, annotation, describe, has_finalizer, is_deleting, label};
use super::supervisor::drive;

/// Bookkeeping on remote namespaces the simulator created: the consumer (label, for listing) and the origin
/// namespace (annotation). Liqo tracks the same in its NamespaceMaps.
const OFFLOADED_FROM: &str = "liqo-simulator/offloaded-from";
const ORIGIN_NAMESPACE: &str = "liqo-simulator/origin-namespace";
const RETRY: Duration = Duration::from_millis(200);

pub async fn namespace_offloadings(ctx: Arc<Ctx>) {
    let controller =
        Controller::new(Api::<NamespaceOffloading>::all(ctx.cluster.client.clone()), watcher::Config::default())
            .reconcile_all_on(ctx.cluster.subscribe(Topic::Offloading));
    drive(ctx, controller, reconcile_offloading).await
}

/// The outcome for one selected provider.
struct RemoteOutcome {
    ready: bool,
    reason: &'static str,
    message: String,
}

async fn reconcile_offloading(nso: Arc<NamespaceOffloading>, ctx: Arc<Ctx>) -> Result<Action> {
    let cluster = &ctx.cluster;
    let ns = nso.namespace().unwrap_or_default();
    let api: Api<NamespaceOffloading> = Api::namespaced(cluster.client.clone(), &ns);
    let finalizer = labels::NAMESPACE_OFFLOADING_FINALIZER;
    if nso.name_any() != labels::NAMESPACE_OFFLOADING_NAME {
        let note = format!(
            "a NamespaceOffloading must be named {:?}; Liqo's webhook would reject this one",
            labels::NAMESPACE_OFFLOADING_NAME
        );
        cluster.events.warning(&nso.object_ref(&()), "InvalidName", &note).await;
        return Ok(Action::await_change());
    }
    let remote_name = remote_namespace_name(&nso, &ns, &cluster.id);

    if is_deleting(&*nso) {
        if !has_finalizer(&*nso, finalizer) {
            return Ok(Action::await_change());
        }
        let nso = write_status(&ctx, &api, &nso, &remote_name, OFFLOADING_PHASE_TERMINATING, BTreeMap::new()).await?;
        if !delete_remote_namespaces(&ctx, &ns, &BTreeSet::new()).await? {
            return Ok(Action::requeue(RETRY));
        }
        set_scheduling_label(&ctx, &ns, false).await?;
        ops::remove_finalizer(&api, &nso, finalizer).await?;
        log_line!(cluster.name, "{}: remote namespaces gone; released finalizer {finalizer}", describe(&nso));
        return Ok(Action::await_change());
    }
    let nso = ops::add_finalizer(&api, &*nso, finalizer).await?;
    let strategy =
        nso.spec.pod_offloading_strategy.as_deref().unwrap_or(liqo_schema::liqo::POD_OFFLOADING_LOCAL_AND_REMOTE);
    set_scheduling_label(&ctx, &ns, strategy != POD_OFFLOADING_LOCAL).await?;

    let providers = selected_providers(&ctx, nso.spec.cluster_selector.as_ref()).await?;
    let mut outcomes = BTreeMap::new();
    for provider in &providers {
        outcomes.insert(provider.clone(), ensure_remote_namespace(&ctx, provider, &ns, &remote_name).await?);
    }
    let deselected_gone = delete_remote_namespaces(&ctx, &ns, &providers).await?;

    let ready = outcomes.values().filter(|o| o.ready).count();
    let failed = outcomes.values().filter(|o| !o.ready && o.reason != "Creating").count();
    let phase = match () {
        _ if outcomes.is_empty() => OFFLOADING_PHASE_NO_CLUSTER_SELECTED,
        _ if ready == outcomes.len() => OFFLOADING_PHASE_READY,
        _ if failed == outcomes.len() => OFFLOADING_PHASE_ALL_FAILED,
        _ if failed > 0 => OFFLOADING_PHASE_SOME_FAILED,
        _ => OFFLOADING_PHASE_IN_PROGRESS,
    };
    write_status(&ctx, &api, &nso, &remote_name, phase, outcomes).await?;
    Ok(if phase == OFFLOADING_PHASE_IN_PROGRESS || !deselected_gone {
        Action::requeue(RETRY)
    } else {
        Action::await_change()
    })
}

/// Liqo's naming: DefaultName ⇒ `<ns>-<local cluster ID>`, EnforceSameName ⇒ `<ns>`, SelectedName ⇒ the chosen one.
fn remote_namespace_name(nso: &NamespaceOffloading, ns: &str, cluster_id: &str) -> String {
    match nso.spec.namespace_mapping_strategy.as_deref() {
        Some(MAPPING_ENFORCE_SAME_NAME) => ns.to_owned(),
        Some(MAPPING_SELECTED_NAME) => nso.spec.remote_namespace_name.clone().unwrap_or_default(),
        _ => format!("{ns}-{cluster_id}"),
    }
}

/// Provider cluster IDs of the virtual Nodes the selector matches (no terms = every virtual node).
async fn selected_providers(ctx: &Ctx, selector: Option<&NodeSelector>) -> Result<BTreeSet<String>> {
    let api: Api<Node> = Api::all(ctx.cluster.client.clone());
    let virtual_nodes = format!("{}={}", labels::NODE_TYPE, labels::NODE_TYPE_VIRTUAL_NODE);
    let nodes = api.list(&ListParams::default().labels(&virtual_nodes)).await.context("listing virtual Nodes")?;
    Ok(nodes
        .items
        .iter()
        .filter(|node| selector.is_none_or(|s| node_matches(s, node)))
        .filter_map(|node| label(node, REMOTE_CLUSTER_ID).map(str::to_owned))
        .collect())
}

/// Kubernetes NodeSelector semantics: terms are ORed, requirements within a term ANDed; no terms matches all
/// (Liqo's rule for cluster selectors).
fn node_matches(selector: &NodeSelector, node: &Node) -> bool {
    if selector.node_selector_terms.is_empty() {
        return true;
    }
    let term_matches = |term: &NodeSelectorTerm| {
        let exprs = term.match_expressions.iter().flatten();
        let fields = term.match_fields.iter().flatten();
        let has_requirements = exprs.clone().next().is_some() || fields.clone().next().is_some();
        has_requirements
            && exprs.clone().all(|r| requirement_matches(r, node.labels().get(&r.key).map(String::as_str)))
            && fields.clone().all(|r| {
                requirement_matches(r, (r.key == "metadata.name").then_some(node.metadata.name.as_deref()).flatten())
            })
    };
    selector.node_selector_terms.iter().any(term_matches)
}

fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.clone().unwrap_or_default();
    let number = |v: &str| v.parse::<i64>().ok();
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| values.iter().all(|x| x != v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => matches!((value.and_then(number), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a > b),
        "Lt" => matches!((value.and_then(number), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a < b),
        _ => false,
    }
}

/// Creates the remote namespace on `provider` (admin credentials of the provider, where Liqo's provider-side
/// controller would act on the replicated NamespaceMap).
async fn ensure_remote_namespace(ctx: &Ctx, provider: &str, ns: &str, remote_name: &str) -> Result<RemoteOutcome> {
    let Some(remote) = ctx.world.by_id(provider) else {
        let message = format!("provider {provider} is not part of the ground");
        return Ok(RemoteOutcome { ready: false, reason: "ClusterUnreachable", message });
    };
    if remote_name.is_empty() {
        let message = "SelectedName needs spec.remoteNamespaceName".to_owned();
        return Ok(RemoteOutcome { ready: false, reason: "CreationFailed", message });
    }
    let api: Api<Namespace> = Api::all(remote.client.clone());
    let origin = ctx.cluster.id.as_str();
    let namespace = match api
        .get_opt(remote_name)
        .await
        .with_context(|| format!("reading Namespace {remote_name} on {provider}"))?
    {
        Some(existing) => existing,
        None => {
            let mut annotations = ops::simulated_annotations();
            annotations.insert(ORIGIN_NAMESPACE.into(), ns.to_owned());
            let desired = Namespace {
                metadata: ObjectMeta {
                    name: Some(remote_name.to_owned()),
                    labels: Some(BTreeMap::from([(OFFLOADED_FROM.to_owned(), origin.to_owned())])),
                    annotations: Some(annotations),
                    ..Default::default()
                },
                ..Default::default()
            };
            let created = ops::create_or_get(&api, &desired).await?;
            log_line!(ctx.cluster.name, "Namespace {remote_name} created on {provider} for namespace {ns}");
            created
        }
    };
    let ours =
        label(&namespace, OFFLOADED_FROM) == Some(origin) && annotation(&namespace, ORIGIN_NAMESPACE) == Some(ns);
    Ok(if !ours {
        let message =
            format!("namespace {remote_name} already exists on {provider} and is not the offloaded copy of {ns}");
        RemoteOutcome { ready: false, reason: "CreationFailed", message }
    } else if is_deleting(&namespace) {
        let message = format!("namespace {remote_name} on {provider} is still terminating");
        RemoteOutcome { ready: false, reason: "Creating", message }
    } else {
        RemoteOutcome {
            ready: true,
            reason: "NamespaceCreated",
            message: format!("namespace {remote_name} exists on {provider}"),
        }
    })
}

/// Deletes the remote namespaces offloaded from `ns` on providers outside `keep`; `true` once all are gone.
async fn delete_remote_namespaces(ctx: &Ctx, ns: &str, keep: &BTreeSet<String>) -> Result<bool> {
    let mut all_gone = true;
    for remote in ctx.world.clusters().iter().filter(|c| !keep.contains(&c.id)) {
        let api: Api<Namespace> = Api::all(remote.client.clone());
        let mine = ListParams::default().labels(&format!("{OFFLOADED_FROM}={}", ctx.cluster.id));
        let list = api.list(&mine).await.with_context(|| format!("listing offloaded namespaces on {}", remote.id))?;
        for namespace in list.items.iter().filter(|n| annotation(*n, ORIGIN_NAMESPACE) == Some(ns)) {
            all_gone = false;
            if !is_deleting(namespace) {
                ops::delete_and_check(&api, &namespace.name_any()).await?;
                log_line!(
                    ctx.cluster.name,
                    "Namespace {} on {}: deleting (namespace {ns} no longer offloaded there)",
                    namespace.name_any(),
                    remote.id
                );
            }
        }
    }
    Ok(all_gone)
}

async fn set_scheduling_label(ctx: &Ctx, ns: &str, enabled: bool) -> Result<()> {
    let api: Api<Namespace> = Api::all(ctx.cluster.client.clone());
    let namespace = api.get(ns).await.with_context(|| format!("reading Namespace {ns}"))?;
    if (label(&namespace, labels::SCHEDULING_ENABLED) == Some(labels::TRUE)) == enabled {
        return Ok(());
    }
    let value = enabled.then_some(labels::TRUE);
    ops::merge_patch(&api, &namespace, json!({"metadata": {"labels": {labels::SCHEDULING_ENABLED: value}}})).await?;
    Ok(())
}

async fn write_status(
    ctx: &Ctx,
    api: &Api<NamespaceOffloading>,
    nso: &NamespaceOffloading,
    remote_name: &str,
    phase: &str,
    outcomes: BTreeMap<String, RemoteOutcome>,
) -> Result<NamespaceOffloading> {
    let previous = nso.status.as_ref().and_then(|s| s.remote_namespaces_conditions.clone()).unwrap_or_default();
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let conditions: BTreeMap<String, Vec<LiqoCondition>> = outcomes
        .into_iter()
        .map(|(provider, outcome)| {
            let mut list = previous.get(&provider).cloned().unwrap_or_default();
            upsert_liqo_condition(
                &mut list,
                LiqoCondition {
                    type_: REMOTE_NAMESPACE_OFFLOADING_REQUIRED.into(),
                    status: "True".into(),
                    reason: Some("ClusterSelected".into()),
                    message: Some("the cluster matches the cluster selector".into()),
                    last_transition_time: Some(now.clone()),
                },
            );
            upsert_liqo_condition(
                &mut list,
                LiqoCondition {
                    type_: REMOTE_NAMESPACE_READY.into(),
                    status: if outcome.ready { "True" } else { "False" }.into(),
                    reason: Some(outcome.reason.into()),
                    message: Some(outcome.message),
                    last_transition_time: Some(now.clone()),
                },
            );
            (provider, list)
        })
        .collect();
    let desired = NamespaceOffloadingStatus {
        remote_namespace_name: Some(remote_name.to_owned()),
        offloading_phase: Some(phase.to_owned()),
        remote_namespaces_conditions: (!conditions.is_empty()).then_some(conditions),
        observed_generation: nso.metadata.generation,
    };
    if ops::status_json(nso.status.as_ref()) == serde_json::to_value(&desired)? {
        return Ok(nso.clone());
    }
    let written = ops::apply_status(&ctx.cluster, api, nso, serde_json::to_value(&desired)?).await?;
    log_line!(ctx.cluster.name, "{}: phase {phase}, remote namespace {remote_name}", describe(nso));
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(labels: &[(&str, &str)]) -> Node {
        let mut node = Node::default();
        node.metadata.name = Some("n".into());
        node.metadata.labels = Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        node
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    fn selector(terms: Vec<Vec<NodeSelectorRequirement>>) -> NodeSelector {
        NodeSelector {
            node_selector_terms: terms
                .into_iter()
                .map(|e| NodeSelectorTerm { match_expressions: Some(e), match_fields: None })
                .collect(),
        }
    }

    #[test]
    fn selector_semantics() {
        let milan = node(&[(REMOTE_CLUSTER_ID, "milan"), ("region", "north")]);
        assert!(node_matches(&selector(vec![]), &milan), "no terms selects all");
        assert!(node_matches(&selector(vec![vec![expr("region", "In", &["north"])]]), &milan));
        assert!(!node_matches(&selector(vec![vec![expr("region", "NotIn", &["north"])]]), &milan));
        assert!(
            node_matches(
                &selector(vec![vec![expr("region", "In", &["south"])], vec![expr("region", "Exists", &[])]]),
                &milan
            ),
            "terms are ORed"
        );
        assert!(
            !node_matches(&selector(vec![vec![expr("region", "Exists", &[]), expr("zone", "Exists", &[])]]), &milan),
            "requirements are ANDed"
        );
        assert!(!node_matches(&selector(vec![vec![]]), &milan), "an empty term matches nothing");
    }

    #[test]
    fn remote_names_follow_the_mapping_strategy() {
        let mut nso = NamespaceOffloading::new("offloading", Default::default());
        assert_eq!(remote_namespace_name(&nso, "demo", "rome"), "demo-rome");
        nso.spec.namespace_mapping_strategy = Some(MAPPING_ENFORCE_SAME_NAME.into());
        assert_eq!(remote_namespace_name(&nso, "demo", "rome"), "demo");
        nso.spec.namespace_mapping_strategy = Some(MAPPING_SELECTED_NAME.into());
        nso.spec.remote_namespace_name = Some("elsewhere".into());
        assert_eq!(remote_namespace_name(&nso, "demo", "rome"), "elsewhere");
    }
}
