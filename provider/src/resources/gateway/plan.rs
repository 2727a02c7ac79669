//! `liqo_gateway`'s plan: a new namespace, peer or role is a new gateway; a new Service shape is a new
//! GatewayServer inside the update (the endpoint moves); any other update re-reads the Connection.
use liqo_schema::liqo::labels;
use liqo_schema::tf::Value;

use super::schema::attr;
use super::schema::attr::server;
use crate::attributes::Key;
use crate::resources::lifecycle::{Plan, PlanRules};

/// `server` or `client` is the gateway's role: switching it replaces the gateway, a change inside it does not.
pub const RULES: PlanRules = PlanRules { repair_missing_in_place: false, defaults, refine };

/// Server fields whose change makes liqoctl delete and recreate the GatewayServer; we do the same in update.
const SERVER_RECREATE_FIELDS: [Key; 4] =
    [server::service_type, server::port, server::node_port, server::load_balancer_ip];

/// The inputs Liqo's IPAM maps into `remapped_pod_cidrs` and `remapped_external_cidr`.
const REMAPPED_FROM: [Key; 2] = [attr::remote_pod_cidrs, attr::remote_external_cidr];

/// The server's Service shape changed: Liqo needs a new GatewayServer (and the endpoint may move).
pub fn server_needs_recreate(prior: &Value, planned: &Value) -> bool {
    let (p, n) = (prior.get(attr::server), planned.get(attr::server));
    if p.is_null() || n.is_null() {
        return false;
    }
    n.is_unknown() || SERVER_RECREATE_FIELDS.iter().any(|f| p.get(*f) != n.get(*f))
}

/// True when anything but the computed outputs differs between prior state and plan.
fn planned_inputs_differ(prior: &Value, planned: &Value) -> bool {
    match (prior.entries(), planned.entries()) {
        (Some(p), Some(n)) => {
            let outputs: Vec<Key> = crate::attributes::outputs(&attr::declared()).collect();
            n.iter().any(|(k, v)| !outputs.iter().any(|o| o.name() == k) && p.get(k) != Some(v))
        }
        _ => true,
    }
}

/// A gateway imported from `liqoctl peer` names no key Secret (Liqo generates its own): it keeps none.
pub fn defaults(plan: &mut Plan) {
    if plan.config.get(attr::key_secret_name).is_null() {
        let liqo_keys = !plan.creating() && attr::Gateway::of(plan.prior).key_secret_name.is_none();
        let default_keys = if liqo_keys { Value::Null } else { Value::string(labels::KEY_SECRET_NAME) };
        plan.planned.set(attr::key_secret_name, default_keys);
    }
}

pub fn refine(plan: &mut Plan) {
    if plan.fresh() {
        // A client has no endpoint; `server` may itself be unknown, then so are the outputs.
        let endpoint = if plan.planned.get(attr::server).is_null() { Value::Null } else { Value::Unknown };
        plan.planned.set(attr::endpoint_addresses, endpoint.clone());
        plan.planned.set(attr::endpoint_port, endpoint);
        plan.recompute(attr::connection_status);
        plan.recompute(attr::remapped_pod_cidrs);
        plan.recompute(attr::remapped_external_cidr);
        return;
    }
    // New peer CIDRs: Liqo's IPAM maps them anew.
    if REMAPPED_FROM.iter().any(|k| plan.prior.get(*k) != plan.planned.get(*k)) {
        plan.recompute(attr::remapped_pod_cidrs);
        plan.recompute(attr::remapped_external_cidr);
    }
    if server_needs_recreate(plan.prior, &plan.planned) {
        plan.recompute(attr::endpoint_addresses);
        plan.recompute(attr::endpoint_port);
    }
    // Any update may restart the gateway, and apply re-reads the Connection.
    if planned_inputs_differ(plan.prior, &plan.planned) {
        plan.recompute(attr::connection_status);
    }
}
