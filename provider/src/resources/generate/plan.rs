//! `liqo_generate`'s plan: another peer or another namespace is another peering side, so it replaces the
//! resource; the cluster's facts and the public key are known once applied and kept while the peering stays.
use liqo_schema::liqo::labels;
use liqo_schema::tf::Value;

use super::schema::attr;
use crate::resources::lifecycle::{Plan, PlanRules};

pub const RULES: PlanRules = PlanRules { repair_missing_in_place: false, defaults, refine };

/// Liqo's own name for the tenant namespace of `remote`.
pub fn default_namespace(remote: &str) -> String {
    format!("{}{remote}", labels::TENANT_NAMESPACE_PREFIX)
}

/// `tenant_namespace` (and `id`, its name) defaulted before the rules compare it with the prior state.
pub fn defaults(plan: &mut Plan) {
    // The default follows the configuration, not the prior state: a new peer ID means a new default namespace.
    let namespace = match (plan.config.get(attr::tenant_namespace), plan.config.get(attr::remote_cluster_id)) {
        (Value::Null, Value::String(remote)) => Value::string(default_namespace(remote)),
        (Value::Null, _) => Value::Unknown,
        (explicit, _) => explicit.clone(),
    };
    plan.planned.set(attr::tenant_namespace, namespace);
}

/// `key_secret_name` is an output known at plan time on a fresh resource, which the `outputs` rule (unknown when
/// fresh) cannot say.
pub fn refine(plan: &mut Plan) {
    // An imported key Secret (or its absence) stays as found; a create writes `gw-keys`.
    let name = if plan.fresh() {
        Value::string(labels::KEY_SECRET_NAME)
    } else {
        Value::opt_string(attr::Generate::of(plan.prior).key_secret_name)
    };
    plan.planned.set(attr::key_secret_name, name);
}
