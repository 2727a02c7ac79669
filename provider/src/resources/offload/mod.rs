//! `liqo_offload`: namespace offloading, on the **consumer** cluster.
//!
//! Owns the NamespaceOffloading `offloading` (the only name Liqo accepts) in `namespace`. The namespace is the
//! user's: this resource neither creates nor deletes it — unless `create_namespace = true`, which creates it when
//! missing, marked `app.kubernetes.io/managed-by=terraform-provider-liqo` (as liqo_generate marks the namespaces
//! it creates), and deletes on destroy only a namespace carrying that marker. An existing unmarked namespace is
//! used as it is and never deleted. The marker lives on the object so that import, and a re-creation after an
//! out-of-band deletion, know who made the namespace.
//!
//! Create/update waits for `status.observedGeneration` to reach the applied generation and for
//! `status.offloadingPhase` to be `Ready` (`NoClusterSelected` is accepted with a warning; `SomeFailed` and
//! `AllFailed` fail with the per-cluster conditions). Delete waits until Liqo has removed the remote namespaces
//! and released its finalizer (the object is gone), then deletes the namespace if this resource created it.
//!
//! Import ID: `<namespace>`.
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Namespace, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
use kube::api::{Api, ObjectMeta};
use liqo_schema::liqo::{
    MAPPING_DEFAULT_NAME, MAPPING_ENFORCE_SAME_NAME, MAPPING_SELECTED_NAME, NamespaceOffloading,
    NamespaceOffloadingSpec, OFFLOADING_PHASE_ALL_FAILED, OFFLOADING_PHASE_NO_CLUSTER_SELECTED, OFFLOADING_PHASE_READY,
    OFFLOADING_PHASE_SOME_FAILED, POD_OFFLOADING_LOCAL, POD_OFFLOADING_LOCAL_AND_REMOTE, POD_OFFLOADING_REMOTE, labels,
};
use liqo_schema::tf::{Attribute, AttributePath, Block, Diagnostic, Diagnostics, Nesting, Schema, Type, Value};

use super::lifecycle::{Deadline, Timeouts, timeouts_block};
use crate::cluster_api::ClusterApi;
use crate::errors::op_diags;
use crate::kube::{OpError, Verdict, created_by_provider};
use crate::protocol::{
    ApplyRequest, ApplyResponse, Ctx, ImportedResource, PlanRequest, PlanResponse, ReadResponse, Resource,
};
use crate::validate::{Validator, check_dns_label, check_qualified_name};

const TYPE_NAME: &str = "liqo_offload";

/// liqoctl allows 20 s to offload and 120 s to unoffload; remote namespace deletion can take longer when the
/// provider still runs offloaded pods, so every step gets a few minutes.
const DEFAULT_TIMEOUTS: Timeouts = Timeouts::uniform(Duration::from_secs(300));

const MAPPING_STRATEGIES: [&str; 3] = [MAPPING_DEFAULT_NAME, MAPPING_ENFORCE_SAME_NAME, MAPPING_SELECTED_NAME];
const POD_STRATEGIES: [&str; 3] = [POD_OFFLOADING_LOCAL_AND_REMOTE, POD_OFFLOADING_LOCAL, POD_OFFLOADING_REMOTE];
const OPERATORS: [&str; 6] = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];

/// Liqo's webhook rejects any change of these after creation.
const REPLACE_ON_CHANGE: [&str; 3] = ["namespace", "namespace_mapping_strategy", "remote_namespace_name"];

pub struct OffloadResource {
    cluster: Arc<ClusterApi>,
}

impl OffloadResource {
    pub fn new(cluster: Arc<ClusterApi>) -> OffloadResource {
        OffloadResource { cluster }
    }
}

/// `offload` as the protocol layer serves it.
pub fn resource(cluster: Arc<ClusterApi>) -> Arc<dyn Resource> {
    Arc::new(OffloadResource::new(cluster))
}

// -------------------------------------------------------------------------------------------------------------
// Schema
// -------------------------------------------------------------------------------------------------------------

fn schema() -> Schema {
    let expression = vec![
        Attribute::required("key", Type::String)
            .describe("Label key of the virtual nodes to match, e.g. `liqo.io/remote-cluster-id`."),
        Attribute::required("operator", Type::String)
            .describe("One of `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`."),
        Attribute::optional("values", Type::list(Type::String)).describe(
            "Label values: at least one for `In`/`NotIn`, none for `Exists`/`DoesNotExist`, exactly one integer \
             for `Gt`/`Lt`.",
        ),
    ];
    let term = vec![
        Attribute::nested("match_expressions", Nesting::List, expression)
            .with_required()
            .describe("Requirements on virtual node labels; all of them must match (AND)."),
    ];
    let attributes = vec![
        Attribute::computed("id", Type::String).describe("The namespace name; also the import ID."),
        Attribute::required("namespace", Type::String).describe(
            "Namespace to offload. It must exist (create it with `kubernetes_namespace`, `kubectl create namespace` \
             or `create_namespace = true`). Changing it replaces the resource.",
        ),
        Attribute::optional_computed("create_namespace", Type::Bool).describe(
            "Whether this resource creates `namespace` when it is missing and deletes it on destroy, with \
             everything in it (default `false`: the namespace is yours and is left alone). Meant for demos \
             without the kubernetes provider. Only a namespace this resource created (labelled \
             `app.kubernetes.io/managed-by=terraform-provider-liqo`) is ever deleted; an existing one is used as \
             it is. Setting it back to `false` releases the namespace (it stays).",
        ),
        Attribute::optional_computed("namespace_mapping_strategy", Type::String).describe(
            "How the remote namespace is named: `DefaultName` (default, `<namespace>-<this cluster's ID>`), \
             `EnforceSameName` (same name as `namespace`) or `SelectedName` (`remote_namespace_name`). Liqo makes \
             it immutable: changing it replaces the resource.",
        ),
        Attribute::optional_computed("remote_namespace_name", Type::String).describe(
            "Name of the namespace on the provider clusters. Choose it only with `namespace_mapping_strategy = \
             \"SelectedName\"` (required then); otherwise it is an output reported by Liqo, and a configuration \
             may only repeat the name Liqo reported (as OpenTofu's generated configuration of an imported \
             offloading does). Liqo makes it immutable: changing it replaces the resource.",
        ),
        Attribute::optional_computed("pod_offloading_strategy", Type::String).describe(
            "Where pods of the namespace may run: `LocalAndRemote` (default), `Local` or `Remote`. Updated in place; \
             Liqo warns that pods already running against a stricter setting keep running.",
        ),
        Attribute::nested("cluster_selector", Nesting::List, term).with_optional().describe(
            "Which virtual nodes (remote clusters) the namespace is offloaded to: a list of node selector terms, \
             any of which may match (OR). Omit it to offload to every virtual node. Updated in place.",
        ),
        Attribute::computed("offloading_phase", Type::String).describe(
            "Liqo's `status.offloadingPhase`: `Ready`, or `NoClusterSelected` when no virtual node matches \
             `cluster_selector`; refreshed on every read.",
        ),
    ];
    Schema {
        version: 0,
        block: Block::new(
            "Offloads a namespace of this (consumer) cluster to its peered provider clusters, by managing Liqo's \
             NamespaceOffloading `offloading` in it. Create it before the workloads that should run remotely: pods \
             created before the offloading exists stay Pending.",
            attributes,
        )
        .with_block(timeouts_block(DEFAULT_TIMEOUTS)),
    }
}

