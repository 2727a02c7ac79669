//! What Liqo reports in a NamespaceOffloading's status: the verdict of the wait after an apply, and the outputs
//! the state records from it.
use liqo_schema::liqo::{
    NamespaceOffloading, OFFLOADING_PHASE_ALL_FAILED, OFFLOADING_PHASE_NO_CLUSTER_SELECTED, OFFLOADING_PHASE_READY,
    OFFLOADING_PHASE_SOME_FAILED,
};
use liqo_schema::tf::{Diagnostic, Value};

use super::schema::attr;
use crate::kube::Verdict;

/// What a finished offloading reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub phase: String,
    pub remote_namespace_name: Option<String>,
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
pub fn offloading_check(o: Option<&NamespaceOffloading>, applied_generation: i64) -> Verdict<Outcome> {
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

pub fn no_cluster_warning(namespace: &str) -> Diagnostic {
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

impl Outcome {
    /// Whatever `o` reports, final or not (an empty phase when it reports none yet); `None` without a status.
    pub fn reported(o: &NamespaceOffloading) -> Option<Outcome> {
        o.status.clone().map(|st| Outcome {
            phase: st.offloading_phase.unwrap_or_default(),
            remote_namespace_name: st.remote_namespace_name,
        })
    }
}

/// The state after an apply: planned values with the outputs Liqo reported.
pub fn applied_state(planned: &Value, outcome: Option<&Outcome>) -> Value {
    let mut s = attr::Offload::of(planned);
    if s.remote_namespace_name.is_unknown() {
        s.remote_namespace_name = Value::opt_string(outcome.and_then(|o| o.remote_namespace_name.clone()));
    }
    s.offloading_phase = outcome.map(|o| o.phase.clone());
    s.value()
}
