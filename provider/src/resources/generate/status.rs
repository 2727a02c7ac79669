//! When the tenant Namespace is ready to hold the key Secret, from the phase Kubernetes reports.
use k8s_openapi::api::core::v1::Namespace;

use crate::kube::Verdict;

const PHASE_ACTIVE: &str = "Active";
const PHASE_TERMINATING: &str = "Terminating";

/// The wait for the applied Namespace: ready once `Active`; one still terminating (left by an earlier destroy)
/// fails at once rather than after the whole budget, since it can never become `Active` again.
pub fn namespace_check(ns: Option<&Namespace>) -> Verdict<()> {
    let Some(ns) = ns else {
        return Verdict::Pending("the Namespace does not exist yet".into());
    };
    match ns.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some(PHASE_ACTIVE) => Verdict::Ready(()),
        Some(PHASE_TERMINATING) => Verdict::Failed {
            reason: "The Namespace is being deleted (status.phase = Terminating).".into(),
            hint: "Wait until the deletion finishes (`kubectl get namespace`), then apply again.".into(),
        },
        other => Verdict::Pending(format!("status.phase = {other:?}")),
    }
}