// -------------------------------------------------------------------------------------------------------------
// Validation
// -------------------------------------------------------------------------------------------------------------

fn validate(config: &Value) -> Diagnostics {
    let mut c = Validator::new(config);
    c.namespace("namespace");
    c.one_of("namespace_mapping_strategy", &MAPPING_STRATEGIES);
    c.one_of("pod_offloading_strategy", &POD_STRATEGIES);
    c.namespace("remote_namespace_name");

    let strategy = match config.get("namespace_mapping_strategy") {
        Value::Null => Some(MAPPING_DEFAULT_NAME),
        v => v.as_str(),
    };
    let remote = config.get("remote_namespace_name");
    match strategy {
        Some(MAPPING_SELECTED_NAME) if remote.is_null() => c.error(
            AttributePath::root("remote_namespace_name"),
            "Missing `remote_namespace_name` for the SelectedName strategy",
            "`namespace_mapping_strategy = \"SelectedName\"` names the remote namespace after \
             `remote_namespace_name`: set it, or choose `DefaultName` or `EnforceSameName`.",
        ),
        Some(s) if s != MAPPING_SELECTED_NAME && !remote.is_null() && !is_liqos_choice(s, config) => c.error(
            AttributePath::root("remote_namespace_name"),
            format!("`remote_namespace_name` cannot be set with the {s} strategy"),
            format!(
                "With `{s}` Liqo chooses the remote name (DefaultName: `<namespace>-<this cluster's ID>`, \
                 EnforceSameName: the namespace's own name) and reports it in `remote_namespace_name`. Remove the \
                 argument, or set `namespace_mapping_strategy = \"SelectedName\"`."
            ),
        ),
        _ => {}
    }

    for (i, term) in config.get("cluster_selector").elements().iter().enumerate() {
        let term_path = AttributePath::root("cluster_selector").index(i as i64).attr("match_expressions");
        let expressions = term.get("match_expressions");
        if expressions.is_null() || (matches!(expressions, Value::List(l) if l.is_empty())) {
            c.error(
                term_path.clone(),
                "Empty cluster selector term",
                "A term without match expressions matches no virtual node. Add at least one expression, or drop \
                 `cluster_selector` to offload to every virtual node.",
            );
        }
        for (j, expr) in expressions.elements().iter().enumerate() {
            let path = term_path.clone().index(j as i64);
            validate_expression(&mut c, path, expr);
        }
    }
    c.timeouts();
    c.finish()
}

/// A configuration generated from an imported offloading (OpenTofu's `-generate-config-out` writes every optional
/// argument from state) repeats the remote name Liqo chose; that is allowed when it is the name the strategy gives:
/// the namespace's own name with EnforceSameName, `<namespace>-…` with DefaultName, whose cluster-ID suffix only the
/// plan can compare (`check_default_name`).
fn is_liqos_choice(strategy: &str, config: &Value) -> bool {
    let (Some(remote), Some(namespace)) =
        (config.get("remote_namespace_name").as_str(), config.get("namespace").as_str())
    else {
        return false;
    };
    match strategy {
        MAPPING_ENFORCE_SAME_NAME => remote == namespace,
        MAPPING_DEFAULT_NAME => {
            remote.strip_prefix(namespace).and_then(|r| r.strip_prefix('-')).is_some_and(|id| !id.is_empty())
        }
        _ => false,
    }
}

/// With DefaultName, a configured `remote_namespace_name` must be the name Liqo reported for this very offloading.
fn check_default_name(prior: &Value, planned: &Value, config: &Value) -> Diagnostics {
    let mut d = Diagnostics::new();
    let configured = config.get("remote_namespace_name");
    if configured.is_null() || planned.get("namespace_mapping_strategy").as_str() != Some(MAPPING_DEFAULT_NAME) {
        return d;
    }
    let reported = if same_offloading(prior, planned) { prior.get("remote_namespace_name").as_str() } else { None };
    if reported.is_none() || reported != configured.as_str() {
        d.push(Diagnostic::attr_error(
            "remote_namespace_name",
            "`remote_namespace_name` cannot be chosen with the DefaultName strategy",
            match reported {
                Some(name) => format!(
                    "Liqo named the remote namespace `{name}` (`<namespace>-<this cluster's ID>`); keep that value or \
                     remove the argument. To choose the name, set `namespace_mapping_strategy = \"SelectedName\"`."
                ),
                None => "Liqo names it `<namespace>-<this cluster's ID>` and reports it in `remote_namespace_name`. \
                         Remove the argument, or set `namespace_mapping_strategy = \"SelectedName\"`."
                    .to_string(),
            },
        ));
    }
    d
}

fn validate_expression(c: &mut Validator, path: AttributePath, expr: &Value) {
    if let Some(key) = expr.get("key").as_str()
        && let Err(why) = check_qualified_name(key)
    {
        c.error(
            path.clone().attr("key"),
            "Invalid label key in `cluster_selector`",
            format!("`{key}` {why}. Use a Kubernetes label key such as `liqo.io/remote-cluster-id`."),
        );
    }
    let Some(op) = expr.get("operator").as_str() else { return };
    if !OPERATORS.contains(&op) {
        c.error(
            path.attr("operator"),
            "Unsupported operator in `cluster_selector`",
            format!("`{op}` is not one of {} (case-sensitive).", OPERATORS.map(|o| format!("`{o}`")).join(", ")),
        );
        return;
    }
    let values = expr.get("values");
    if !values.is_wholly_known() {
        return;
    }
    let list = values.string_elements().unwrap_or_default();
    let problem = match op {
        "In" | "NotIn" if list.is_empty() => Some(format!("`{op}` needs at least one value in `values`.")),
        "Exists" | "DoesNotExist" if !list.is_empty() => Some(format!("`{op}` takes no `values`; remove them.")),
        "Gt" | "Lt" if list.len() != 1 || list[0].parse::<i64>().is_err() => {
            Some(format!("`{op}` needs exactly one value, a whole number (e.g. `values = [\"2\"]`)."))
        }
        _ => None,
    };
    if let Some(detail) = problem {
        c.error(path.attr("values"), format!("Invalid values for operator `{op}` in `cluster_selector`"), detail);
    }
}

