//! `liqo_consumer_key`'s plan: a new namespace or provider is a new key; the CSR and the cluster ID it names are
//! known once the key is made.
use liqo_schema::tf::Value;

use super::schema::attr;
use crate::resources::lifecycle::{Plan, PlanRules};
use crate::resources::shared::control_plane_key::key_secret_name;

pub const RULES: PlanRules = PlanRules { refine, ..PlanRules::NONE };

/// `id` and `key_secret_name` follow from the inputs.
pub fn refine(plan: &mut Plan) {
    let provider = plan.planned.get(attr::provider_cluster_id).clone();
    plan.planned.set(
        attr::key_secret_name,
        provider.as_str().map(|p| Value::string(key_secret_name(p))).unwrap_or(Value::Unknown),
    );
}
