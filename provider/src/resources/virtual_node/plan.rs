//! `liqo_virtual_node`'s plan: its attributes declare most of it (what replaces it, what updates in place); the id
//! comes from the import ID.
use super::schema::attr;
use crate::resources::lifecycle::{Plan, PlanRules};

/// A VirtualNode made without this resource (`liqoctl create virtualnode`) names no slice: an import reads
/// `resource_slice_name` as null, and the first apply labels it in place instead of replacing the node.
pub const RULES: PlanRules = PlanRules { repair_missing_in_place: true, refine, ..PlanRules::NONE };

/// Classes left out are the slice's, read when a node is made: unknown until then.
fn refine(plan: &mut Plan) {
    if plan.fresh() {
        for key in [attr::storage_classes, attr::ingress_classes, attr::load_balancer_classes] {
            if plan.config.get(key).is_null() {
                plan.recompute(key);
            }
        }
    }
}