// -------------------------------------------------------------------------------------------------------------
// Plan
// -------------------------------------------------------------------------------------------------------------

/// Whether `planned` is the NamespaceOffloading `prior` recorded: same namespace and mapping strategy, the two
/// things Liqo never changes in place (so its reported remote name still holds).
fn same_offloading(prior: &Value, planned: &Value) -> bool {
    !prior.is_null() && ["namespace", "namespace_mapping_strategy"].iter().all(|a| prior.get(a) == planned.get(a))
}

fn plan_values(prior: &Value, proposed: &Value, config: &Value) -> (Value, Vec<AttributePath>) {
    let mut planned = proposed.clone();
    for (attr, default) in [
        ("create_namespace", Value::Bool(false)),
        ("namespace_mapping_strategy", Value::string(MAPPING_DEFAULT_NAME)),
        ("pod_offloading_strategy", Value::string(POD_OFFLOADING_LOCAL_AND_REMOTE)),
    ] {
        if config.get(attr).is_null() {
            planned.set(attr, default);
        }
    }
    planned.set("id", planned.get("namespace").clone());

    let same_object = same_offloading(prior, &planned);
    if config.get("remote_namespace_name").is_null() {
        let remote = if same_object && !prior.get("remote_namespace_name").is_null() {
            prior.get("remote_namespace_name").clone()
        } else {
            match planned.get("namespace_mapping_strategy").as_str() {
                Some(MAPPING_ENFORCE_SAME_NAME) => planned.get("namespace").clone(),
                // DefaultName appends this cluster's ID, which plan does not look up.
                _ => Value::Unknown,
            }
        };
        planned.set("remote_namespace_name", remote);
    }

    let spec_changed = ["pod_offloading_strategy", "cluster_selector"].iter().any(|a| prior.get(a) != planned.get(a));
    if !same_object || spec_changed {
        planned.set("offloading_phase", Value::Unknown);
    }

    let mut replace = Vec::new();
    if !prior.is_null() {
        for attr in REPLACE_ON_CHANGE {
            let (before, after) = (prior.get(attr), planned.get(attr));
            // An output that becomes known again (Unknown after a strategy change) is not itself a reason.
            if !before.is_null() && !after.is_unknown() && before != after {
                replace.push(AttributePath::root(attr));
            }
        }
    }
    (planned, replace)
}

// -------------------------------------------------------------------------------------------------------------
// Objects
// -------------------------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
struct Offload {
    namespace: String,
    create_namespace: bool,
    mapping: String,
    /// Sent only with SelectedName (the only strategy that reads it; the webhook freezes it).
    selected_name: Option<String>,
    pod_strategy: String,
    terms: Vec<NodeSelectorTerm>,
}

impl Offload {
    fn from_value(v: &Value) -> Result<Offload, Diagnostic> {
        let s = |attr: &str| {
            v.get(attr).as_str().map(str::to_string).ok_or_else(|| {
                Diagnostic::attr_error(
                    attr,
                    format!("`{attr}` is not known at apply time"),
                    "This is a bug in the provider (the plan should have filled it); please report it.",
                )
            })
        };
        let mapping = s("namespace_mapping_strategy")?;
        let selected_name = if mapping == MAPPING_SELECTED_NAME { Some(s("remote_namespace_name")?) } else { None };
        Ok(Offload {
            namespace: s("namespace")?,
            create_namespace: v.get("create_namespace").as_bool().unwrap_or(false),
            mapping,
            selected_name,
            pod_strategy: s("pod_offloading_strategy")?,
            terms: terms_from_value(v.get("cluster_selector")),
        })
    }

    /// The Namespace as `create_namespace` applies it; `ours` adds the marker that makes destroy delete it, and
    /// applying it without (as the same field manager) removes the marker again.
    fn namespace_object(&self, ours: bool) -> Namespace {
        let marker = ours.then(|| BTreeMap::from([crate::kube::provider_mark()]));
        Namespace {
            metadata: ObjectMeta { name: Some(self.namespace.clone()), labels: marker, ..Default::default() },
            ..Default::default()
        }
    }

    /// The NamespaceOffloading. `clusterSelector` is always sent with a (possibly empty) list of terms — an
    /// empty list is Liqo's "every virtual node" and `nodeSelectorTerms: null` is never sent.
    fn namespace_offloading(&self) -> NamespaceOffloading {
        let spec = NamespaceOffloadingSpec {
            namespace_mapping_strategy: Some(self.mapping.clone()),
            remote_namespace_name: self.selected_name.clone(),
            pod_offloading_strategy: Some(self.pod_strategy.clone()),
            cluster_selector: Some(NodeSelector { node_selector_terms: self.terms.clone() }),
        };
        let mut o = NamespaceOffloading::new(labels::NAMESPACE_OFFLOADING_NAME, spec);
        o.metadata.namespace = Some(self.namespace.clone());
        o
    }
}

fn terms_from_value(v: &Value) -> Vec<NodeSelectorTerm> {
    v.elements()
        .iter()
        .map(|term| NodeSelectorTerm {
            match_expressions: Some(
                term.get("match_expressions")
                    .elements()
                    .iter()
                    .map(|e| NodeSelectorRequirement {
                        key: e.get("key").as_str().unwrap_or_default().to_string(),
                        operator: e.get("operator").as_str().unwrap_or_default().to_string(),
                        values: e.get("values").string_elements().filter(|v| !v.is_empty()),
                    })
                    .collect(),
            ),
            match_fields: None,
        })
        .collect()
}

/// The live selector as state. Empty lists the user wrote (`cluster_selector = []`, `values = []`) are kept as
/// written, since Liqo treats them like absent ones.
fn terms_to_value(prior: &Value, selector: Option<&NodeSelector>) -> Value {
    let terms = selector.map(|s| s.node_selector_terms.as_slice()).unwrap_or_default();
    if terms.is_empty() {
        return if matches!(prior, Value::List(l) if l.is_empty()) { prior.clone() } else { Value::Null };
    }
    let prior_terms = prior.elements();
    Value::List(
        terms
            .iter()
            .enumerate()
            .map(|(i, term)| {
                let prior_exprs = prior_terms.get(i).map(|t| t.get("match_expressions").elements()).unwrap_or_default();
                let exprs = term.match_expressions.as_deref().unwrap_or_default();
                Value::object([(
                    "match_expressions",
                    Value::List(
                        exprs
                            .iter()
                            .enumerate()
                            .map(|(j, e)| {
                                let prior_values = prior_exprs.get(j).map(|p| p.get("values")).unwrap_or(&Value::Null);
                                let values = match e.values.as_deref() {
                                    Some(v) if !v.is_empty() => Value::string_list(v.iter().cloned()),
                                    _ if matches!(prior_values, Value::List(l) if l.is_empty()) => prior_values.clone(),
                                    _ => Value::Null,
                                };
                                Value::object([
                                    ("key", Value::string(&e.key)),
                                    ("operator", Value::string(&e.operator)),
                                    ("values", values),
                                ])
                            })
                            .collect(),
                    ),
                )])
            })
            .collect(),
    )
}

