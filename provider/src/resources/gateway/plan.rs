//! `liqo_gateway`'s plan: a new namespace, peer or role is a new gateway; a new Service shape is a new
//! GatewayServer inside the update (the endpoint moves); any other update re-reads the Connection.
use liqo_schema::liqo::labels;
use liqo_schema::tf::Value;

use super::schema::{DEFAULT_MTU, DEFAULT_PROTOCOL, DEFAULT_SERVER_PORT, DEFAULT_SERVICE_TYPE};
use crate::resources::lifecycle::{Plan, PlanRules};

/// `server` or `client` is the gateway's role: switching it replaces the gateway, a change inside it does not.
pub const RULES: PlanRules = PlanRules {
    replace_on_change: &["tenant_namespace", "remote_cluster_id"],
    repair_missing_in_place: false,
    replace_on_presence_change: &["server", "client"],
    outputs: &["id", "endpoint_addresses", "endpoint_port", "connection_status"],
    defaults,
    refine,
};

/// Server fields whose change makes liqoctl delete and recreate the GatewayServer; we do the same in update.
const SERVER_RECREATE_FIELDS: &[&str] = &["service_type", "port", "node_port", "load_balancer_ip"];

/// The config value, or `default` when the config leaves it unset (unknown stays unknown). Defaults come from
/// the config rather than the proposed state so that removing an argument returns it to its default.
pub fn or_default(config: &Value, default: Value) -> Value {
    if config.is_null() { default } else { config.clone() }
}

/// The nested `server`/`client` object with its defaults filled in.
fn plan_nested(config: &Value, defaults: &[(&str, Value)]) -> Value {
    if config.is_null() || config.is_unknown() {
        return config.clone();
    }
    let mut planned = config.clone();
    for (name, default) in defaults {
        planned.set(name, or_default(config.get(name), default.clone()));
    }
    planned
}

pub fn id_of(namespace: &Value, remote: &Value) -> Value {
    match (namespace.as_str(), remote.as_str()) {
        (Some(ns), Some(r)) => Value::string(format!("{ns}/{r}")),
        _ => Value::Unknown,
    }
}

/// The server's Service shape changed: Liqo needs a new GatewayServer (and the endpoint may move).
pub fn server_needs_recreate(prior: &Value, planned: &Value) -> bool {
    let (p, n) = (prior.get("server"), planned.get("server"));
    if p.is_null() || n.is_null() {
        return false;
    }
    n.is_unknown() || SERVER_RECREATE_FIELDS.iter().any(|f| p.get(f) != n.get(f))
}

/// True when anything but the computed outputs differs between prior state and plan.
fn planned_inputs_differ(prior: &Value, planned: &Value) -> bool {
    match (prior.entries(), planned.entries()) {
        (Some(p), Some(n)) => n.iter().any(|(k, v)| !RULES.outputs.contains(&k.as_str()) && p.get(k) != Some(v)),
        _ => true,
    }
}

pub fn defaults(plan: &mut Plan) {
    let config = plan.config;
    // A gateway imported from `liqoctl peer` names no key Secret (Liqo generates its own): it keeps none.
    let liqo_keys = !plan.creating() && plan.prior.get("key_secret_name").is_null();
    let default_keys = if liqo_keys { Value::Null } else { Value::string(labels::KEY_SECRET_NAME) };
    let planned = &mut plan.planned;
    planned.set("key_secret_name", or_default(config.get("key_secret_name"), default_keys));
    planned.set("mtu", or_default(config.get("mtu"), Value::Number(DEFAULT_MTU as f64)));
    planned.set("wait_for_connection", or_default(config.get("wait_for_connection"), Value::Bool(true)));
    planned.set(
        "server",
        plan_nested(
            config.get("server"),
            &[
                ("service_type", Value::string(DEFAULT_SERVICE_TYPE)),
                ("port", Value::Number(DEFAULT_SERVER_PORT as f64)),
            ],
        ),
    );
    planned.set("client", plan_nested(config.get("client"), &[("protocol", Value::string(DEFAULT_PROTOCOL))]));
}

pub fn refine(plan: &mut Plan) {
    if plan.fresh() {
        // Known as soon as its inputs are; the rules left every output unknown on a new gateway.
        let id = id_of(plan.planned.get("tenant_namespace"), plan.planned.get("remote_cluster_id"));
        plan.planned.set("id", id);
        // A client has no endpoint; `server` may itself be unknown, then so are the outputs.
        let endpoint = if plan.planned.get("server").is_null() { Value::Null } else { Value::Unknown };
        plan.planned.set("endpoint_addresses", endpoint.clone());
        plan.planned.set("endpoint_port", endpoint);
        plan.recompute("connection_status");
        return;
    }
    if server_needs_recreate(plan.prior, &plan.planned) {
        plan.recompute("endpoint_addresses");
        plan.recompute("endpoint_port");
    }
    // Any update may restart the gateway, and apply re-reads the Connection.
    if planned_inputs_differ(plan.prior, &plan.planned) {
        plan.recompute("connection_status");
    }
}
