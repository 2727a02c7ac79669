//! `liqo_gateway`'s state from what the cluster holds (read, import, the outputs of an apply) and its import ID.
use std::collections::BTreeMap;

use base64::Engine;
use liqo_schema::liqo::{Configuration, Connection, EndpointStatus, GatewayClient, GatewayServer, PublicKey, labels};
use liqo_schema::tf::{Diagnostic, Value};

use super::plan::{id_of, or_default};
use super::status::status_value;
use crate::validate;

/// The gateway object of either kind as read from the cluster.
pub enum GatewayObj {
    Server(GatewayServer),
    Client(GatewayClient),
}

impl GatewayObj {
    pub fn uid(&self) -> Option<&str> {
        match self {
            GatewayObj::Server(g) => g.metadata.uid.as_deref(),
            GatewayObj::Client(g) => g.metadata.uid.as_deref(),
        }
    }

    /// The peer the gateway is labelled for; `name` (liqoctl's and this provider's naming) when unlabelled.
    pub fn remote_cluster_id(&self, name: &str) -> String {
        match self {
            GatewayObj::Server(g) => g.metadata.labels.as_ref(),
            GatewayObj::Client(g) => g.metadata.labels.as_ref(),
        }
        .and_then(|l| l.get(labels::REMOTE_CLUSTER_ID).cloned())
        .unwrap_or_else(|| name.to_string())
    }
}

/// What the cluster holds for one gateway resource.
pub struct Observed {
    pub configuration: Configuration,
    pub public_key: PublicKey,
    pub gateway: GatewayObj,
    pub connection: Option<Connection>,
}

/// Outputs computed by an apply.
pub struct Outputs {
    pub endpoint: Option<EndpointStatus>,
    pub connection_status: String,
}

/// Which kind of gateway to look for.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Kind {
    Server,
    Client,
}

/// Replaces every unknown with null: the state of a failed create must be wholly known.
pub fn unknown_as_null(v: &Value) -> Value {
    match v {
        Value::Unknown => Value::Null,
        Value::List(x) => Value::List(x.iter().map(unknown_as_null).collect()),
        Value::Set(x) => Value::Set(x.iter().map(unknown_as_null).collect()),
        Value::Tuple(x) => Value::Tuple(x.iter().map(unknown_as_null).collect()),
        Value::Map(m) => Value::Map(m.iter().map(|(k, v)| (k.clone(), unknown_as_null(v))).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), unknown_as_null(v))).collect()),
        other => other.clone(),
    }
}

fn string_map_value(m: Option<&BTreeMap<String, String>>, prior: &Value) -> Value {
    match m {
        Some(m) if !m.is_empty() => Value::string_map(m.clone()),
        // Empty and absent are the same to Liqo: keep whichever the configuration used.
        _ if matches!(prior, Value::Map(p) if p.is_empty()) => Value::Map(BTreeMap::new()),
        _ => Value::Null,
    }
}

fn opt_number(n: Option<i64>) -> Value {
    n.map(|n| Value::Number(n as f64)).unwrap_or(Value::Null)
}