// -------------------------------------------------------------------------------------------------------------
// Wait (pure check, unit-tested)
// -------------------------------------------------------------------------------------------------------------

/// What a finished offloading reports.
#[derive(Clone, Debug, PartialEq)]
struct Outcome {
    phase: String,
    remote_namespace_name: Option<String>,
}

/// The per-cluster conditions of a failed offloading, one line per remote cluster.
fn remote_conditions(o: &NamespaceOffloading) -> String {
    let conditions = o.status.as_ref().and_then(|s| s.remote_namespaces_conditions.as_ref());
    let lines: Vec<String> = conditions
        .into_iter()
        .flatten()
        .map(|(cluster, conds)| {
            let text: Vec<String> = conds
                .iter()
                .map(|c| {
                    let detail = [c.reason.as_deref(), c.message.as_deref()]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join(": ");
                    if detail.is_empty() {
                        format!("{}={}", c.type_, c.status)
                    } else {
                        format!("{}={} ({detail})", c.type_, c.status)
                    }
                })
                .collect();
            format!("  - {cluster}: {}", text.join(", "))
        })
        .collect();
    if lines.is_empty() { "  (Liqo reported no per-cluster conditions)".into() } else { lines.join("\n") }
}

/// Ready once Liqo has processed at least the generation this apply wrote and reports a final phase.
fn offloading_check(o: Option<&NamespaceOffloading>, applied_generation: i64) -> Verdict<Outcome> {
    let Some(o) = o else {
        return Verdict::Pending("the NamespaceOffloading does not exist".into());
    };
    let generation = o.metadata.generation.unwrap_or_default();
    if generation < applied_generation {
        return Verdict::Pending(format!(
            "generation {generation}, older than the applied generation {applied_generation}"
        ));
    }
    let status = o.status.clone().unwrap_or_default();
    if status.observed_generation != Some(generation) {
        return Verdict::Pending(format!(
            "status.observedGeneration = {}, metadata.generation = {generation} (Liqo has not processed the latest \
             spec yet)",
            status.observed_generation.map(|g| g.to_string()).unwrap_or_else(|| "not reported".into())
        ));
    }
    let phase = status.offloading_phase.clone().unwrap_or_default();
    match phase.as_str() {
        OFFLOADING_PHASE_READY | OFFLOADING_PHASE_NO_CLUSTER_SELECTED => {
            Verdict::Ready(Outcome { phase, remote_namespace_name: status.remote_namespace_name })
        }
        OFFLOADING_PHASE_SOME_FAILED | OFFLOADING_PHASE_ALL_FAILED => Verdict::Failed {
            reason: format!(
                "offloadingPhase is {phase}: the remote namespace `{}` could not be set up on {} selected \
                 cluster(s). Per-cluster conditions:\n{}",
                status.remote_namespace_name.as_deref().unwrap_or("?"),
                if phase == OFFLOADING_PHASE_ALL_FAILED { "any" } else { "some" },
                remote_conditions(o)
            ),
            hint: "A namespace of that name may already exist on the provider (EnforceSameName/SelectedName), or \
                   the peering with that cluster may be unhealthy (see the liqo_peering data source or `liqoctl \
                   info`). Fix it, then run apply again."
                .into(),
        },
        "" => Verdict::Pending("offloadingPhase not reported yet".into()),
        other => Verdict::Pending(format!("offloadingPhase = {other}")),
    }
}

fn no_cluster_warning(namespace: &str) -> Diagnostic {
    Diagnostic::warning(
        format!("No virtual node selected for namespace {namespace}"),
        format!(
            "NamespaceOffloading {namespace}/offloading reports NoClusterSelected: no virtual node matches \
             `cluster_selector`, so no remote namespace exists and pods stay local. Check the selector against \
             the virtual nodes' labels (`kubectl get nodes -l liqo.io/type=virtual-node --show-labels`), and make \
             this resource depend on the liqo_peer that creates the virtual node."
        ),
    )
}

// -------------------------------------------------------------------------------------------------------------
// Read / import
// -------------------------------------------------------------------------------------------------------------

/// The state as the cluster has it; `prior` (Null on import) provides what the cluster does not hold.
fn observed_state(prior: &Value, o: &NamespaceOffloading) -> Value {
    let mut s = if prior.is_null() {
        Value::object([("create_namespace", Value::Bool(false)), ("timeouts", Value::Null)])
    } else {
        prior.clone()
    };
    let ns = o.metadata.namespace.clone().unwrap_or_default();
    s.set("id", Value::string(&ns));
    s.set("namespace", Value::string(ns));
    let spec = &o.spec;
    s.set(
        "namespace_mapping_strategy",
        Value::string(spec.namespace_mapping_strategy.as_deref().unwrap_or(MAPPING_DEFAULT_NAME)),
    );
    s.set(
        "pod_offloading_strategy",
        Value::string(spec.pod_offloading_strategy.as_deref().unwrap_or(POD_OFFLOADING_LOCAL_AND_REMOTE)),
    );
    let status = o.status.clone().unwrap_or_default();
    let remote = status.remote_namespace_name.or_else(|| spec.remote_namespace_name.clone());
    if let Some(remote) = remote {
        s.set("remote_namespace_name", Value::string(remote));
    } else if s.get("remote_namespace_name").is_unknown() {
        s.set("remote_namespace_name", Value::Null);
    }
    s.set("cluster_selector", terms_to_value(prior.get("cluster_selector"), spec.cluster_selector.as_ref()));
    s.set("offloading_phase", Value::opt_string(status.offloading_phase));
    s
}

fn parse_import_id(id: &str) -> Result<String, Diagnostic> {
    match check_dns_label(id) {
        Ok(()) => Ok(id.to_string()),
        Err(why) => Err(Diagnostic::error(
            "Invalid import ID for liqo_offload",
            format!("Expected `<namespace>`, the name of the offloaded namespace (e.g. `liqo-demo`); `{id}` {why}."),
        )),
    }
}

// -------------------------------------------------------------------------------------------------------------
// The resource
// -------------------------------------------------------------------------------------------------------------

