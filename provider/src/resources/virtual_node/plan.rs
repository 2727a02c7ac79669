//! `liqo_virtual_node`'s plan: its attributes declare it all (what replaces it, what updates in place); the id
//! comes from the import ID.
use crate::resources::lifecycle::{PlanRules, no_hook};

/// A VirtualNode made without this resource (`liqoctl create virtualnode`) names no slice: an import reads
/// `resource_slice_name` as null, and the first apply labels it in place instead of replacing the node.
pub const RULES: PlanRules = PlanRules { repair_missing_in_place: true, defaults: no_hook, refine: no_hook };
