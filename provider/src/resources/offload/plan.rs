//! `liqo_offload`'s plan: defaults from the configuration, the remote name Liqo gives or gave, replacement when an
//! input Liqo makes immutable changes, and the phase an apply re-reports.
use liqo_schema::liqo::{MAPPING_DEFAULT_NAME, MAPPING_ENFORCE_SAME_NAME};
use liqo_schema::tf::{Diagnostic, Diagnostics, Value};

use super::schema::attr;
use crate::resources::lifecycle::{Plan, PlanRules};

/// Liqo's webhook rejects any change of the namespace, the mapping strategy or the remote name after creation.
/// A remote name the prior state never recorded (an offloading imported or created before Liqo reported it) is
/// set in place. The remote name [`refine`] derives (unset in the configuration) changes only with the namespace
/// or the strategy, which replace the offloading already.
pub const RULES: PlanRules = PlanRules { repair_missing_in_place: true, refine, ..PlanRules::NONE };

/// The id, the remote name, the phase an in-place update changes and the DefaultName check.
pub fn refine(plan: &mut Plan) {
    let same_object = same_offloading(plan.prior, &plan.planned);
    // An unknown strategy reads as "", none of Liqo's.
    let (prior, planned) = (attr::Offload::of(plan.prior), attr::Offload::of(&plan.planned));
    if plan.config.get(attr::remote_namespace_name).is_null() {
        let remote = if same_object && !prior.remote_namespace_name.is_null() {
            prior.remote_namespace_name
        } else {
            match planned.namespace_mapping_strategy.as_str() {
                // The namespace may be unknown still: the value, not the model's "".
                MAPPING_ENFORCE_SAME_NAME => plan.planned.get(attr::namespace).clone(),
                // DefaultName appends this cluster's ID, which plan does not look up.
                _ => Value::Unknown,
            }
        };
        plan.planned.set(attr::remote_namespace_name, remote);
    }

    // A new object, or a new pod strategy or selector, makes Liqo report the phase again.
    let spec_changed = [attr::pod_offloading_strategy, attr::cluster_selector]
        .iter()
        .any(|a| plan.prior.get(*a) != plan.planned.get(*a));
    if !same_object || spec_changed {
        plan.recompute(attr::offloading_phase);
    }

    let diagnostics = check_default_name(plan.prior, &plan.planned, plan.config);
    plan.diagnostics.extend(diagnostics);
}

/// Whether `planned` is the NamespaceOffloading `prior` recorded: same namespace and mapping strategy, the two
/// things Liqo never changes in place (so its reported remote name still holds).
fn same_offloading(prior: &Value, planned: &Value) -> bool {
    !prior.is_null()
        && [attr::namespace, attr::namespace_mapping_strategy].iter().all(|a| prior.get(*a) == planned.get(*a))
}

/// With DefaultName, a configured `remote_namespace_name` must be the name Liqo reported for this very offloading.
pub fn check_default_name(prior: &Value, planned: &Value, config: &Value) -> Diagnostics {
    let mut d = Diagnostics::new();
    let configured = config.get(attr::remote_namespace_name);
    if configured.is_null() || planned.get(attr::namespace_mapping_strategy).as_str() != Some(MAPPING_DEFAULT_NAME) {
        return d;
    }
    let reported = if same_offloading(prior, planned) { prior.get(attr::remote_namespace_name).as_str() } else { None };
    if reported.is_none() || reported != configured.as_str() {
        d.push(Diagnostic::attr_error(
            attr::remote_namespace_name,
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