impl OffloadResource {
    async fn converge(
        &self,
        ctx: &Ctx,
        client: &kube::Client,
        off: &Offload,
        managed_namespace_before: bool,
        deadline: Deadline,
        written: &mut bool,
    ) -> Result<Outcome, OpError> {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        if off.create_namespace || managed_namespace_before {
            let existing = crate::kube::settle(ctx, &namespaces, &off.namespace, deadline.left()).await?;
            let ours = existing.as_ref().is_none_or(created_by_provider);
            if off.create_namespace && ours {
                crate::kube::apply(ctx, &namespaces, &off.namespace_object(true)).await?;
                *written = true;
            } else if !off.create_namespace && existing.is_some() && ours {
                // `create_namespace` switched off: drop the marker, so destroy and import leave it alone.
                crate::kube::apply(ctx, &namespaces, &off.namespace_object(false)).await?;
            }
        }
        let api: Api<NamespaceOffloading> = Api::namespaced(client.clone(), &off.namespace);
        crate::kube::settle(ctx, &api, labels::NAMESPACE_OFFLOADING_NAME, deadline.left()).await?;
        let applied = crate::kube::apply(ctx, &api, &off.namespace_offloading()).await?;
        *written = true;
        let generation = applied.metadata.generation.unwrap_or_default();
        crate::kube::wait_for(
            ctx,
            &api,
            labels::NAMESPACE_OFFLOADING_NAME,
            "status.observedGeneration = metadata.generation and offloadingPhase = Ready",
            deadline.left(),
            |o| offloading_check(o, generation),
        )
        .await
    }

    async fn remove(&self, ctx: &Ctx, client: &kube::Client, prior: &Value, deadline: Deadline) -> Result<(), OpError> {
        let ns = prior.get("namespace").as_str().unwrap_or_default();
        let api: Api<NamespaceOffloading> = Api::namespaced(client.clone(), ns);
        crate::kube::delete_and_wait(ctx, &api, labels::NAMESPACE_OFFLOADING_NAME, deadline.left()).await?;
        if prior.get("create_namespace").as_bool() == Some(true) {
            let namespaces: Api<Namespace> = Api::all(client.clone());
            let existing = crate::kube::get_opt(ctx, &namespaces, ns).await?;
            if existing.as_ref().is_some_and(created_by_provider) {
                crate::kube::delete_and_wait(ctx, &namespaces, ns, deadline.left()).await?;
            }
        }
        Ok(())
    }

    /// The state after an apply: planned values with the outputs Liqo reported.
    fn state(planned: &Value, outcome: Option<&Outcome>) -> Value {
        let mut s = planned.clone();
        if s.get("remote_namespace_name").is_unknown() {
            s.set("remote_namespace_name", Value::opt_string(outcome.and_then(|o| o.remote_namespace_name.clone())));
        }
        s.set("offloading_phase", Value::opt_string(outcome.map(|o| o.phase.clone())));
        s
    }
}

