//! `liqo_peer`'s plan: what makes Liqo see another peering replaces it; a new request leaves the grant unknown
//! until the provider answers.
use liqo_schema::liqo::RESOURCE_SLICE_CLASS_DEFAULT;
use liqo_schema::tf::Value;

use crate::resources::lifecycle::{Plan, PlanRules};

/// Inputs whose change makes Liqo treat the peering as a different one (another slice, another provider,
/// another replication target, or a virtual node Liqo would not add/remove on an annotation flip).
const REPLACE_ON_CHANGE: &[&str] = &[
    "tenant_namespace",
    "provider_cluster_id",
    "provider_tenant_namespace",
    "resource_slice_name",
    "class",
    "create_virtual_node",
];

/// A value that vanished from the cluster (null in the refreshed state: an annotation removed or edited out of
/// band, see `observed_state`) is re-asserted in place, never a replacement, whose delete could wait forever on a
/// finalizer the broken object holds.
pub const RULES: PlanRules = PlanRules {
    replace_on_change: REPLACE_ON_CHANGE,
    repair_missing_in_place: true,
    replace_on_presence_change: &[],
    outputs: &["accepted_resources"],
    defaults,
    refine,
};

/// Defaults come from the configuration, so removing an explicit value restores them.
pub fn defaults(plan: &mut Plan) {
    let config = plan.config;
    if config.get("class").is_null() {
        plan.planned.set("class", Value::string(RESOURCE_SLICE_CLASS_DEFAULT));
    }
    if config.get("create_virtual_node").is_null() {
        plan.planned.set("create_virtual_node", Value::Bool(true));
    }
    if config.get("wait_for_virtual_node").is_null() {
        plan.planned.set("wait_for_virtual_node", Value::Bool(true));
    }
    // The default follows the provider cluster ID (also when that changes), not the prior state.
    if config.get("resource_slice_name").is_null() {
        let provider = plan.planned.get("provider_cluster_id").clone();
        plan.planned.set("resource_slice_name", provider);
    }
}

pub fn refine(plan: &mut Plan) {
    let slice = plan.planned.get("resource_slice_name").clone();
    let id = match (plan.planned.get("tenant_namespace").as_str(), slice.as_str()) {
        (Some(ns), Some(name)) => Value::string(format!("{ns}/{name}")),
        _ => Value::Unknown,
    };
    plan.planned.set("id", id);
    let virtual_node_name = match plan.planned.get("create_virtual_node") {
        Value::Bool(true) => slice,
        Value::Bool(false) => Value::Null,
        _ => Value::Unknown,
    };
    plan.planned.set("virtual_node_name", virtual_node_name);
    // The grant only changes when the request does (or on a new slice, which the rules cover).
    if plan.changed("resources") {
        plan.recompute("accepted_resources");
    }
}
