//! `liqo_peer`'s plan: what makes Liqo see another peering replaces it; a new request leaves the grant unknown
//! until the provider answers.
use liqo_schema::tf::Value;

use super::objects::virtual_node_name;
use super::schema::attr;
use crate::resources::lifecycle::{Plan, PlanRules};

/// A value that vanished from the cluster (null in the refreshed state: an annotation removed or edited out of
/// band, see `observed_state`) is re-asserted in place, never a replacement, whose delete could wait forever on a
/// finalizer the broken object holds.
pub const RULES: PlanRules = PlanRules { repair_missing_in_place: true, defaults, refine };

/// The slice's name defaults to the provider cluster ID, and follows it (also when that changes), not the prior
/// state.
pub fn defaults(plan: &mut Plan) {
    if plan.config.get(attr::resource_slice_name).is_null() {
        let provider = plan.planned.get(attr::provider_cluster_id).clone();
        plan.planned.set(attr::resource_slice_name, provider);
    }
}

/// The virtual node's name ([`virtual_node_name`]): unknown while `create_virtual_node` is.
pub fn refine(plan: &mut Plan) {
    let slice = plan.planned.get(attr::resource_slice_name).clone();
    let name = match plan.planned.get(attr::create_virtual_node).as_bool() {
        Some(create_virtual_node) => virtual_node_name(create_virtual_node, slice).unwrap_or_default(),
        None => Value::Unknown,
    };
    plan.planned.set(attr::virtual_node_name, name);
    // The grant only changes when the request does (or on a new slice, which the rules cover).
    if plan.changed(attr::resources) {
        plan.recompute(attr::accepted_resources);
    }
}