#[async_trait]
impl Resource for OffloadResource {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        validate(config)
    }

    /// Only `SelectedName` takes `remote_namespace_name` as an input; otherwise Liqo chose it.
    fn generated_config(&self, mut config: Value) -> Value {
        if config.get("namespace_mapping_strategy").as_str() != Some(MAPPING_SELECTED_NAME) {
            config.set("remote_namespace_name", Value::Null);
        }
        config
    }

    async fn plan(&self, _ctx: &Ctx, req: PlanRequest) -> PlanResponse {
        let (planned, requires_replace) = plan_values(&req.prior, &req.proposed, &req.config);
        let diagnostics = check_default_name(&req.prior, &planned, &req.config);
        PlanResponse { planned, requires_replace, private: req.private, diagnostics }
    }

    async fn apply(&self, ctx: &Ctx, req: ApplyRequest) -> ApplyResponse {
        let client = match self.cluster.client().await {
            Ok(c) => c,
            Err(d) => return ApplyResponse { new_state: req.prior, private: vec![], diagnostics: d.into() },
        };
        if req.planned.is_null() {
            let deadline = Deadline::after(Timeouts::from_value(&req.prior, DEFAULT_TIMEOUTS).delete);
            return match self.remove(ctx, &client, &req.prior, deadline).await {
                Ok(()) => ApplyResponse { new_state: Value::Null, private: vec![], diagnostics: Diagnostics::new() },
                Err(e) => ApplyResponse { new_state: req.prior, private: vec![], diagnostics: op_diags(&e) },
            };
        }
        let off = match Offload::from_value(&req.planned) {
            Ok(o) => o,
            Err(d) => return ApplyResponse { new_state: req.prior, private: vec![], diagnostics: d.into() },
        };
        let timeouts = Timeouts::from_value(&req.planned, DEFAULT_TIMEOUTS);
        let budget = if req.prior.is_null() { timeouts.create } else { timeouts.update };
        let mut written = false;
        let managed_before = req.prior.get("create_namespace").as_bool() == Some(true);
        match self.converge(ctx, &client, &off, managed_before, Deadline::after(budget), &mut written).await {
            Ok(outcome) => {
                let mut diagnostics = Diagnostics::new();
                if outcome.phase == OFFLOADING_PHASE_NO_CLUSTER_SELECTED {
                    diagnostics.push(no_cluster_warning(&off.namespace));
                }
                ApplyResponse { new_state: Self::state(&req.planned, Some(&outcome)), private: vec![], diagnostics }
            }
            // Objects were written: record them (a failed create is tainted and replaced), with what Liqo reports.
            Err(e) if written => {
                let api: Api<NamespaceOffloading> = Api::namespaced(client, &off.namespace);
                let seen = crate::kube::get_opt(ctx, &api, labels::NAMESPACE_OFFLOADING_NAME).await.ok().flatten();
                let outcome = seen.and_then(|o| o.status).map(|st| Outcome {
                    phase: st.offloading_phase.unwrap_or_default(),
                    remote_namespace_name: st.remote_namespace_name,
                });
                ApplyResponse {
                    new_state: Self::state(&req.planned, outcome.as_ref()),
                    private: vec![],
                    diagnostics: op_diags(&e),
                }
            }
            Err(e) => ApplyResponse { new_state: req.prior, private: vec![], diagnostics: op_diags(&e) },
        }
    }

    async fn read(&self, ctx: &Ctx, state: Value, private: Vec<u8>) -> ReadResponse {
        let client = match self.cluster.client().await {
            Ok(c) => c,
            Err(d) => return ReadResponse { new_state: state, private, diagnostics: d.into() },
        };
        let ns = state.get("namespace").as_str().unwrap_or_default().to_string();
        let api: Api<NamespaceOffloading> = Api::namespaced(client.clone(), &ns);
        let namespaces: Api<Namespace> = Api::all(client);
        let objects = async {
            let o = crate::kube::get_opt(ctx, &api, labels::NAMESPACE_OFFLOADING_NAME).await?;
            let namespace = crate::kube::get_opt(ctx, &namespaces, &ns).await?;
            Ok::<_, OpError>((o, namespace))
        };
        match objects.await {
            Ok((Some(o), namespace)) if o.metadata.deletion_timestamp.is_none() => {
                // A namespace `create_namespace` provides that is gone or going: plan to create everything again.
                let provides_namespace = state.get("create_namespace").as_bool() == Some(true);
                let namespace_lost = namespace.is_none_or(|n| n.metadata.deletion_timestamp.is_some());
                if provides_namespace && namespace_lost {
                    return ReadResponse { new_state: Value::Null, private, diagnostics: Diagnostics::new() };
                }
                ReadResponse { new_state: observed_state(&state, &o), private, diagnostics: Diagnostics::new() }
            }
            // Gone or being unoffloaded: plan to create it again (apply waits out the deletion first).
            Ok(_) => ReadResponse { new_state: Value::Null, private, diagnostics: Diagnostics::new() },
            Err(e) => ReadResponse { new_state: state, private, diagnostics: op_diags(&e) },
        }
    }

    async fn import(&self, ctx: &Ctx, id: &str) -> Result<Vec<ImportedResource>, Diagnostics> {
        let ns = parse_import_id(id)?;
        let client = self.cluster.client().await?;
        let api: Api<NamespaceOffloading> = Api::namespaced(client.clone(), &ns);
        let o = crate::kube::get_opt(ctx, &api, labels::NAMESPACE_OFFLOADING_NAME)
            .await
            .map_err(|e| op_diags(&e))?
            .ok_or_else(|| {
                Diagnostic::error(
                    format!("NamespaceOffloading {ns}/offloading not found"),
                    "Nothing to import: the namespace is not offloaded (`kubectl get namespaceoffloadings -A` on the \
                 consumer cluster), or create the offloading with this resource instead.",
                )
            })?;
        let namespaces: Api<Namespace> = Api::all(client);
        let namespace = crate::kube::get_opt(ctx, &namespaces, &ns).await.map_err(|e| op_diags(&e))?;
        let mut state = observed_state(&Value::Null, &o);
        state.set("create_namespace", Value::Bool(namespace.as_ref().is_some_and(created_by_provider)));
        Ok(vec![ImportedResource { state, private: vec![] }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::FIELD_MANAGER;
    use liqo_schema::liqo::{LiqoCondition, NamespaceOffloadingStatus};
    use liqo_schema::tf::Severity;

    fn config() -> Value {
        Value::object([
            ("namespace", Value::string("liqo-demo")),
            ("create_namespace", Value::Null),
            ("namespace_mapping_strategy", Value::Null),
            ("remote_namespace_name", Value::Null),
            ("pod_offloading_strategy", Value::Null),
            ("cluster_selector", Value::Null),
            ("id", Value::Null),
            ("offloading_phase", Value::Null),
            ("timeouts", Value::Null),
        ])
    }

    fn expr(key: &str, op: &str, values: Value) -> Value {
        Value::object([("key", Value::string(key)), ("operator", Value::string(op)), ("values", values)])
    }

    fn selector(exprs: Vec<Value>) -> Value {
        Value::List(vec![Value::object([("match_expressions", Value::List(exprs))])])
    }

    fn error_paths(d: &Diagnostics) -> Vec<String> {
        d.iter().filter(|d| d.severity == Severity::Error).map(|d| d.attribute.as_ref().unwrap().to_string()).collect()
    }

    fn applied(planned: &Value) -> Value {
        OffloadResource::state(
            planned,
            Some(&Outcome { phase: "Ready".into(), remote_namespace_name: Some("liqo-demo-rome".into()) }),
        )
    }

    #[test]
    fn schema_describes_everything() {
        let s = schema();
        fn check(attrs: &[Attribute]) {
            for a in attrs {
                assert!(!a.description.is_empty(), "{} has no description", a.name);
                if let Some(n) = &a.nested {
                    check(&n.attributes);
                }
            }
        }
        check(&s.block.attributes);
        assert!(s.block.attribute("namespace").unwrap().required);
        let sel = s.block.attribute("cluster_selector").unwrap();
        assert!(sel.optional && !sel.computed && sel.ty.is_none());
        for out in ["id", "offloading_phase"] {
            let a = s.block.attribute(out).unwrap();
            assert!(a.computed && !a.optional);
        }
        assert!(s.block.blocks.iter().any(|b| b.type_name == "timeouts"));
    }

    #[test]
    fn selected_name_rules_are_checked_at_plan_time() {
        let mut c = config();
        c.set("namespace_mapping_strategy", Value::string("SelectedName"));
        let d = validate(&c);
        assert_eq!(error_paths(&d), ["remote_namespace_name"]);
        assert!(d.0[0].summary.contains("SelectedName"));

        c.set("remote_namespace_name", Value::string("remote-demo"));
        assert!(validate(&c).is_empty());

        // Default strategy (null) and explicit others forbid it, also when the value is not known yet.
        for strategy in [Value::Null, Value::string("EnforceSameName")] {
            let mut c = config();
            c.set("namespace_mapping_strategy", strategy);
            c.set("remote_namespace_name", Value::Unknown);
            assert_eq!(error_paths(&validate(&c)), ["remote_namespace_name"]);
            c.set("remote_namespace_name", Value::string("elsewhere"));
            assert_eq!(error_paths(&validate(&c)), ["remote_namespace_name"]);
        }
        // The name Liqo gives with the strategy passes validation (a configuration generated from an import).
        let namespace = c.get("namespace").as_str().unwrap().to_string();
        for (strategy, remote) in
            [("EnforceSameName", namespace.clone()), ("DefaultName", format!("{namespace}-milan"))]
        {
            let mut c = config();
            c.set("namespace_mapping_strategy", Value::string(strategy));
            c.set("remote_namespace_name", Value::string(remote));
            assert!(validate(&c).is_empty(), "{strategy}");
        }
        // Unknown strategy: nothing can be said yet.
        let mut c = config();
        c.set("namespace_mapping_strategy", Value::Unknown);
        c.set("remote_namespace_name", Value::string("x"));
        assert!(validate(&c).is_empty());
    }

    #[test]
    fn validation_names_each_bad_attribute() {
        let mut c = config();
        c.set("namespace", Value::string("Demo"));
        c.set("namespace_mapping_strategy", Value::string("defaultname"));
        c.set("pod_offloading_strategy", Value::string("Both"));
        c.set(
            "cluster_selector",
            Value::List(vec![
                Value::object([(
                    "match_expressions",
                    Value::List(vec![
                        expr("liqo.io/remote-cluster-id", "In", Value::string_list(["milan"])),
                        expr("bad key!", "Exists", Value::Null),
                        expr("zone", "Equals", Value::Null),
                        expr("zone", "In", Value::List(vec![])),
                        expr("zone", "Exists", Value::string_list(["a"])),
                        expr("cpu", "Gt", Value::string_list(["two"])),
                        expr("cpu", "Lt", Value::List(vec![Value::Unknown])),
                    ]),
                )]),
                Value::object([("match_expressions", Value::List(vec![]))]),
            ]),
        );
        c.set("timeouts", Value::object([("delete", Value::string("soon"))]));
        assert_eq!(
            error_paths(&validate(&c)),
            [
                "namespace",
                "namespace_mapping_strategy",
                "pod_offloading_strategy",
                "cluster_selector[0].match_expressions[1].key",
                "cluster_selector[0].match_expressions[2].operator",
                "cluster_selector[0].match_expressions[3].values",
                "cluster_selector[0].match_expressions[4].values",
                "cluster_selector[0].match_expressions[5].values",
                "cluster_selector[1].match_expressions",
                "timeouts.delete",
            ]
        );
        assert!(validate(&config()).is_empty());
    }

    #[test]
    fn create_plan_fills_defaults() {
        let (planned, replace) = plan_values(&Value::Null, &config(), &config());
        assert!(replace.is_empty());
        assert_eq!(planned.get("id"), &Value::string("liqo-demo"));
        assert_eq!(planned.get("create_namespace"), &Value::Bool(false));
        assert_eq!(planned.get("namespace_mapping_strategy"), &Value::string("DefaultName"));
        assert_eq!(planned.get("pod_offloading_strategy"), &Value::string("LocalAndRemote"));
        assert!(planned.get("remote_namespace_name").is_unknown());
        assert!(planned.get("offloading_phase").is_unknown());

        let mut c = config();
        c.set("namespace_mapping_strategy", Value::string("EnforceSameName"));
        let (planned, _) = plan_values(&Value::Null, &c, &c);
        assert_eq!(planned.get("remote_namespace_name"), &Value::string("liqo-demo"));

        let mut c = config();
        c.set("namespace_mapping_strategy", Value::string("SelectedName"));
        c.set("remote_namespace_name", Value::string("far-away"));
        let (planned, _) = plan_values(&Value::Null, &c, &c);
        assert_eq!(planned.get("remote_namespace_name"), &Value::string("far-away"));

        let mut c = config();
        c.set("namespace", Value::Unknown);
        let (planned, _) = plan_values(&Value::Null, &c, &c);
        assert!(planned.get("id").is_unknown());
    }

    #[test]
    fn a_generated_default_name_must_be_the_one_liqo_reported() {
        let (planned, _) = plan_values(&Value::Null, &config(), &config());
        let prior = applied(&planned);
        let reported = prior.get("remote_namespace_name").as_str().unwrap().to_string();

        // What OpenTofu generates from the imported state: an empty plan, no diagnostic.
        let mut generated = config();
        generated.set("remote_namespace_name", Value::string(reported.clone()));
        let (again, replace) = plan_values(&prior, &prior, &generated);
        assert!(replace.is_empty());
        assert_eq!(again, prior);
        assert!(check_default_name(&prior, &again, &generated).is_empty());

        // Another name, or any name on create: an error on the attribute, naming Liqo's choice when there is one.
        let mut other = config();
        other.set("remote_namespace_name", Value::string("liqo-demo-elsewhere"));
        let mut proposed = prior.clone();
        proposed.set("remote_namespace_name", other.get("remote_namespace_name").clone());
        let (planned, _) = plan_values(&prior, &proposed, &other);
        let d = check_default_name(&prior, &planned, &other);
        assert_eq!(error_paths(&d), ["remote_namespace_name"]);
        assert!(d.0[0].detail.contains(&reported), "{}", d.0[0].detail);
        let (planned, _) = plan_values(&Value::Null, &generated, &generated);
        assert_eq!(error_paths(&check_default_name(&Value::Null, &planned, &generated)), ["remote_namespace_name"]);
    }

    #[test]
    fn strategy_and_selector_update_in_place_mapping_replaces() {
        let (planned, _) = plan_values(&Value::Null, &config(), &config());
        let prior = applied(&planned);

        // Unchanged: empty plan, outputs kept.
        let (again, replace) = plan_values(&prior, &prior, &config());
        assert!(replace.is_empty());
        assert_eq!(again, prior);

        for (attr, value) in [
            ("pod_offloading_strategy", Value::string("Remote")),
            (
                "cluster_selector",
                selector(vec![expr("liqo.io/remote-cluster-id", "In", Value::string_list(["milan"]))]),
            ),
            ("create_namespace", Value::Bool(true)),
        ] {
            let mut proposed = prior.clone();
            proposed.set(attr, value.clone());
            let mut c = config();
            c.set(attr, value);
            let (planned, replace) = plan_values(&prior, &proposed, &c);
            assert!(replace.is_empty(), "{attr} must update in place");
            assert_eq!(planned.get("remote_namespace_name"), &Value::string("liqo-demo-rome"), "{attr}");
            if attr != "create_namespace" {
                assert!(planned.get("offloading_phase").is_unknown(), "{attr}");
            }
        }

        let mut proposed = prior.clone();
        proposed.set("namespace_mapping_strategy", Value::string("EnforceSameName"));
        let mut c = config();
        c.set("namespace_mapping_strategy", Value::string("EnforceSameName"));
        let (planned, replace) = plan_values(&prior, &proposed, &c);
        assert_eq!(
            replace,
            vec![AttributePath::root("namespace_mapping_strategy"), AttributePath::root("remote_namespace_name")]
        );
        assert_eq!(planned.get("remote_namespace_name"), &Value::string("liqo-demo"));

        let mut proposed = prior.clone();
        proposed.set("namespace", Value::string("other"));
        let mut c = config();
        c.set("namespace", Value::string("other"));
        let (planned, replace) = plan_values(&prior, &proposed, &c);
        assert_eq!(replace, vec![AttributePath::root("namespace")]);
        assert!(planned.get("remote_namespace_name").is_unknown());
    }

    #[test]
    fn offloading_object_never_sends_null_terms() {
        let (planned, _) = plan_values(&Value::Null, &config(), &config());
        let mut known = planned.clone();
        known.set("remote_namespace_name", Value::Null);
        let off = Offload::from_value(&known).unwrap();
        let json = serde_json::to_value(off.namespace_offloading()).unwrap();
        assert_eq!(json["apiVersion"], "offloading.liqo.io/v1beta1");
        assert_eq!(json["kind"], "NamespaceOffloading");
        assert_eq!(json["metadata"], serde_json::json!({"name": "offloading", "namespace": "liqo-demo"}));
        assert_eq!(
            json["spec"],
            serde_json::json!({
                "namespaceMappingStrategy": "DefaultName",
                "podOffloadingStrategy": "LocalAndRemote",
                "clusterSelector": {"nodeSelectorTerms": []},
            })
        );

        known.set("namespace_mapping_strategy", Value::string("SelectedName"));
        known.set("remote_namespace_name", Value::string("far-away"));
        known.set(
            "cluster_selector",
            selector(vec![
                expr("liqo.io/remote-cluster-id", "In", Value::string_list(["milan"])),
                expr("gpu", "Exists", Value::List(vec![])),
            ]),
        );
        let json = serde_json::to_value(Offload::from_value(&known).unwrap().namespace_offloading()).unwrap();
        assert_eq!(json["spec"]["remoteNamespaceName"], "far-away");
        assert_eq!(
            json["spec"]["clusterSelector"],
            serde_json::json!({"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "liqo.io/remote-cluster-id", "operator": "In", "values": ["milan"]},
                {"key": "gpu", "operator": "Exists"},
            ]}]})
        );

        let ns = serde_json::to_value(off.namespace_object(true)).unwrap();
        assert_eq!(
            ns,
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": "liqo-demo", "labels": {"app.kubernetes.io/managed-by": "terraform-provider-liqo"}
            }})
        );
        let released = serde_json::to_value(off.namespace_object(false)).unwrap();
        assert_eq!(
            released,
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "liqo-demo"}})
        );
    }

    fn offloading(generation: i64, observed: Option<i64>, phase: &str) -> NamespaceOffloading {
        let mut o = NamespaceOffloading::new("offloading", NamespaceOffloadingSpec::default());
        o.metadata.namespace = Some("liqo-demo".into());
        o.metadata.generation = Some(generation);
        o.status = Some(NamespaceOffloadingStatus {
            offloading_phase: Some(phase.into()).filter(|p: &String| !p.is_empty()),
            observed_generation: observed,
            remote_namespace_name: Some("liqo-demo-rome".into()),
            ..Default::default()
        });
        o
    }

    #[test]
    fn wait_needs_the_current_generation_and_a_final_phase() {
        assert!(matches!(offloading_check(None, 1), Verdict::Pending(_)));
        // A stale copy from before this apply, even if Ready, does not count.
        assert!(matches!(offloading_check(Some(&offloading(1, Some(1), "Ready")), 2), Verdict::Pending(_)));
        let Verdict::Pending(seen) = offloading_check(Some(&offloading(2, Some(1), "Ready")), 2) else { panic!() };
        assert!(seen.contains("observedGeneration = 1"));
        let Verdict::Pending(seen) = offloading_check(Some(&offloading(2, Some(2), "InProgress")), 2) else { panic!() };
        assert_eq!(seen, "offloadingPhase = InProgress");
        let Verdict::Ready(out) = offloading_check(Some(&offloading(2, Some(2), "Ready")), 2) else { panic!() };
        assert_eq!(out, Outcome { phase: "Ready".into(), remote_namespace_name: Some("liqo-demo-rome".into()) });
        assert!(matches!(offloading_check(Some(&offloading(2, Some(2), "NoClusterSelected")), 2), Verdict::Ready(_)));

        let mut failed = offloading(3, Some(3), "SomeFailed");
        let cond = |t: &str, s: &str, r: &str| LiqoCondition {
            type_: t.into(),
            status: s.into(),
            reason: Some(r.into()),
            ..Default::default()
        };
        failed.status.as_mut().unwrap().remote_namespaces_conditions = Some(BTreeMap::from([(
            "milan".to_string(),
            vec![cond("OffloadingRequired", "True", "ClusterSelected"), cond("Ready", "False", "CreationLoopBackOff")],
        )]));
        let Verdict::Failed { reason, hint } = offloading_check(Some(&failed), 3) else { panic!() };
        assert!(reason.contains("SomeFailed"));
        assert!(reason.contains("milan: OffloadingRequired=True (ClusterSelected), Ready=False (CreationLoopBackOff)"));
        assert!(hint.contains("apply again"));
        let Verdict::Failed { reason, .. } = offloading_check(Some(&offloading(3, Some(3), "AllFailed")), 3) else {
            panic!()
        };
        assert!(reason.contains("no per-cluster conditions"));
        assert!(no_cluster_warning("liqo-demo").detail.contains("NoClusterSelected"));
    }

    #[test]
    fn read_reflects_drift_and_import_rebuilds_state() {
        let mut c = config();
        c.set("cluster_selector", selector(vec![expr("gpu", "Exists", Value::List(vec![]))]));
        let (planned, _) = plan_values(&Value::Null, &c, &c);
        let prior = applied(&planned);
        let mut known = prior.clone();
        known.set("remote_namespace_name", Value::Null);
        let mut live = Offload::from_value(&known).unwrap().namespace_offloading();
        live.status = offloading(1, Some(1), "Ready").status;

        // The live object reads back into the same state (an empty `values` list as the user wrote it).
        assert_eq!(observed_state(&prior, &live), prior);

        // Out-of-band edits show up as drift.
        live.spec.pod_offloading_strategy = Some("Local".into());
        live.spec.cluster_selector = Some(NodeSelector { node_selector_terms: vec![] });
        let s = observed_state(&prior, &live);
        assert_eq!(s.get("pod_offloading_strategy"), &Value::string("Local"));
        assert!(s.get("cluster_selector").is_null());

        // Import: full state, matching the plan of the documented config.
        let (want, _) = plan_values(&Value::Null, &config(), &config());
        let mut live = Offload::from_value(&{
            let mut k = want.clone();
            k.set("remote_namespace_name", Value::Null);
            k
        })
        .unwrap()
        .namespace_offloading();
        live.status = offloading(1, Some(1), "Ready").status;
        let s = observed_state(&Value::Null, &live);
        for attr in [
            "id",
            "namespace",
            "create_namespace",
            "namespace_mapping_strategy",
            "pod_offloading_strategy",
            "cluster_selector",
        ] {
            assert_eq!(s.get(attr), want.get(attr), "{attr}");
        }
        assert_eq!(s.get("remote_namespace_name"), &Value::string("liqo-demo-rome"));
        assert_eq!(s.get("offloading_phase"), &Value::string("Ready"));
    }

    #[test]
    fn import_ids_and_namespace_ownership() {
        assert_eq!(parse_import_id("liqo-demo").unwrap(), "liqo-demo");
        for bad in ["ns/offloading", "Demo", ""] {
            assert!(parse_import_id(bad).unwrap_err().detail.contains("`<namespace>`"), "{bad}");
        }
        let mut ns = Namespace::default();
        assert!(!created_by_provider(&ns));
        ns.metadata.labels = Some(BTreeMap::from([("app.kubernetes.io/managed-by".into(), "someone-else".into())]));
        assert!(!created_by_provider(&ns));
        ns.metadata.labels = Some(BTreeMap::from([("app.kubernetes.io/managed-by".into(), FIELD_MANAGER.into())]));
        assert!(created_by_provider(&ns));
    }

    #[test]
    fn failure_state_has_no_unknowns() {
        let (planned, _) = plan_values(&Value::Null, &config(), &config());
        let s = OffloadResource::state(&planned, None);
        assert!(s.is_wholly_known());
    }
}