/// Builds the resource state from the cluster. Fields we own are taken from the objects (so out-of-band edits
/// show as drift); timeouts and `wait_for_connection` come from `prior`. Endpoint outputs keep their prior value
/// while Liqo has no endpoint to report (e.g. the gateway pod is restarting).
pub fn state_from_observed(prior: &Value, obs: &Observed, namespace: &str, name: &str) -> Value {
    let mut state = Value::object([
        ("id", Value::string(format!("{namespace}/{name}"))),
        ("tenant_namespace", Value::string(namespace)),
        ("timeouts", prior.get("timeouts").clone()),
        ("wait_for_connection", or_default(prior.get("wait_for_connection"), Value::Bool(true))),
    ]);
    state.set("remote_cluster_id", Value::string(obs.gateway.remote_cluster_id(name)));

    let cidr = obs.configuration.spec.remote.as_ref().and_then(|r| r.cidr.as_ref());
    state.set("remote_pod_cidrs", Value::string_list(cidr.and_then(|c| c.pod.clone()).unwrap_or_default()));
    state.set(
        "remote_external_cidr",
        Value::opt_string(cidr.and_then(|c| c.external.as_ref()).and_then(|e| e.first().cloned())),
    );
    state.set(
        "remote_public_key",
        Value::opt_string(
            obs.public_key.spec.public_key.as_ref().map(|k| base64::engine::general_purpose::STANDARD.encode(&k.0)),
        ),
    );

    let (mtu, secret) = match &obs.gateway {
        GatewayObj::Server(g) => (g.spec.mtu, g.spec.secret_ref.as_ref().and_then(|s| s.name.clone())),
        GatewayObj::Client(g) => (g.spec.mtu, g.spec.secret_ref.as_ref().and_then(|s| s.name.clone())),
    };
    // liqoctl writes `secretRef: {name: ""}` on gateways whose keys Liqo generates (a Go struct, not a pointer):
    // no key Secret of ours, the same as no secretRef.
    let secret = secret.filter(|name| !name.is_empty());
    state.set("mtu", opt_number(mtu));
    state.set("key_secret_name", Value::opt_string(secret));

    match &obs.gateway {
        GatewayObj::Server(g) => {
            let e = g.spec.endpoint.clone().unwrap_or_default();
            let prior_server = prior.get("server");
            state.set(
                "server",
                Value::object([
                    // The CRD defaults serviceType to ClusterIP when absent.
                    ("service_type", Value::string(e.service_type.unwrap_or_else(|| "ClusterIP".into()))),
                    ("port", opt_number(e.port.map(i64::from))),
                    ("node_port", opt_number(e.node_port.map(i64::from))),
                    ("load_balancer_ip", Value::opt_string(e.load_balancer_ip)),
                    (
                        "service_annotations",
                        string_map_value(g.spec.service_annotations.as_ref(), prior_server.get("service_annotations")),
                    ),
                    (
                        "service_labels",
                        string_map_value(g.spec.service_labels.as_ref(), prior_server.get("service_labels")),
                    ),
                ]),
            );
            state.set("client", Value::Null);
            match g.status.as_ref().and_then(|s| s.endpoint.as_ref()).filter(|e| e.is_ready()) {
                Some(e) => {
                    let addrs = e.addresses.iter().flatten().filter(|a| !a.is_empty()).cloned();
                    state.set("endpoint_addresses", Value::string_list(addrs));
                    state.set("endpoint_port", opt_number(e.port.map(i64::from)));
                }
                None => {
                    state.set("endpoint_addresses", prior.get("endpoint_addresses").clone());
                    state.set("endpoint_port", prior.get("endpoint_port").clone());
                }
            }
        }
        GatewayObj::Client(g) => {
            let e = g.spec.endpoint.clone().unwrap_or_default();
            state.set(
                "client",
                Value::object([
                    ("addresses", Value::string_list(e.addresses.unwrap_or_default())),
                    ("port", opt_number(e.port.map(i64::from))),
                    ("protocol", Value::opt_string(e.protocol)),
                ]),
            );
            state.set("server", Value::Null);
            state.set("endpoint_addresses", Value::Null);
            state.set("endpoint_port", Value::Null);
        }
    }
    state.set("connection_status", Value::string(obs.connection.as_ref().map(status_value).unwrap_or_default()));
    state
}

/// Fills the outputs left unknown by the plan; known planned values are kept (apply must return them).
pub fn fill_outputs(planned: &Value, out: &Outputs) -> Value {
    let mut state = planned.clone();
    if state.get("endpoint_addresses").is_unknown() || state.get("endpoint_port").is_unknown() {
        let e = out.endpoint.as_ref();
        let addrs = e.map(|e| Value::string_list(e.addresses.iter().flatten().filter(|a| !a.is_empty()).cloned()));
        state.set("endpoint_addresses", addrs.unwrap_or(Value::Null));
        state.set("endpoint_port", opt_number(e.and_then(|e| e.port).map(i64::from)));
    }
    if state.get("connection_status").is_unknown() {
        state.set("connection_status", Value::string(out.connection_status.clone()));
    }
    if state.get("id").is_unknown() {
        let id = id_of(state.get("tenant_namespace"), state.get("remote_cluster_id"));
        state.set("id", id);
    }
    unknown_as_null(&state)
}

pub fn kind_of(state: &Value) -> Kind {
    if state.get("server").is_null() { Kind::Client } else { Kind::Server }
}

pub fn parse_import_id(id: &str) -> Result<(String, String), Diagnostic> {
    let bad = || {
        Diagnostic::error(
            "Invalid import ID for liqo_gateway",
            format!(
                "`{id}` is not `<tenant_namespace>/<gateway name>` (the gateway name is the peer's cluster ID), e.g. `liqo-tenant-rome/rome`."
            ),
        )
    };
    let (ns, name) = id.split_once('/').ok_or_else(bad)?;
    if validate::check_dns_label(ns).is_err() || validate::check_dns_label(name).is_err() || name.contains('/') {
        return Err(bad());
    }
    Ok((ns.to_string(), name.to_string()))
}
