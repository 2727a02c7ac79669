//! `liqo_gateway`: the network half of a peering on one cluster.
//!
//! Owns, in the tenant namespace for the peer (all named after the peer's cluster ID and labelled
//! `liqo.io/remote-cluster-id`):
//! - a `Configuration` carrying the peer's pod and external CIDRs (`spec.remote`; Liqo fills `spec.local`),
//! - a `PublicKey` carrying the peer's WireGuard public key,
//! - a `GatewayServer` (the side that listens) **or** a `GatewayClient` (the side that dials), referencing the key
//!   Secret made by `liqo_generate` and Liqo's default WireGuard templates in the Liqo namespace.
//!
//! Waits: Configuration `NetworkCIDRsConfigured` (or the pre-1.2 `status.remote` fields); server →
//! `status.endpoint` (exposed as `endpoint_addresses`/`endpoint_port` for the peer's client); client → the
//! gateway's `Connection` reaching `Connected` (an `Error` lasting past a grace period fails the apply).
//!
//! Changing the server's service type, port, node port or load-balancer IP deletes and recreates the
//! GatewayServer inside the update, as `liqoctl network connect` does when the existing server's Service shape
//! differs, keeping the Configuration and PublicKey; the new endpoint flows to the client through the plan.
//!
//! Import ID: `<tenant_namespace>/<gateway name>`; the gateway name is the peer's cluster ID.
use crate::cluster_api::ClusterApi;
use crate::errors::{op_diags, op_error};
use crate::kube::events::{regarding, warnings_about};
use crate::kube::{OpError, Verdict, WaitTarget};
use crate::protocol::{
    ApplyRequest, ApplyResponse, Ctx, ImportedResource, PlanRequest, PlanResponse, ReadResponse, Resource,
};
use crate::resources::common::changed;
use crate::resources::lifecycle::{Deadline, Timeouts, timeouts_block};
use crate::validate::{self, Validator};
use async_trait::async_trait;
use base64::Engine;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta};
use liqo_schema::liqo::{
    CONNECTION_CONNECTED, CONNECTION_ERROR, ClusterConfig, ClusterConfigCidr, Configuration, ConfigurationSpec,
    Connection, EndpointStatus, GatewayClient, GatewayClientSpec, GatewayServer, GatewayServerEndpoint,
    GatewayServerSpec, NETWORK_CIDRS_CONFIGURED, PublicKey, PublicKeySpec, SecretReference, WgGatewayClient,
    WgGatewayServer, find_condition, labels,
};
use liqo_schema::tf::{Attribute, AttributePath, Block, Diagnostic, Diagnostics, Nesting, Schema, Type, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const DEFAULT_MTU: i64 = 1340;
const DEFAULT_SERVER_PORT: i64 = 51840;
/// liqoctl's `--gw-server-service-type` default.
const DEFAULT_SERVICE_TYPE: &str = "LoadBalancer";
const DEFAULT_PROTOCOL: &str = "UDP";
const SERVICE_TYPES: &[&str] = &["NodePort", "LoadBalancer", "ClusterIP"];
/// Liqo's WireGuard gateways listen on UDP only: the server template's Service port and wireguard-go's socket are
/// UDP (`liqo-wireguard-gateway-server-template.yaml`), so a client dialling TCP would never reach it.
const PROTOCOLS: &[&str] = &["UDP"];
/// MTU bounds: 576 is the smallest datagram every IPv4 host accepts, 9000 the usual jumbo-frame size.
const MTU_RANGE: std::ops::RangeInclusive<i64> = 576..=9000;
/// Kubernetes' default NodePort range (`--service-node-port-range`).
const NODE_PORT_RANGE: std::ops::RangeInclusive<i64> = 30000..=32767;
/// A Connection may go Connecting → Error → Connected while the tunnel comes up; only an `Error` lasting
/// longer than this fails the apply. Measured on real Liqo v1.2.0 on a loaded 2-core machine: a client gateway
/// recreated after its Configuration was deleted out of band stayed in `Error` for 29 s in one run and more than
/// 30 s in another before its pings went through again (10 s, then 30 s, were too short).
const ERROR_GRACE: Duration = Duration::from_secs(60);
/// A `Connected` that predates the apply must hold this long before an update counts as done: Liqo's ping-based
/// checker needs about this long to notice that a changed key, endpoint or MTU broke the tunnel. For a
/// Connection without latency measurements (nothing tells a fresh `Connected` from the one before the change).
const SETTLE: Duration = Duration::from_secs(10);
/// Liqo's gateway writes the latency it measured at least every `--ping-update-status-interval` (10 s) while
/// Connected, and turns the Connection to `Error` after `--ping-loss-threshold` lost pings (5 × 2 s): within this
/// window after a change, one or the other shows whether the tunnel survived it.
const FRESH_MEASUREMENT: Duration = Duration::from_secs(30);
/// A measurement counts as taken after the change only if it is this much younger than the change (Liqo's
/// `--ping-interval`): a ping sent just before Liqo's wireguard applied the change proves nothing.
const PING_INTERVAL: Duration = Duration::from_secs(2);
/// How long to wait for the key Secret to appear (it may be created concurrently by liqo_generate when the
/// configuration passes names as literals rather than references).
const SECRET_WAIT: Duration = Duration::from_secs(30);
const DEFAULT_TIMEOUTS: Timeouts =
    Timeouts { create: Duration::from_secs(600), update: Duration::from_secs(600), delete: Duration::from_secs(300) };

/// Server fields whose change makes liqoctl delete and recreate the GatewayServer; we do the same in update.
const SERVER_RECREATE_FIELDS: &[&str] = &["service_type", "port", "node_port", "load_balancer_ip"];

pub struct GatewayResource {
    cluster: Arc<ClusterApi>,
}

impl GatewayResource {
    pub fn new(cluster: Arc<ClusterApi>) -> GatewayResource {
        GatewayResource { cluster }
    }
}

/// `gateway` as the protocol layer serves it.
pub fn resource(cluster: Arc<ClusterApi>) -> Arc<dyn Resource> {
    Arc::new(GatewayResource::new(cluster))
}

// ---------------------------------------------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------------------------------------------

fn schema() -> Schema {
    let server = Attribute::nested(
        "server",
        Nesting::Single,
        vec![
            Attribute::optional_computed("service_type", Type::String).describe(format!(
                "How the gateway is exposed: `NodePort`, `LoadBalancer` or `ClusterIP` (default `{DEFAULT_SERVICE_TYPE}`, as liqoctl). Changing it recreates the GatewayServer (new endpoint) inside the update."
            )),
            Attribute::optional_computed("port", Type::Number).describe(format!(
                "WireGuard listen port and Service port (default `{DEFAULT_SERVER_PORT}`). Changing it recreates the GatewayServer inside the update."
            )),
            Attribute::optional("node_port", Type::Number).describe(
                "Fixed NodePort (30000–32767) for `NodePort` or `LoadBalancer` services, making the endpoint predictable. Changing it recreates the GatewayServer inside the update.",
            ),
            Attribute::optional("load_balancer_ip", Type::String).describe(
                "Fixed load-balancer IP for `LoadBalancer` services. Changing it recreates the GatewayServer inside the update.",
            ),
            Attribute::optional("service_annotations", Type::map(Type::String)).describe(
                "Annotations for the gateway's Service, e.g. cloud load-balancer settings (Liqo 1.2.0 or later). Updated in place.",
            ),
            Attribute::optional("service_labels", Type::map(Type::String))
                .describe("Labels for the gateway's Service (Liqo 1.2.0 or later). Updated in place."),
        ],
    )
    .with_optional()
    .describe(
        "Make this cluster the WireGuard **server** (usually the provider cluster). Exactly one of `server` and `client` must be set; switching between them replaces the resource.",
    );
    let client = Attribute::nested(
        "client",
        Nesting::Single,
        vec![
            Attribute::required("addresses", Type::list(Type::String)).describe(
                "Addresses (IPs or host names) of the server's endpoint; Liqo dials the first. Usually the server's `endpoint_addresses`. Updated in place.",
            ),
            Attribute::required("port", Type::Number)
                .describe("Port of the server's endpoint, usually the server's `endpoint_port`. Updated in place."),
            Attribute::optional_computed("protocol", Type::String).describe(format!(
                "Transport of the endpoint: only `{DEFAULT_PROTOCOL}` (the default), because Liqo's WireGuard server listens on UDP only (its gateway Service template exposes a UDP port); `TCP` is refused at plan time. Updated in place."
            )),
        ],
    )
    .with_optional()
    .describe(
        "Make this cluster the WireGuard **client** (usually the consumer cluster), dialling the peer's server. Exactly one of `server` and `client` must be set; switching between them replaces the resource.",
    );
    let attributes = vec![
        Attribute::computed("id", Type::String).describe("`<tenant_namespace>/<remote_cluster_id>`: namespace and name of the gateway object (also the import ID)."),
        Attribute::required("tenant_namespace", Type::String).describe(
            "Tenant namespace for the peer on this cluster (liqo_generate's `tenant_namespace`). All objects live there. Changing it replaces the resource.",
        ),
        Attribute::required("remote_cluster_id", Type::String).describe(
            "Cluster ID of the peer (the peer's liqo_generate `cluster_id`). Objects are named after it and labelled `liqo.io/remote-cluster-id`. Changing it replaces the resource.",
        ),
        Attribute::required("remote_pod_cidrs", Type::list(Type::String))
            .describe("The peer's pod CIDR(s) (the peer's liqo_generate `pod_cidrs`). Updated in place."),
        Attribute::required("remote_external_cidr", Type::String)
            .describe("The peer's external CIDR (the peer's liqo_generate `external_cidr`). Updated in place."),
        Attribute::required("remote_public_key", Type::String).describe(
            "The peer's WireGuard public key (the peer's liqo_generate `wireguard_public_key`: 32 bytes in standard base64). A wrong key leaves the tunnel in `Error`. Updated in place.",
        ),
        Attribute::optional_computed("key_secret_name", Type::String).describe(format!(
            "Name of this cluster's WireGuard key Secret in the tenant namespace (liqo_generate's `key_secret_name`, default `{}`). The private key never enters Terraform. Updated in place. A gateway imported from `liqoctl peer` has none (null): Liqo generates its keys (Secret `gw-<gateway>`), and the gateway keeps them.",
            labels::KEY_SECRET_NAME
        )),
        Attribute::optional_computed("mtu", Type::Number).describe(format!(
            "MTU of the WireGuard interface (default `{DEFAULT_MTU}`, {}–{}); must be equal on both sides. Updated in place.",
            MTU_RANGE.start(),
            MTU_RANGE.end()
        )),
        server,
        client,
        Attribute::optional_computed("wait_for_connection", Type::Bool).describe(
            "Client side: wait until the gateway's Connection is `Connected` (default `true`); an `Error` lasting more than 60s fails the apply. When `false`, the client waits only until Liqo has rendered the gateway. The server side never waits for the Connection (its client is created after it) but reports it in `connection_status`.",
        ),
        Attribute::computed("endpoint_addresses", Type::list(Type::String)).describe(
            "Server side: the addresses Liqo exposes the gateway on (`status.endpoint.addresses`); feed them to the peer's `client.addresses`. Null on the client side.",
        ),
        Attribute::computed("endpoint_port", Type::Number).describe(
            "Server side: the port Liqo exposes the gateway on (`status.endpoint.port`, the node port for `NodePort`); feed it to the peer's `client.port`. Null on the client side.",
        ),
        Attribute::computed("connection_status", Type::String).describe(
            "`status.value` of the gateway's Connection: `Connecting`, `Connected` or `Error`; empty while the gateway has not created it yet. Refreshed on every read.",
        ),
    ];
    Schema {
        version: 0,
        block: Block::new(
            "Network half of a Liqo peering on one cluster: the peer's CIDRs (Configuration), the peer's WireGuard public key (PublicKey) and a WireGuard gateway (GatewayServer or GatewayClient) in the tenant namespace. The server waits for its endpoint; the client waits for the tunnel to be `Connected`.",
            attributes,
        )
        .with_block(timeouts_block(DEFAULT_TIMEOUTS)),
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------------------------

fn validate(config: &Value) -> Diagnostics {
    let mut c = Validator::new(config);
    c.namespace("tenant_namespace");
    c.cluster_id("remote_cluster_id");
    let pods = config.get("remote_pod_cidrs");
    if matches!(pods, Value::List(v) if v.is_empty()) {
        c.error(
            AttributePath::root("remote_pod_cidrs"),
            "No pod CIDR for `remote_pod_cidrs`",
            "Give at least one pod CIDR of the peer (the peer's liqo_generate `pod_cidrs`).",
        );
    }
    for (i, v) in pods.elements().iter().enumerate() {
        c.cidr(AttributePath::root("remote_pod_cidrs").index(i as i64), v);
    }
    c.cidr(AttributePath::root("remote_external_cidr"), config.get("remote_external_cidr"));
    c.wireguard_key("remote_public_key");
    secret_name(&mut c, "key_secret_name");
    whole_number(&mut c, "mtu", MTU_RANGE, "WireGuard MTU");

    let (server, client) = (config.get("server"), config.get("client"));
    let known_null = |v: &Value| v.is_null();
    let known_set = |v: &Value| !v.is_null() && !v.is_unknown();
    if known_null(server) && known_null(client) {
        c.error(
            AttributePath::root("server"),
            "One of `server` and `client` is required",
            "Set `server = { … }` on the cluster that exposes the WireGuard endpoint (usually the provider) or `client = { … }` on the cluster that dials it (usually the consumer).",
        );
    }
    if known_set(server) && known_set(client) {
        c.error(
            AttributePath::root("client"),
            "Only one of `server` and `client` may be set",
            "A tenant namespace holds exactly one Liqo gateway: keep `server` on one cluster and `client` on its peer.",
        );
    }

    c.one_of("server.service_type", SERVICE_TYPES);
    c.port("server.port", 1..=65535);
    c.port("server.node_port", NODE_PORT_RANGE);
    let service_type = c.value("server.service_type");
    // An unset type means the default (LoadBalancer); an unknown one cannot be checked yet.
    let effective_type = if service_type.is_null() { Some(DEFAULT_SERVICE_TYPE) } else { service_type.as_str() };
    if !c.value("server.node_port").is_null() && effective_type == Some("ClusterIP") {
        c.error(
            AttributePath::parse("server.node_port"),
            "`server.node_port` needs a NodePort or LoadBalancer service",
            "A ClusterIP Service has no node port. Set `service_type = \"NodePort\"` (or `LoadBalancer`), or remove `node_port`.",
        );
    }
    let lb_ip = c.value("server.load_balancer_ip");
    if let Some(ip) = lb_ip.as_str()
        && ip.parse::<std::net::IpAddr>().is_err()
    {
        c.error(
            AttributePath::parse("server.load_balancer_ip"),
            "Invalid IP address for `server.load_balancer_ip`",
            format!("`{ip}` is not an IPv4 or IPv6 address."),
        );
    }
    if !lb_ip.is_null() && effective_type.is_some_and(|t| t != "LoadBalancer") {
        c.error(
            AttributePath::parse("server.load_balancer_ip"),
            "`server.load_balancer_ip` needs a LoadBalancer service",
            "Set `service_type = \"LoadBalancer\"`, or remove `load_balancer_ip`.",
        );
    }

    let addresses = c.value("client.addresses");
    if matches!(addresses, Value::List(v) if v.is_empty()) {
        c.error(
            AttributePath::parse("client.addresses"),
            "No address for `client.addresses`",
            "Give the server's endpoint address (usually the server's `endpoint_addresses`).",
        );
    }
    for (i, a) in addresses.elements().iter().enumerate() {
        if a.as_str().is_some_and(|s| s.trim().is_empty()) {
            c.error(
                AttributePath::parse("client.addresses").index(i as i64),
                "Empty address in `client.addresses`",
                "Each address must be an IP or host name of the server's endpoint.",
            );
        }
    }
    c.port("client.port", 1..=65535);
    if c.value("client.protocol").as_str() == Some("TCP") {
        c.error(
            AttributePath::parse("client.protocol"),
            "TCP is not supported for `client.protocol`",
            "Liqo's WireGuard gateway server listens on UDP only (the Service its template renders exposes a UDP \
             port, and WireGuard itself runs over UDP), so a client dialling TCP never connects. Remove `protocol` \
             or set it to `UDP`; if UDP cannot cross the network between the clusters, expose the server through a \
             path that carries UDP (NodePort or a LoadBalancer with UDP support).",
        );
    } else {
        c.one_of("client.protocol", PROTOCOLS);
    }
    c.timeouts();
    c.finish()
}

/// A Secret name: a DNS subdomain (lowercase alphanumerics, '-' and '.', at most 253 characters).
fn secret_name(c: &mut Validator, path: &str) {
    let Some(s) = c.value(path).as_str() else {
        return;
    };
    let valid = !s.is_empty() && s.len() <= 253 && s.split('.').all(|part| validate::check_dns_label(part).is_ok());
    if !valid {
        c.error(
            AttributePath::parse(path),
            format!("Invalid Secret name for `{path}`"),
            format!("`{s}` is not a valid Secret name (lowercase letters, digits, '-' and '.', at most 253 characters). Use liqo_generate's `key_secret_name`."),
        );
    }
}

fn whole_number(c: &mut Validator, path: &str, range: std::ops::RangeInclusive<i64>, what: &str) {
    let v = c.value(path);
    if let Value::Number(n) = v
        && !v.as_i64().is_some_and(|x| range.contains(&x))
    {
        c.error(
            AttributePath::parse(path),
            format!("Out of range for `{path}`"),
            format!("{n} is not a valid {what}: give a whole number between {} and {}.", range.start(), range.end()),
        );
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Plan
// ---------------------------------------------------------------------------------------------------------------

/// The config value, or `default` when the config leaves it unset (unknown stays unknown). Defaults come from
/// the config rather than the proposed state so that removing an argument returns it to its default.
fn or_default(config: &Value, default: Value) -> Value {
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

fn id_of(namespace: &Value, remote: &Value) -> Value {
    match (namespace.as_str(), remote.as_str()) {
        (Some(ns), Some(r)) => Value::string(format!("{ns}/{r}")),
        _ => Value::Unknown,
    }
}

/// Null/non-null of `server` or `client` differs (or cannot be known yet): the gateway changes kind.
fn role_switched(prior: &Value, planned: &Value, attr: &str) -> bool {
    let p = planned.get(attr);
    p.is_unknown() || prior.get(attr).is_null() != p.is_null()
}

/// The server's Service shape changed: Liqo needs a new GatewayServer (and the endpoint may move).
fn server_needs_recreate(prior: &Value, planned: &Value) -> bool {
    let (p, n) = (prior.get("server"), planned.get("server"));
    if p.is_null() || n.is_null() {
        return false;
    }
    n.is_unknown() || SERVER_RECREATE_FIELDS.iter().any(|f| p.get(f) != n.get(f))
}

fn plan(req: &PlanRequest) -> PlanResponse {
    let mut resp = PlanResponse {
        planned: Value::Null,
        requires_replace: Vec::new(),
        private: Vec::new(),
        diagnostics: Diagnostics::new(),
    };
    let config = &req.config;
    let mut planned = req.proposed.clone();
    // A gateway imported from `liqoctl peer` names no key Secret (Liqo generates its own): it keeps none.
    let liqo_keys = !req.prior.is_null() && req.prior.get("key_secret_name").is_null();
    let default_keys = if liqo_keys { Value::Null } else { Value::string(labels::KEY_SECRET_NAME) };
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

    let server_outputs_unknown = |planned: &mut Value| {
        let is_server = !planned.get("server").is_null();
        let v = |unknown: bool| if unknown { Value::Unknown } else { Value::Null };
        // `server` may itself be unknown: then the outputs are unknown too.
        planned.set("endpoint_addresses", v(is_server));
        planned.set("endpoint_port", v(is_server));
    };

    let prior = &req.prior;
    if prior.is_null() {
        planned.set("id", id_of(planned.get("tenant_namespace"), planned.get("remote_cluster_id")));
        server_outputs_unknown(&mut planned);
        planned.set("connection_status", Value::Unknown);
        resp.planned = planned;
        return resp;
    }

    for attr in ["tenant_namespace", "remote_cluster_id"] {
        if changed(prior, &planned, attr) {
            resp.requires_replace.push(AttributePath::root(attr));
        }
    }
    for attr in ["server", "client"] {
        if role_switched(prior, &planned, attr) {
            resp.requires_replace.push(AttributePath::root(attr));
        }
    }
    if !resp.requires_replace.is_empty() {
        planned.set("id", id_of(planned.get("tenant_namespace"), planned.get("remote_cluster_id")));
        server_outputs_unknown(&mut planned);
        planned.set("connection_status", Value::Unknown);
    } else {
        planned.set("id", prior.get("id").clone());
        if server_needs_recreate(prior, &planned) {
            server_outputs_unknown(&mut planned);
        } else {
            planned.set("endpoint_addresses", prior.get("endpoint_addresses").clone());
            planned.set("endpoint_port", prior.get("endpoint_port").clone());
        }
        // Any update may restart the gateway, and apply re-reads the Connection.
        let inputs_changed = planned_inputs_differ(prior, &planned);
        planned.set(
            "connection_status",
            if inputs_changed { Value::Unknown } else { prior.get("connection_status").clone() },
        );
    }
    resp.planned = planned;
    resp
}

/// True when anything but the computed outputs differs between prior state and plan.
fn planned_inputs_differ(prior: &Value, planned: &Value) -> bool {
    let outputs = ["id", "endpoint_addresses", "endpoint_port", "connection_status"];
    match (prior.entries(), planned.entries()) {
        (Some(p), Some(n)) => n.iter().any(|(k, v)| !outputs.contains(&k.as_str()) && p.get(k) != Some(v)),
        _ => true,
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Typed view of a planned state and the Liqo objects built from it
// ---------------------------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
struct ServerSpec {
    service_type: String,
    port: i32,
    node_port: Option<i32>,
    load_balancer_ip: Option<String>,
    service_annotations: Option<BTreeMap<String, String>>,
    service_labels: Option<BTreeMap<String, String>>,
}

#[derive(Clone, Debug, PartialEq)]
struct ClientSpec {
    addresses: Vec<String>,
    port: i32,
    protocol: String,
}

#[derive(Clone, Debug, PartialEq)]
enum Role {
    Server(ServerSpec),
    Client(ClientSpec),
}

/// Everything apply needs, read from a wholly known planned (or prior) state.
#[derive(Clone, Debug, PartialEq)]
struct GatewaySpec {
    namespace: String,
    remote_cluster_id: String,
    pod_cidrs: Vec<String>,
    external_cidr: String,
    public_key: Vec<u8>,
    /// None: Liqo generates the gateway's keys (`gw-<gateway>`), as for a gateway `liqoctl peer` made.
    key_secret_name: Option<String>,
    mtu: i64,
    role: Role,
    wait_for_connection: bool,
}

impl GatewaySpec {
    /// Fails only on values validation and plan already rule out; the message says which attribute.
    fn from_value(v: &Value) -> Result<GatewaySpec, Diagnostic> {
        let missing = |attr: &str| {
            Diagnostic::attr_error(
                attr,
                format!("`{attr}` is missing or not known at apply time"),
                "This is a bug in the provider's plan; please report it with the configuration that triggers it.",
            )
        };
        let s = |attr: &str| v.get(attr).as_str().map(str::to_string).ok_or_else(|| missing(attr));
        let int = |obj: &Value, attr: &str, path: &str| obj.get(attr).as_i64().ok_or_else(|| missing(path));
        let strings =
            |obj: &Value, attr: &str, path: &str| obj.get(attr).string_elements().ok_or_else(|| missing(path));
        let string_map = |obj: &Value, attr: &str| -> Option<BTreeMap<String, String>> {
            obj.get(attr)
                .entries()
                .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string()))).collect())
        };
        let key = s("remote_public_key")?;
        let public_key = base64::engine::general_purpose::STANDARD
            .decode(&key)
            .ok()
            .filter(|b| b.len() == 32)
            .ok_or_else(|| missing("remote_public_key"))?;
        let (server, client) = (v.get("server"), v.get("client"));
        let role = if !server.is_null() {
            Role::Server(ServerSpec {
                service_type: server
                    .get("service_type")
                    .as_str()
                    .ok_or_else(|| missing("server.service_type"))?
                    .to_string(),
                port: int(server, "port", "server.port")? as i32,
                node_port: server.get("node_port").as_i64().map(|p| p as i32),
                load_balancer_ip: server.get("load_balancer_ip").as_str().map(str::to_string),
                service_annotations: string_map(server, "service_annotations"),
                service_labels: string_map(server, "service_labels"),
            })
        } else if !client.is_null() {
            Role::Client(ClientSpec {
                addresses: strings(client, "addresses", "client.addresses")?,
                port: int(client, "port", "client.port")? as i32,
                protocol: client.get("protocol").as_str().ok_or_else(|| missing("client.protocol"))?.to_string(),
            })
        } else {
            return Err(missing("server"));
        };
        Ok(GatewaySpec {
            namespace: s("tenant_namespace")?,
            remote_cluster_id: s("remote_cluster_id")?,
            pod_cidrs: strings(v, "remote_pod_cidrs", "remote_pod_cidrs")?,
            external_cidr: s("remote_external_cidr")?,
            public_key,
            key_secret_name: v.get("key_secret_name").as_str().map(str::to_string),
            mtu: v.get("mtu").as_i64().ok_or_else(|| missing("mtu"))?,
            role,
            wait_for_connection: v.get("wait_for_connection").as_bool().unwrap_or(true),
        })
    }

    /// Every owned object is named after the peer (reference §3: liqoctl's default names).
    fn name(&self) -> &str {
        &self.remote_cluster_id
    }

    fn meta(&self, extra_labels: &[(&str, &str)]) -> ObjectMeta {
        let mut l = BTreeMap::from([(labels::REMOTE_CLUSTER_ID.to_string(), self.remote_cluster_id.clone())]);
        l.extend(extra_labels.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        ObjectMeta {
            name: Some(self.name().to_string()),
            namespace: Some(self.namespace.clone()),
            labels: Some(l),
            ..Default::default()
        }
    }

    /// Only `spec.remote`: `spec.local` is written by Liqo's controller and must stay its field.
    fn configuration(&self) -> Configuration {
        let mut c = Configuration::new(
            self.name(),
            ConfigurationSpec {
                local: None,
                remote: Some(ClusterConfig {
                    cidr: Some(ClusterConfigCidr {
                        pod: Some(self.pod_cidrs.clone()),
                        external: Some(vec![self.external_cidr.clone()]),
                    }),
                }),
            },
        );
        c.metadata = self.meta(&[]);
        c
    }

    fn public_key(&self) -> PublicKey {
        let mut k =
            PublicKey::new(self.name(), PublicKeySpec { public_key: Some(ByteString(self.public_key.clone())) });
        k.metadata = self.meta(&[(labels::GATEWAY_RESOURCE, labels::TRUE)]);
        k
    }

    fn template_ref(kind: &str, name: &str, liqo_namespace: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("networking.liqo.io/v1beta1".into()),
            kind: Some(kind.into()),
            name: Some(name.into()),
            namespace: Some(liqo_namespace.into()),
            ..Default::default()
        }
    }

    fn gateway_server(&self, s: &ServerSpec, liqo_namespace: &str) -> GatewayServer {
        let mut g = GatewayServer::new(
            self.name(),
            GatewayServerSpec {
                server_template_ref: Some(Self::template_ref(
                    "WgGatewayServerTemplate",
                    labels::WIREGUARD_SERVER_TEMPLATE,
                    liqo_namespace,
                )),
                mtu: Some(self.mtu),
                endpoint: Some(GatewayServerEndpoint {
                    port: Some(s.port),
                    service_type: Some(s.service_type.clone()),
                    node_port: s.node_port,
                    load_balancer_ip: s.load_balancer_ip.clone(),
                }),
                secret_ref: self.key_secret_name.clone().map(|name| SecretReference { name: Some(name) }),
                service_annotations: s.service_annotations.clone(),
                service_labels: s.service_labels.clone(),
            },
        );
        g.metadata = self.meta(&[]);
        g
    }

    fn gateway_client(&self, c: &ClientSpec, liqo_namespace: &str) -> GatewayClient {
        let mut g = GatewayClient::new(
            self.name(),
            GatewayClientSpec {
                client_template_ref: Some(Self::template_ref(
                    "WgGatewayClientTemplate",
                    labels::WIREGUARD_CLIENT_TEMPLATE,
                    liqo_namespace,
                )),
                mtu: Some(self.mtu),
                endpoint: Some(EndpointStatus {
                    addresses: Some(c.addresses.clone()),
                    port: Some(c.port),
                    protocol: Some(c.protocol.clone()),
                }),
                secret_ref: self.key_secret_name.clone().map(|name| SecretReference { name: Some(name) }),
            },
        );
        g.metadata = self.meta(&[]);
        g
    }

    fn selector(&self) -> String {
        format!("{}={}", labels::REMOTE_CLUSTER_ID, self.remote_cluster_id)
    }
}

/// Replaces every unknown with null: the state of a failed create must be wholly known.
fn unknown_as_null(v: &Value) -> Value {
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

// ---------------------------------------------------------------------------------------------------------------
// Waits (check functions are pure so they are unit-tested)
// ---------------------------------------------------------------------------------------------------------------

fn configuration_check(c: Option<&Configuration>) -> Verdict<()> {
    let Some(c) = c else {
        return Verdict::Pending("the Configuration does not exist".into());
    };
    if c.cidrs_configured() {
        return Verdict::Ready(());
    }
    let conditions = c.status.as_ref().and_then(|s| s.conditions.as_deref());
    let seen = match find_condition(conditions, NETWORK_CIDRS_CONFIGURED) {
        Some(cond) => format!(
            "condition {NETWORK_CIDRS_CONFIGURED} = {} (reason {:?}, message {:?}, observedGeneration {:?} vs generation {:?})",
            cond.status, cond.reason, cond.message, cond.observed_generation, c.metadata.generation
        ),
        None => "no NetworkCIDRsConfigured condition and no status.remote CIDRs yet (Liqo's Configuration controller remaps the peer's CIDRs)".into(),
    };
    Verdict::Pending(seen)
}

/// Server endpoint: at least one non-empty address and a non-zero port.
fn endpoint_check(g: Option<&GatewayServer>, service_type: &str) -> Verdict<EndpointStatus> {
    let Some(g) = g else {
        return Verdict::Pending("the GatewayServer does not exist".into());
    };
    match g.status.as_ref().and_then(|s| s.endpoint.as_ref()) {
        Some(e) if e.is_ready() => Verdict::Ready(e.clone()),
        Some(e) => Verdict::Pending(format!(
            "status.endpoint = addresses {:?}, port {:?}{}",
            e.addresses.clone().unwrap_or_default(),
            e.port,
            match service_type {
                "NodePort" => " (an empty address means the node running the gateway pod is NotReady)",
                "LoadBalancer" => " (the cloud load balancer has not been provisioned yet)",
                _ => "",
            }
        )),
        None => Verdict::Pending(
            "no status.endpoint yet: Liqo renders the WgGatewayServerTemplate into a gateway Deployment and Service `gw-<name>`; check they exist and the template is installed".into(),
        ),
    }
}

fn client_rendered_check(g: Option<&GatewayClient>) -> Verdict<()> {
    match g {
        None => Verdict::Pending("the GatewayClient does not exist".into()),
        Some(g) if g.status.as_ref().is_some_and(|s| s.client_ref.is_some()) => Verdict::Ready(()),
        Some(_) => Verdict::Pending(
            "no status.clientRef yet: Liqo renders the WgGatewayClientTemplate into a WgGatewayClient".into(),
        ),
    }
}

/// The key Secret exists, holds both keys and, if labelled for a peer, for this one.
fn key_secret_check(s: Option<&Secret>, remote_cluster_id: &str) -> Verdict<()> {
    let Some(s) = s else {
        return Verdict::Pending("the Secret does not exist".into());
    };
    if let Some(owner) = s.metadata.labels.as_ref().and_then(|l| l.get(labels::REMOTE_CLUSTER_ID))
        && owner != remote_cluster_id
    {
        return Verdict::Failed {
            reason: format!(
                "The Secret is labelled {}={owner}: it holds the keys for peer `{owner}`, not `{remote_cluster_id}`.",
                labels::REMOTE_CLUSTER_ID
            ),
            hint: format!(
                "Set key_secret_name to the `key_secret_name` of the liqo_generate whose remote_cluster_id is `{remote_cluster_id}`."
            ),
        };
    }
    let data = s.data.as_ref();
    let missing: Vec<&str> = [labels::WIREGUARD_PRIVATE_KEY, labels::WIREGUARD_PUBLIC_KEY]
        .into_iter()
        .filter(|k| !data.is_some_and(|d| d.contains_key(*k)))
        .collect();
    if !missing.is_empty() {
        return Verdict::Failed {
            reason: format!(
                "The Secret has no data key(s) {missing:?}; Liqo's gateway needs `privateKey` and `publicKey` (raw 32-byte WireGuard keys)."
            ),
            hint: "Let liqo_generate create the key Secret and pass its `key_secret_name` here.".into(),
        };
    }
    Verdict::Ready(())
}

/// The gateway's Connection among those labelled for the peer: the one owned by the gateway (by UID), or an
/// unowned one. Connections owned by an earlier gateway object are being garbage-collected and are ignored.
fn pick_connection<'a>(all: &'a [Connection], gateway_uid: Option<&str>) -> Result<Option<&'a Connection>, String> {
    let owned_by = |c: &Connection, uid: &str| {
        c.metadata.owner_references.as_ref().is_some_and(|o| o.iter().any(|r| r.uid == uid))
    };
    let mut mine: Vec<&Connection> = match gateway_uid {
        Some(uid) => all.iter().filter(|c| owned_by(c, uid)).collect(),
        None => Vec::new(),
    };
    if mine.is_empty() {
        mine = all.iter().filter(|c| c.metadata.owner_references.as_ref().is_none_or(|o| o.is_empty())).collect();
    }
    match mine.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        many => Err(format!(
            "{} Connections match ({}); Liqo expects exactly one per peer",
            many.len(),
            many.iter().map(|c| c.metadata.name.clone().unwrap_or_default()).collect::<Vec<_>>().join(", ")
        )),
    }
}

fn status_value(c: &Connection) -> String {
    c.status.as_ref().and_then(|s| s.value.clone()).unwrap_or_default()
}

fn connection_name(c: &Connection, namespace: &str) -> String {
    format!("Connection {namespace}/{}", c.metadata.name.clone().unwrap_or_default())
}

/// What a Connection check is looking for.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Waiting for `Connected` (or `Error`, which starts the grace period).
    Await,
    /// In `Error`: waiting for it to clear within [`ERROR_GRACE`].
    Grace,
    /// `Connected` was already there before this apply (it may predate the change): waiting for a latency Liqo
    /// measured after `fresh_after` (or, for a Connection without measurements, for it to stay so for
    /// [`SETTLE`], the time Liqo takes to report a broken tunnel).
    Settle { fresh_after: Timestamp },
}

/// Phase of the Connection wait as one check sees it.
#[derive(Debug, PartialEq)]
enum ConnPhase {
    /// `Connected` on the Connection with this UID, with the time of Liqo's latest latency measurement.
    Connected { uid: Option<String>, measured_at: Option<Timestamp> },
    /// `Error` seen on the Connection with this name (latency as Liqo reports it).
    Error { name: String, latency: Option<String> },
    /// Left `Error` (or `Connected` while settling) for something else, e.g. Connecting again: start over.
    Recovering,
}

fn connection_check(all: &[Connection], gateway_uid: Option<&str>, namespace: &str, mode: Mode) -> Verdict<ConnPhase> {
    let conn = match pick_connection(all, gateway_uid) {
        Ok(c) => c,
        Err(why) => {
            return Verdict::Failed {
                reason: why,
                hint: "Delete the stale Connection(s) (they belong to gateways that no longer exist) and apply again."
                    .into(),
            };
        }
    };
    let Some(conn) = conn else {
        if mode != Mode::Await {
            return Verdict::Ready(ConnPhase::Recovering);
        }
        return Verdict::Pending(
            "no Connection yet (the gateway creates it once WireGuard is configured with the peer's PublicKey)".into(),
        );
    };
    let object = connection_name(conn, namespace);
    let value = status_value(conn);
    let measured_at =
        conn.status.as_ref().and_then(|s| s.latency.as_ref()).and_then(|l| l.timestamp.as_ref()).map(|t| t.0);
    let connected = ConnPhase::Connected { uid: conn.metadata.uid.clone(), measured_at };
    match (value.as_str(), mode) {
        (CONNECTION_CONNECTED, Mode::Settle { fresh_after }) if measured_at.is_some_and(|at| at > fresh_after) => {
            Verdict::Ready(connected)
        }
        (CONNECTION_CONNECTED, Mode::Settle { .. }) => Verdict::Pending(format!(
            "{object} status.value = Connected; waiting for Liqo's gateway to measure the tunnel after the change"
        )),
        (CONNECTION_CONNECTED, _) => Verdict::Ready(connected),
        (CONNECTION_ERROR, Mode::Grace) => Verdict::Pending(format!("{object} status.value = Error")),
        (CONNECTION_ERROR, _) => Verdict::Ready(ConnPhase::Error {
            name: conn.metadata.name.clone().unwrap_or_default(),
            latency: conn.status.as_ref().and_then(|s| s.latency.as_ref()).and_then(|l| l.value.clone()),
        }),
        (_, Mode::Grace | Mode::Settle { .. }) => Verdict::Ready(ConnPhase::Recovering),
        ("", Mode::Await) => Verdict::Pending(format!("{object} has no status.value yet")),
        (other, Mode::Await) => Verdict::Pending(format!("{object} status.value = {other}")),
    }
}

/// The failure reported when a Connection stays in `Error`: Liqo's own words (its Warning events, since the
/// Connection status has no message field), then the checks that find the usual causes.
fn connection_error(
    namespace: &str,
    name: &str,
    latency: Option<String>,
    endpoint: &str,
    warnings: &[String],
) -> OpError {
    let reported =
        if warnings.is_empty() { String::new() } else { format!("\nLiqo reported: {}", warnings.join(" | ")) };
    OpError::Failed {
        object: format!("Connection {namespace}/{name}"),
        reason: format!(
            "status.value has been Error for more than {}s: the WireGuard tunnel to the server endpoint {endpoint} passes no traffic{}.{reported}",
            ERROR_GRACE.as_secs(),
            latency.map(|l| format!(" (last latency {l})")).unwrap_or_default()
        ),
        hint: format!(
            "Check, in this order:\n\
             1. UDP reachability: the gateway pods of this cluster must reach {endpoint} (firewalls, NAT, security groups, NodePort/LoadBalancer exposure of the server).\n\
             2. Key mismatch: each side's `remote_public_key` must be the *peer's* liqo_generate `wireguard_public_key` (and key_secret_name this cluster's own key Secret); a wrong key on either side makes the WireGuard handshake fail silently.\n\
             3. MTU: `mtu` must be equal on both sides."
        ),
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Cluster operations
// ---------------------------------------------------------------------------------------------------------------

/// Kube handles for the tenant namespace.
struct Apis {
    configurations: Api<Configuration>,
    public_keys: Api<PublicKey>,
    servers: Api<GatewayServer>,
    clients: Api<GatewayClient>,
    wg_servers: Api<WgGatewayServer>,
    wg_clients: Api<WgGatewayClient>,
    connections: Api<Connection>,
    secrets: Api<Secret>,
    events: Api<Event>,
    namespace: String,
}

impl Apis {
    fn new(client: kube::Client, namespace: &str) -> Apis {
        Apis {
            configurations: Api::namespaced(client.clone(), namespace),
            public_keys: Api::namespaced(client.clone(), namespace),
            servers: Api::namespaced(client.clone(), namespace),
            clients: Api::namespaced(client.clone(), namespace),
            wg_servers: Api::namespaced(client.clone(), namespace),
            wg_clients: Api::namespaced(client.clone(), namespace),
            connections: Api::namespaced(client.clone(), namespace),
            secrets: Api::namespaced(client.clone(), namespace),
            events: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
        }
    }
}

/// The gateway object of either kind as read from the cluster.
enum GatewayObj {
    Server(GatewayServer),
    Client(GatewayClient),
}

impl GatewayObj {
    fn uid(&self) -> Option<&str> {
        match self {
            GatewayObj::Server(g) => g.metadata.uid.as_deref(),
            GatewayObj::Client(g) => g.metadata.uid.as_deref(),
        }
    }
}

/// What the cluster holds for one gateway resource.
struct Observed {
    configuration: Configuration,
    public_key: PublicKey,
    gateway: GatewayObj,
    connection: Option<Connection>,
}

/// Outputs computed by an apply.
struct Outputs {
    endpoint: Option<EndpointStatus>,
    connection_status: String,
}

/// Which kind of gateway to look for.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Server,
    Client,
}

/// Adds Liqo's warnings about the awaited object to a timeout, so the error says why it never got ready.
async fn explain_timeout(ctx: &Ctx, apis: &Apis, err: OpError, about: impl Fn(&ObjectReference) -> bool) -> OpError {
    match err {
        OpError::Timeout { object, waiting_for, last_seen, after } => {
            let warnings = warnings_about(ctx, &apis.events, about).await;
            let last_seen = if warnings.is_empty() {
                last_seen
            } else {
                format!("{last_seen}; Liqo reported: {}", warnings.join(" | "))
            };
            OpError::Timeout { object, waiting_for, last_seen, after }
        }
        other => other,
    }
}

impl GatewayResource {
    async fn apis(&self, namespace: &str) -> Result<Apis, Diagnostics> {
        let client = self.cluster.client().await.map_err(Diagnostics::from)?;
        Ok(Apis::new(client, namespace))
    }

    /// Liqo allows one gateway per tenant namespace and finds it by label: refuse to add a second one.
    async fn check_single_gateway(ctx: &Ctx, apis: &Apis, spec: &GatewaySpec) -> Result<(), OpError> {
        let selector = spec.selector();
        let mut others: Vec<String> = crate::kube::list(ctx, &apis.servers, &selector)
            .await?
            .into_iter()
            .filter(|g| !(matches!(spec.role, Role::Server(_)) && g.metadata.name.as_deref() == Some(spec.name())))
            .map(|g| format!("GatewayServer {}/{}", apis.namespace, g.metadata.name.unwrap_or_default()))
            .collect();
        others.extend(
            crate::kube::list(ctx, &apis.clients, &selector)
                .await?
                .into_iter()
                .filter(|g| !(matches!(spec.role, Role::Client(_)) && g.metadata.name.as_deref() == Some(spec.name())))
                .map(|g| format!("GatewayClient {}/{}", apis.namespace, g.metadata.name.unwrap_or_default())),
        );
        if others.is_empty() {
            return Ok(());
        }
        Err(OpError::Failed {
            object: format!("{} {}/{}", if matches!(spec.role, Role::Server(_)) { "GatewayServer" } else { "GatewayClient" }, apis.namespace, spec.name()),
            reason: format!(
                "Another gateway for peer `{}` already exists in the namespace: {}. Liqo supports exactly one gateway per peer and tenant namespace.",
                spec.remote_cluster_id,
                others.join(", ")
            ),
            hint: "Delete it (`liqoctl network disconnect`, or destroy the liqo_gateway that owns it), or import it with `terraform import` instead of creating a new one.".into(),
        })
    }

    async fn wait_key_secret(ctx: &Ctx, apis: &Apis, spec: &GatewaySpec, deadline: &Deadline) -> Result<(), OpError> {
        let Some(key_secret_name) = &spec.key_secret_name else {
            return Ok(());
        };
        let budget = SECRET_WAIT.min(deadline.left());
        let remote = spec.remote_cluster_id.clone();
        let res =
            crate::kube::wait_for(ctx, &apis.secrets, key_secret_name, "the WireGuard key Secret", budget, move |s| {
                key_secret_check(s, &remote)
            })
            .await;
        match res {
            Err(OpError::Timeout { object, .. }) => Err(OpError::Failed {
                object,
                reason: format!("The WireGuard key Secret `{key_secret_name}` does not exist in namespace {}.", spec.namespace),
                hint: "Create it with liqo_generate (pass its `key_secret_name` and `tenant_namespace` to this resource so Terraform orders them), or set key_secret_name to the existing key Secret.".into(),
            }),
            other => other,
        }
    }

    /// Writes the three objects in Liqo's order and waits as the contract says. `recreate_server` deletes the
    /// existing GatewayServer first (its Service shape changed). `written` is set once any object exists.
    async fn converge(
        &self,
        ctx: &Ctx,
        apis: &Apis,
        spec: &GatewaySpec,
        recreate_server: bool,
        deadline: &Deadline,
        written: &mut bool,
    ) -> Result<Outputs, OpError> {
        let liqo_ns = self.cluster.liqo_namespace();
        Self::check_single_gateway(ctx, apis, spec).await?;
        // Connections present before anything is written may still report the state from before this apply.
        let preexisting: Vec<String> = crate::kube::list(ctx, &apis.connections, &spec.selector())
            .await?
            .into_iter()
            .filter_map(|c| c.metadata.uid)
            .collect();

        crate::kube::apply(ctx, &apis.configurations, &spec.configuration()).await?;
        *written = true;
        let configured = crate::kube::wait_for(
            ctx,
            &apis.configurations,
            spec.name(),
            "the peer's CIDRs to be configured (condition NetworkCIDRsConfigured=True for the current generation, or status.remote on Liqo < 1.2)",
            deadline.left(),
            configuration_check,
        )
        .await;
        if let Err(e) = configured {
            let about = regarding("Configuration", spec.name().to_string());
            return Err(explain_timeout(ctx, apis, e, about).await);
        }

        crate::kube::apply(ctx, &apis.public_keys, &spec.public_key()).await?;
        Self::wait_key_secret(ctx, apis, spec, deadline).await?;

        match &spec.role {
            Role::Server(s) => {
                if recreate_server {
                    crate::kube::delete_and_wait(ctx, &apis.servers, spec.name(), deadline.left()).await?;
                }
                let applied = crate::kube::apply(ctx, &apis.servers, &spec.gateway_server(s, &liqo_ns)).await?;
                let service_type = s.service_type.clone();
                let endpoint = match crate::kube::wait_for(
                    ctx,
                    &apis.servers,
                    spec.name(),
                    "status.endpoint with a non-empty address and a port",
                    deadline.left(),
                    move |g| endpoint_check(g, &service_type),
                )
                .await
                {
                    Ok(e) => e,
                    Err(e) => {
                        let about = regarding("GatewayServer", spec.name().to_string());
                        return Err(explain_timeout(ctx, apis, e, about).await);
                    }
                };
                let conns = crate::kube::list(ctx, &apis.connections, &spec.selector()).await?;
                let connection_status = pick_connection(&conns, applied.metadata.uid.as_deref())
                    .ok()
                    .flatten()
                    .map(status_value)
                    .unwrap_or_default();
                Ok(Outputs { endpoint: Some(endpoint), connection_status })
            }
            Role::Client(c) => {
                let applied = crate::kube::apply(ctx, &apis.clients, &spec.gateway_client(c, &liqo_ns)).await?;
                let uid = applied.metadata.uid.clone();
                if spec.wait_for_connection {
                    let endpoint =
                        format!("{}:{}/{}", c.addresses.first().cloned().unwrap_or_default(), c.port, c.protocol);
                    Self::wait_connected(ctx, apis, spec, uid.as_deref(), &preexisting, &endpoint, deadline).await?;
                    return Ok(Outputs { endpoint: None, connection_status: CONNECTION_CONNECTED.into() });
                }
                let rendered = crate::kube::wait_for(
                    ctx,
                    &apis.clients,
                    spec.name(),
                    "status.clientRef (the gateway rendered from the template)",
                    deadline.left(),
                    client_rendered_check,
                )
                .await;
                if let Err(e) = rendered {
                    let about = regarding("GatewayClient", spec.name().to_string());
                    return Err(explain_timeout(ctx, apis, e, about).await);
                }
                let conns = crate::kube::list(ctx, &apis.connections, &spec.selector()).await?;
                let connection_status =
                    pick_connection(&conns, uid.as_deref()).ok().flatten().map(status_value).unwrap_or_default();
                Ok(Outputs { endpoint: None, connection_status })
            }
        }
    }

    /// Waits for `Connected`. An `Error` that persists for [`ERROR_GRACE`] fails (it may flip
    /// Connecting → Error → Connected while the tunnel starts). A Connection that already existed before this
    /// apply (`preexisting` UIDs) may still show the state from before the change, so its `Connected` must hold
    /// for [`SETTLE`].
    async fn wait_connected(
        ctx: &Ctx,
        apis: &Apis,
        spec: &GatewaySpec,
        gateway_uid: Option<&str>,
        preexisting: &[String],
        endpoint: &str,
        deadline: &Deadline,
    ) -> Result<(), OpError> {
        let selector = spec.selector();
        let ns = apis.namespace.clone();
        // The objects were just applied: only a measurement taken after this shows the tunnel as changed.
        let fresh_after = Timestamp::now() + PING_INTERVAL;
        let mut mode = Mode::Await;
        let mut settle = SETTLE;
        let mut last_error: Option<(String, Option<String>)> = None;
        loop {
            let (budget, waiting_for) = match mode {
                Mode::Await => (deadline.left(), "status.value == Connected"),
                Mode::Grace => (ERROR_GRACE.min(deadline.left()), "the Connection to leave Error"),
                Mode::Settle { .. } => (settle.min(deadline.left()), "a fresh measurement of the tunnel"),
            };
            let target = WaitTarget::labelled(&apis.connections, &selector, waiting_for);
            let res = crate::kube::wait_until(ctx, &apis.connections, target, budget, |all: &[Connection]| {
                connection_check(all, gateway_uid, &ns, mode)
            })
            .await;
            match (mode, res) {
                (_, Ok(ConnPhase::Connected { uid, measured_at })) => {
                    let stale = uid.is_some_and(|u| preexisting.contains(&u));
                    if mode == Mode::Await && stale {
                        settle = if measured_at.is_some() { FRESH_MEASUREMENT } else { SETTLE };
                        mode = Mode::Settle { fresh_after };
                    } else {
                        return Ok(());
                    }
                }
                (_, Ok(ConnPhase::Error { name, latency })) => {
                    last_error = Some((name, latency));
                    mode = Mode::Grace;
                }
                (_, Ok(ConnPhase::Recovering)) => mode = Mode::Await,
                // Connected throughout the settle window.
                (Mode::Settle { .. }, Err(OpError::Timeout { .. })) => return Ok(()),
                (Mode::Grace, Err(OpError::Timeout { .. })) => {
                    let (name, latency) = last_error.take().unwrap_or_default();
                    let warnings = warnings_about(ctx, &apis.events, regarding("Connection", name.clone())).await;
                    return Err(connection_error(&ns, &name, latency, endpoint, &warnings));
                }
                (Mode::Await, Err(e)) => {
                    // Still Connecting (or no Connection) at the deadline: quote what Liqo said about the
                    // gateway and its Connection.
                    let gateway = spec.name().to_string();
                    let about = move |r: &ObjectReference| {
                        r.kind.as_deref() == Some("Connection")
                            || (r.kind.as_deref() == Some("GatewayClient")
                                && r.name.as_deref() == Some(gateway.as_str()))
                    };
                    return Err(explain_timeout(ctx, apis, e, about).await);
                }
                (_, Err(e)) => return Err(e),
            }
        }
    }

    /// Reads the owned objects; `None` when any of them is gone.
    async fn observe(ctx: &Ctx, apis: &Apis, name: &str, kind: Kind) -> Result<Option<Observed>, OpError> {
        let gateway = match kind {
            Kind::Server => crate::kube::get_opt(ctx, &apis.servers, name).await?.map(GatewayObj::Server),
            Kind::Client => crate::kube::get_opt(ctx, &apis.clients, name).await?.map(GatewayObj::Client),
        };
        let Some(gateway) = gateway else {
            return Ok(None);
        };
        let Some(public_key) = crate::kube::get_opt(ctx, &apis.public_keys, name).await? else {
            return Ok(None);
        };
        let Some(configuration) = crate::kube::get_opt(ctx, &apis.configurations, name).await? else {
            return Ok(None);
        };
        let remote = match &gateway {
            GatewayObj::Server(g) => g.metadata.labels.as_ref(),
            GatewayObj::Client(g) => g.metadata.labels.as_ref(),
        }
        .and_then(|l| l.get(labels::REMOTE_CLUSTER_ID).cloned())
        .unwrap_or_else(|| name.to_string());
        let conns =
            crate::kube::list(ctx, &apis.connections, &format!("{}={remote}", labels::REMOTE_CLUSTER_ID)).await?;
        let connection = pick_connection(&conns, gateway.uid()).ok().flatten().cloned();
        Ok(Some(Observed { configuration, public_key, gateway, connection }))
    }

    /// Deletes in Liqo's order (reference §6): gateway (and what Liqo rendered from it), PublicKey,
    /// Configuration, each waited for so finalizers are honoured.
    async fn delete_all(ctx: &Ctx, apis: &Apis, name: &str, kind: Kind, deadline: &Deadline) -> Result<(), OpError> {
        let uid = match kind {
            Kind::Server => crate::kube::get_opt(ctx, &apis.servers, name).await?.and_then(|g| g.metadata.uid),
            Kind::Client => crate::kube::get_opt(ctx, &apis.clients, name).await?.and_then(|g| g.metadata.uid),
        };
        match kind {
            Kind::Server => {
                crate::kube::delete_and_wait(ctx, &apis.servers, name, deadline.left()).await?;
                // Garbage collection would remove it too; deleting it here waits for Liqo's
                // clusterrolebinding finalizer and names it if Liqo never releases it.
                crate::kube::delete_and_wait(ctx, &apis.wg_servers, name, deadline.left()).await?;
            }
            Kind::Client => {
                crate::kube::delete_and_wait(ctx, &apis.clients, name, deadline.left()).await?;
                crate::kube::delete_and_wait(ctx, &apis.wg_clients, name, deadline.left()).await?;
            }
        }
        // The gateway's Connection is owned by it; delete it now rather than leaving it to the garbage collector
        // so nothing of this peering remains when destroy returns.
        if let Some(uid) = uid {
            let conns =
                crate::kube::list(ctx, &apis.connections, &format!("{}={name}", labels::REMOTE_CLUSTER_ID)).await?;
            let owned = conns
                .into_iter()
                .filter(|c| c.metadata.owner_references.as_ref().is_some_and(|o| o.iter().any(|r| r.uid == uid)));
            for c in owned {
                let cname = c.metadata.name.unwrap_or_default();
                crate::kube::delete_and_wait(ctx, &apis.connections, &cname, deadline.left()).await?;
            }
        }
        crate::kube::delete_and_wait(ctx, &apis.public_keys, name, deadline.left()).await?;
        crate::kube::delete_and_wait(ctx, &apis.configurations, name, deadline.left()).await?;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------------------------
// State from the cluster (read and import)
// ---------------------------------------------------------------------------------------------------------------

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
fn state_from_observed(prior: &Value, obs: &Observed, namespace: &str, name: &str) -> Value {
    let mut state = Value::object([
        ("id", Value::string(format!("{namespace}/{name}"))),
        ("tenant_namespace", Value::string(namespace)),
        ("timeouts", prior.get("timeouts").clone()),
        ("wait_for_connection", or_default(prior.get("wait_for_connection"), Value::Bool(true))),
    ]);
    let remote = match &obs.gateway {
        GatewayObj::Server(g) => g.metadata.labels.as_ref(),
        GatewayObj::Client(g) => g.metadata.labels.as_ref(),
    }
    .and_then(|l| l.get(labels::REMOTE_CLUSTER_ID).cloned())
    .unwrap_or_else(|| name.to_string());
    state.set("remote_cluster_id", Value::string(remote));

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
fn fill_outputs(planned: &Value, out: &Outputs) -> Value {
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

fn kind_of(state: &Value) -> Kind {
    if state.get("server").is_null() { Kind::Client } else { Kind::Server }
}

fn parse_import_id(id: &str) -> Result<(String, String), Diagnostic> {
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

// ---------------------------------------------------------------------------------------------------------------
// The Resource implementation
// ---------------------------------------------------------------------------------------------------------------

#[async_trait]
impl Resource for GatewayResource {
    fn type_name(&self) -> &'static str {
        "liqo_gateway"
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        validate(config)
    }

    async fn plan(&self, _ctx: &Ctx, req: PlanRequest) -> PlanResponse {
        plan(&req)
    }

    async fn apply(&self, ctx: &Ctx, req: ApplyRequest) -> ApplyResponse {
        let fail = |state: Value, diagnostics: Diagnostics| ApplyResponse {
            new_state: state,
            private: Vec::new(),
            diagnostics,
        };

        if req.planned.is_null() {
            // Destroy.
            let Some(ns) = req.prior.get("tenant_namespace").as_str() else {
                return fail(Value::Null, Diagnostics::new());
            };
            let Some(name) = req.prior.get("remote_cluster_id").as_str() else {
                return fail(Value::Null, Diagnostics::new());
            };
            let apis = match self.apis(ns).await {
                Ok(a) => a,
                Err(d) => return fail(req.prior.clone(), d),
            };
            let deadline = Deadline::after(Timeouts::from_value(&req.prior, DEFAULT_TIMEOUTS).delete);
            return match Self::delete_all(ctx, &apis, name, kind_of(&req.prior), &deadline).await {
                Ok(()) => fail(Value::Null, Diagnostics::new()),
                Err(e) => fail(req.prior.clone(), op_diags(&e)),
            };
        }

        // Nothing is written before these two succeed: the state stays what it was (null on create).
        let spec = match GatewaySpec::from_value(&req.planned) {
            Ok(s) => s,
            Err(d) => return fail(req.prior.clone(), d.into()),
        };
        let apis = match self.apis(&spec.namespace).await {
            Ok(a) => a,
            Err(d) => return fail(req.prior.clone(), d),
        };
        let creating = req.prior.is_null();
        let timeouts = Timeouts::from_value(&req.planned, DEFAULT_TIMEOUTS);
        let deadline = Deadline::after(if creating { timeouts.create } else { timeouts.update });
        let recreate = !creating && server_needs_recreate(&req.prior, &req.planned);
        let mut written = false;
        match self.converge(ctx, &apis, &spec, recreate, &deadline, &mut written).await {
            Ok(out) => ApplyResponse {
                new_state: fill_outputs(&req.planned, &out),
                private: Vec::new(),
                diagnostics: Diagnostics::new(),
            },
            Err(e) => {
                // A failed create keeps what it wrote in state (Terraform taints it, so the next apply or destroy
                // cleans up); a failed update keeps the prior state so the next plan shows the change again.
                let state = if !creating {
                    req.prior.clone()
                } else if written {
                    unknown_as_null(&req.planned)
                } else {
                    Value::Null
                };
                fail(state, op_error(&e).into())
            }
        }
    }

    async fn read(&self, ctx: &Ctx, state: Value, private: Vec<u8>) -> ReadResponse {
        let (Some(ns), Some(name)) = (state.get("tenant_namespace").as_str(), state.get("remote_cluster_id").as_str())
        else {
            return ReadResponse { new_state: Value::Null, private, diagnostics: Diagnostics::new() };
        };
        let apis = match self.apis(ns).await {
            Ok(a) => a,
            Err(d) => {
                return ReadResponse { new_state: state.clone(), private, diagnostics: d };
            }
        };
        match Self::observe(ctx, &apis, name, kind_of(&state)).await {
            Ok(Some(obs)) => ReadResponse {
                new_state: state_from_observed(&state, &obs, ns, name),
                private,
                diagnostics: Diagnostics::new(),
            },
            Ok(None) => ReadResponse { new_state: Value::Null, private, diagnostics: Diagnostics::new() },
            Err(e) => ReadResponse { new_state: state.clone(), private, diagnostics: op_diags(&e) },
        }
    }

    async fn import(&self, ctx: &Ctx, id: &str) -> Result<Vec<ImportedResource>, Diagnostics> {
        let (ns, name) = parse_import_id(id).map_err(Diagnostics::from)?;
        let apis = self.apis(&ns).await?;
        let mut found = None;
        for kind in [Kind::Server, Kind::Client] {
            if let Some(obs) = Self::observe(ctx, &apis, &name, kind).await.map_err(|e| op_diags(&e))? {
                found = Some(obs);
                break;
            }
        }
        let Some(obs) = found else {
            return Err(Diagnostic::error(
                format!("Cannot import liqo_gateway {id}"),
                format!(
                    "Expected a GatewayServer or GatewayClient, a PublicKey and a Configuration, all named `{name}` in namespace {ns} (the names liqoctl and this provider use); at least one is missing. List them with `kubectl get gatewayservers,gatewayclients,publickeies,configurations -n {ns}`."
                ),
            )
            .into());
        };
        let defaults = Value::object([("wait_for_connection", Value::Bool(true)), ("timeouts", Value::Null)]);
        let state = state_from_observed(&defaults, &obs, &ns, &name);
        // Read looks objects up by the remote cluster ID, so it must be the name for the state to stay readable.
        if state.get("remote_cluster_id").as_str() != Some(name.as_str()) {
            return Err(Diagnostic::error(
                format!("Cannot import liqo_gateway {id}"),
                format!(
                    "The gateway `{name}` is labelled {}={}, but liqo_gateway manages objects named after the peer's cluster ID. Recreate the objects with that name (or let this resource create them after `liqoctl network disconnect`).",
                    labels::REMOTE_CLUSTER_ID,
                    state.get("remote_cluster_id").as_str().unwrap_or_default()
                ),
            )
            .into());
        }
        Ok(vec![ImportedResource { state, private: Vec::new() }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use liqo_schema::liqo::{ConnectionLatency, ConnectionStatus, GatewayServerStatus};
    use serde_json::json;

    const KEY: &str = "HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw=";

    fn server_cfg() -> Value {
        Value::object([
            ("service_type", Value::string("NodePort")),
            ("port", Value::Null),
            ("node_port", Value::Number(30742.0)),
            ("load_balancer_ip", Value::Null),
            ("service_annotations", Value::Null),
            ("service_labels", Value::Null),
        ])
    }

    fn client_cfg() -> Value {
        Value::object([
            ("addresses", Value::string_list(["192.168.1.10"])),
            ("port", Value::Number(30742.0)),
            ("protocol", Value::Null),
        ])
    }

    /// A configuration as Terraform sends it: every attribute present, unset ones null.
    fn config(role: &str) -> Value {
        Value::object([
            ("id", Value::Null),
            ("tenant_namespace", Value::string("liqo-tenant-rome")),
            ("remote_cluster_id", Value::string("rome")),
            ("remote_pod_cidrs", Value::string_list(["10.243.0.0/16"])),
            ("remote_external_cidr", Value::string("10.70.0.0/16")),
            ("remote_public_key", Value::string(KEY)),
            ("key_secret_name", Value::Null),
            ("mtu", Value::Null),
            ("server", if role == "server" { server_cfg() } else { Value::Null }),
            ("client", if role == "client" { client_cfg() } else { Value::Null }),
            ("wait_for_connection", Value::Null),
            ("endpoint_addresses", Value::Null),
            ("endpoint_port", Value::Null),
            ("connection_status", Value::Null),
            ("timeouts", Value::Null),
        ])
    }

    fn with(mut v: Value, path: &str, x: Value) -> Value {
        let steps: Vec<&str> = path.split('.').collect();
        let mut cur = &mut v;
        for s in &steps[..steps.len() - 1] {
            cur = cur.get_mut(s);
        }
        cur.set(steps[steps.len() - 1], x);
        v
    }

    fn plan_create(cfg: &Value) -> PlanResponse {
        plan(&PlanRequest { prior: Value::Null, proposed: cfg.clone(), config: cfg.clone(), private: Vec::new() })
    }

    /// The state after a successful create of `cfg` (outputs as a server/client would report them).
    fn applied(cfg: &Value) -> Value {
        let planned = plan_create(cfg).planned;
        let out = Outputs {
            endpoint: Some(EndpointStatus {
                addresses: Some(vec!["10.0.0.5".into()]),
                port: Some(30742),
                protocol: None,
            }),
            connection_status: "Connected".into(),
        };
        fill_outputs(&planned, &out)
    }

    fn plan_update(prior: &Value, cfg: &Value) -> PlanResponse {
        plan(&PlanRequest { prior: prior.clone(), proposed: cfg.clone(), config: cfg.clone(), private: Vec::new() })
    }

    fn paths(d: &Diagnostics) -> Vec<String> {
        d.iter().map(|d| d.attribute.as_ref().map(|p| p.to_string()).unwrap_or_default()).collect()
    }

    // --- schema ----------------------------------------------------------------------------------------------

    #[test]
    fn schema_is_documented_and_well_formed() {
        let s = schema();
        for a in &s.block.attributes {
            assert!(!a.description.is_empty(), "{} lacks a description", a.name);
            assert!(a.required || a.optional || a.computed, "{} has no mode", a.name);
            if let Some(n) = &a.nested {
                assert!(a.ty.is_none(), "{}: nested attributes must not carry a plain type", a.name);
                for inner in &n.attributes {
                    assert!(!inner.description.is_empty(), "{}.{} lacks a description", a.name, inner.name);
                }
            }
        }
        let attr = |n: &str| s.block.attribute(n).unwrap();
        assert!(attr("id").computed && !attr("id").optional);
        for out in ["endpoint_addresses", "endpoint_port", "connection_status"] {
            assert!(attr(out).computed && !attr(out).optional, "{out} is an output");
        }
        for default in ["key_secret_name", "mtu", "wait_for_connection"] {
            assert!(attr(default).optional && attr(default).computed, "{default} has a default");
        }
        assert!(s.block.blocks.iter().any(|b| b.type_name == "timeouts"));
        // Every attribute of a config built for tests exists in the schema and vice versa.
        let Type::Object(types) = s.block.implied_type() else { panic!() };
        let cfg = config("server");
        let cfg_keys: Vec<&String> = cfg.entries().unwrap().keys().collect();
        assert_eq!(types.keys().collect::<Vec<_>>(), cfg_keys);
    }

    // --- validation ------------------------------------------------------------------------------------------

    #[test]
    fn valid_configs_pass() {
        assert!(validate(&config("server")).is_empty());
        assert!(validate(&config("client")).is_empty());
        // Values from other resources are unknown at validation: never an error.
        let unknowns = with(with(config("client"), "remote_cluster_id", Value::Unknown), "client", Value::Unknown);
        assert!(validate(&unknowns).is_empty());
        let unknown_list = with(config("client"), "client.addresses", Value::Unknown);
        assert!(validate(&unknown_list).is_empty());
    }

    #[test]
    fn bad_inputs_name_the_attribute() {
        let cases: Vec<(Value, &str)> = vec![
            (with(config("server"), "tenant_namespace", Value::string("Tenant_NS")), "tenant_namespace"),
            (with(config("server"), "remote_cluster_id", Value::string("-rome")), "remote_cluster_id"),
            (
                with(config("server"), "remote_pod_cidrs", Value::string_list(["10.243.0.0/16", "10.1.0.0"])),
                "remote_pod_cidrs[1]",
            ),
            (with(config("server"), "remote_pod_cidrs", Value::List(vec![])), "remote_pod_cidrs"),
            (with(config("server"), "remote_external_cidr", Value::string("10.70.0.0/40")), "remote_external_cidr"),
            (with(config("server"), "remote_public_key", Value::string("dG9vIHNob3J0")), "remote_public_key"),
            (with(config("server"), "key_secret_name", Value::string("GW keys")), "key_secret_name"),
            (with(config("server"), "mtu", Value::Number(100.0)), "mtu"),
            (with(config("server"), "mtu", Value::Number(1340.5)), "mtu"),
            (with(config("server"), "server.service_type", Value::string("nodeport")), "server.service_type"),
            (with(config("server"), "server.port", Value::Number(70000.0)), "server.port"),
            (with(config("server"), "server.node_port", Value::Number(8080.0)), "server.node_port"),
            (with(config("server"), "server.service_type", Value::string("ClusterIP")), "server.node_port"),
            (
                with(
                    with(config("server"), "server.service_type", Value::string("LoadBalancer")),
                    "server.load_balancer_ip",
                    Value::string("lb.example.com"),
                ),
                "server.load_balancer_ip",
            ),
            (with(config("client"), "client.addresses", Value::List(vec![])), "client.addresses"),
            (with(config("client"), "client.addresses", Value::string_list(["1.2.3.4", " "])), "client.addresses[1]"),
            (with(config("client"), "client.port", Value::Number(0.0)), "client.port"),
            (with(config("client"), "client.protocol", Value::string("SCTP")), "client.protocol"),
            (
                with(
                    config("client"),
                    "timeouts",
                    Value::object([
                        ("create", Value::string("10 minutes")),
                        ("update", Value::Null),
                        ("delete", Value::Null),
                    ]),
                ),
                "timeouts.create",
            ),
            (with(config("server"), "server", Value::Null), "server"),
            (with(config("server"), "client", client_cfg()), "client"),
        ];
        for (cfg, path) in cases {
            let d = validate(&cfg);
            assert_eq!(paths(&d), [path], "config for {path}: {d:?}");
            assert!(!d.0[0].detail.is_empty());
        }
    }

    #[test]
    fn tcp_is_refused_with_the_reason() {
        let d = validate(&with(config("client"), "client.protocol", Value::string("TCP")));
        assert_eq!(paths(&d), ["client.protocol"]);
        assert!(d.0[0].summary.contains("TCP is not supported"), "{d:?}");
        assert!(d.0[0].detail.contains("UDP only"), "{d:?}");
        assert!(validate(&with(config("client"), "client.protocol", Value::string("UDP"))).is_empty());
    }

    #[test]
    fn load_balancer_ip_needs_a_load_balancer() {
        let cfg = with(
            with(config("server"), "server.load_balancer_ip", Value::string("203.0.113.7")),
            "server.node_port",
            Value::Null,
        );
        assert_eq!(paths(&validate(&cfg)), ["server.load_balancer_ip"], "NodePort + LB IP");
        let cfg = with(cfg, "server.service_type", Value::Null);
        assert!(validate(&cfg).is_empty(), "the default type is LoadBalancer");
    }

    // --- plan ------------------------------------------------------------------------------------------------

    #[test]
    fn create_fills_defaults_and_leaves_outputs_unknown() {
        let p = plan_create(&config("server")).planned;
        assert_eq!(p.get("id"), &Value::string("liqo-tenant-rome/rome"));
        assert_eq!(p.get("mtu"), &Value::Number(1340.0));
        assert_eq!(p.get("key_secret_name"), &Value::string("gw-keys"));
        assert_eq!(p.get("wait_for_connection"), &Value::Bool(true));
        assert_eq!(p.get("server").get("port"), &Value::Number(51840.0));
        assert_eq!(p.get("server").get("service_type"), &Value::string("NodePort"));
        assert!(p.get("endpoint_addresses").is_unknown() && p.get("endpoint_port").is_unknown());
        assert!(p.get("connection_status").is_unknown());

        let c = plan_create(&config("client")).planned;
        assert_eq!(c.get("client").get("protocol"), &Value::string("UDP"));
        assert!(
            c.get("endpoint_addresses").is_null() && c.get("endpoint_port").is_null(),
            "client has no endpoint outputs"
        );
        assert!(c.get("server").is_null());
    }

    #[test]
    fn unknown_inputs_stay_unknown() {
        let cfg = with(with(config("client"), "remote_cluster_id", Value::Unknown), "client.addresses", Value::Unknown);
        let p = plan_create(&cfg).planned;
        assert!(p.get("remote_cluster_id").is_unknown());
        assert!(p.get("id").is_unknown());
        assert!(p.get("client").get("addresses").is_unknown());
        assert_eq!(p.get("client").get("protocol"), &Value::string("UDP"));
        let p = plan_create(&with(config("server"), "server", Value::Unknown)).planned;
        assert!(p.get("server").is_unknown() && p.get("endpoint_port").is_unknown());
    }

    #[test]
    fn no_change_plans_the_prior_state() {
        let prior = applied(&config("server"));
        let r = plan_update(&prior, &config("server"));
        assert!(r.requires_replace.is_empty());
        assert_eq!(r.planned, prior, "an unchanged config must give an empty plan");
    }

    #[test]
    fn in_place_updates() {
        let prior = applied(&config("server"));
        for (path, v) in [
            ("mtu", Value::Number(1400.0)),
            ("remote_pod_cidrs", Value::string_list(["10.243.0.0/16", "10.244.0.0/16"])),
            ("remote_external_cidr", Value::string("10.71.0.0/16")),
            ("remote_public_key", Value::string("nBxGmUf2Fa4rYqgFpFyPq6KTTsqfPxDeUuQmuAxHXwM=")),
            ("key_secret_name", Value::string("other-keys")),
            ("server.service_annotations", Value::string_map([("a", "b")])),
            ("server.service_labels", Value::string_map([("a", "b")])),
        ] {
            let r = plan_update(&prior, &with(config("server"), path, v));
            assert!(r.requires_replace.is_empty(), "{path} must update in place");
            assert_eq!(
                r.planned.get("endpoint_addresses"),
                prior.get("endpoint_addresses"),
                "{path} keeps the endpoint"
            );
            assert_eq!(r.planned.get("endpoint_port"), prior.get("endpoint_port"));
            assert!(r.planned.get("connection_status").is_unknown(), "{path} re-reads the Connection");
            assert_eq!(r.planned.get("id"), prior.get("id"));
        }
        let prior = applied(&config("client"));
        for (path, v) in
            [("client.addresses", Value::string_list(["10.0.0.9"])), ("client.port", Value::Number(31000.0))]
        {
            let r = plan_update(&prior, &with(config("client"), path, v));
            assert!(r.requires_replace.is_empty(), "{path} must update in place");
        }
    }

    #[test]
    fn removing_an_argument_returns_to_its_default() {
        let prior = applied(&with(config("server"), "mtu", Value::Number(1400.0)));
        // Terraform proposes the prior value for an optional+computed attribute removed from the config.
        let proposed = with(config("server"), "mtu", Value::Number(1400.0));
        let r = plan(&PlanRequest { prior, proposed, config: config("server"), private: Vec::new() });
        assert_eq!(r.planned.get("mtu"), &Value::Number(1340.0));
    }

    #[test]
    fn server_service_shape_changes_recreate_the_server_in_place() {
        let prior = applied(&config("server"));
        for (path, v) in [
            ("server.service_type", Value::string("LoadBalancer")),
            ("server.port", Value::Number(51841.0)),
            ("server.node_port", Value::Number(30800.0)),
        ] {
            let planned_cfg = with(config("server"), path, v);
            let r = plan_update(&prior, &planned_cfg);
            assert!(r.requires_replace.is_empty(), "{path}: the GatewayServer is recreated inside the update");
            assert!(
                r.planned.get("endpoint_addresses").is_unknown() && r.planned.get("endpoint_port").is_unknown(),
                "{path} moves the endpoint"
            );
            assert!(server_needs_recreate(&prior, &r.planned), "{path}");
        }
        let r = plan_update(&prior, &with(config("server"), "mtu", Value::Number(1400.0)));
        assert!(!server_needs_recreate(&prior, &r.planned));
    }

    #[test]
    fn identity_and_role_changes_replace() {
        let prior = applied(&config("server"));
        let r = plan_update(&prior, &with(config("server"), "remote_cluster_id", Value::string("paris")));
        assert_eq!(paths_of(&r.requires_replace), ["remote_cluster_id"]);
        let r = plan_update(&prior, &with(config("server"), "tenant_namespace", Value::string("other")));
        assert_eq!(paths_of(&r.requires_replace), ["tenant_namespace"]);
        let r = plan_update(&prior, &config("client"));
        assert_eq!(paths_of(&r.requires_replace), ["server", "client"]);
        assert!(r.planned.get("connection_status").is_unknown());
        let r = plan_update(&prior, &with(config("server"), "remote_cluster_id", Value::Unknown));
        assert_eq!(paths_of(&r.requires_replace), ["remote_cluster_id"], "unknown may differ");
        assert!(r.planned.get("id").is_unknown());
    }

    fn paths_of(p: &[AttributePath]) -> Vec<String> {
        p.iter().map(|p| p.to_string()).collect()
    }

    // --- objects ---------------------------------------------------------------------------------------------

    fn spec(role: &str) -> GatewaySpec {
        GatewaySpec::from_value(&plan_create(&config(role)).planned).unwrap()
    }

    fn to_json<T: serde::Serialize>(v: &T) -> serde_json::Value {
        serde_json::to_value(v).unwrap()
    }

    #[test]
    fn configuration_carries_only_the_peer_cidrs() {
        assert_eq!(
            to_json(&spec("server").configuration()),
            json!({
                "apiVersion": "networking.liqo.io/v1beta1", "kind": "Configuration",
                "metadata": {"name": "rome", "namespace": "liqo-tenant-rome", "labels": {"liqo.io/remote-cluster-id": "rome"}},
                "spec": {"remote": {"cidr": {"pod": ["10.243.0.0/16"], "external": ["10.70.0.0/16"]}}}
            }),
            "no spec.local (Liqo's) and no status"
        );
    }

    #[test]
    fn public_key_is_labelled_for_the_gateway() {
        assert_eq!(
            to_json(&spec("server").public_key()),
            json!({
                "apiVersion": "networking.liqo.io/v1beta1", "kind": "PublicKey",
                "metadata": {"name": "rome", "namespace": "liqo-tenant-rome",
                             "labels": {"liqo.io/remote-cluster-id": "rome", "networking.liqo.io/gateway-resource": "true"}},
                "spec": {"publicKey": KEY}
            })
        );
    }

    #[test]
    fn gateway_server_references_key_secret_and_template() {
        let s = spec("server");
        let Role::Server(ss) = &s.role else { panic!() };
        assert_eq!(
            to_json(&s.gateway_server(ss, "liqo")),
            json!({
                "apiVersion": "networking.liqo.io/v1beta1", "kind": "GatewayServer",
                "metadata": {"name": "rome", "namespace": "liqo-tenant-rome", "labels": {"liqo.io/remote-cluster-id": "rome"}},
                "spec": {
                    "serverTemplateRef": {"apiVersion": "networking.liqo.io/v1beta1", "kind": "WgGatewayServerTemplate",
                                          "name": "wireguard-server", "namespace": "liqo"},
                    "mtu": 1340,
                    "endpoint": {"port": 51840, "serviceType": "NodePort", "nodePort": 30742},
                    "secretRef": {"name": "gw-keys"}
                }
            })
        );
    }

    /// A gateway `liqoctl peer` made names no key Secret (Liqo generated `gw-<gateway>`): the imported state
    /// keeps none, and an update never points the gateway at a `gw-keys` that does not exist.
    #[test]
    fn a_gateway_with_liqo_generated_keys_keeps_them() {
        let imported = with(applied(&config("client")), "key_secret_name", Value::Null);
        let p = plan_update(&imported, &config("client")).planned;
        assert!(p.get("key_secret_name").is_null(), "{p:?}");
        let resized = plan_update(&imported, &with(config("client"), "mtu", Value::Number(1420.0))).planned;
        assert!(resized.get("key_secret_name").is_null());
        let s = GatewaySpec::from_value(&resized).unwrap();
        let Role::Client(c) = &s.role else { panic!() };
        assert!(to_json(&s.gateway_client(c, "liqo"))["spec"].get("secretRef").is_none());
        // Set explicitly, it is the user's choice again; a new gateway gets this provider's Secret.
        let chosen = plan_update(&imported, &with(config("client"), "key_secret_name", Value::string("gw-keys")));
        assert_eq!(chosen.planned.get("key_secret_name"), &Value::string("gw-keys"));
        assert_eq!(plan_create(&config("client")).planned.get("key_secret_name"), &Value::string("gw-keys"));
    }

    #[test]
    fn gateway_client_dials_the_endpoint() {
        let s = spec("client");
        let Role::Client(cs) = &s.role else { panic!() };
        assert_eq!(
            to_json(&s.gateway_client(cs, "liqo-system")),
            json!({
                "apiVersion": "networking.liqo.io/v1beta1", "kind": "GatewayClient",
                "metadata": {"name": "rome", "namespace": "liqo-tenant-rome", "labels": {"liqo.io/remote-cluster-id": "rome"}},
                "spec": {
                    "clientTemplateRef": {"apiVersion": "networking.liqo.io/v1beta1", "kind": "WgGatewayClientTemplate",
                                          "name": "wireguard-client", "namespace": "liqo-system"},
                    "mtu": 1340,
                    "endpoint": {"addresses": ["192.168.1.10"], "port": 30742, "protocol": "UDP"},
                    "secretRef": {"name": "gw-keys"}
                }
            })
        );
    }

    // --- read / import ---------------------------------------------------------------------------------------

    fn observed(s: &GatewaySpec, status_value: Option<&str>) -> Observed {
        let gateway = match &s.role {
            Role::Server(ss) => {
                let mut g = s.gateway_server(ss, "liqo");
                g.metadata.uid = Some("uid-1".into());
                g.status = Some(GatewayServerStatus {
                    endpoint: Some(EndpointStatus {
                        addresses: Some(vec!["10.0.0.5".into()]),
                        port: Some(30742),
                        protocol: Some("UDP".into()),
                    }),
                    ..Default::default()
                });
                GatewayObj::Server(g)
            }
            Role::Client(cs) => GatewayObj::Client(s.gateway_client(cs, "liqo")),
        };
        Observed {
            configuration: s.configuration(),
            public_key: s.public_key(),
            gateway,
            connection: status_value.map(|v| conn("gw-rome", Some("uid-1"), v)),
        }
    }

    #[test]
    fn read_of_unchanged_objects_matches_the_state() {
        for role in ["server", "client"] {
            let prior = applied(&config(role));
            let s = GatewaySpec::from_value(&prior).unwrap();
            let state = state_from_observed(&prior, &observed(&s, Some("Connected")), "liqo-tenant-rome", "rome");
            let want = if role == "client" {
                with(prior.clone(), "connection_status", Value::string("Connected"))
            } else {
                prior.clone()
            };
            assert_eq!(state, want, "{role}: read must not invent drift");
            // And the config still plans nothing after the read (import → empty plan).
            let r = plan_update(&state, &config(role));
            assert!(r.requires_replace.is_empty());
            assert_eq!(r.planned, state, "{role}");
        }
    }

    #[test]
    fn import_builds_a_state_that_plans_empty() {
        let s = spec("server");
        let defaults = Value::object([("wait_for_connection", Value::Bool(true)), ("timeouts", Value::Null)]);
        let state = state_from_observed(&defaults, &observed(&s, None), "liqo-tenant-rome", "rome");
        assert_eq!(state.get("connection_status"), &Value::string(""));
        assert_eq!(state.get("endpoint_addresses"), &Value::string_list(["10.0.0.5"]));
        let r = plan_update(&state, &config("server"));
        assert!(r.requires_replace.is_empty());
        assert_eq!(r.planned, state);
    }

    #[test]
    fn out_of_band_changes_show_as_drift() {
        let prior = applied(&config("server"));
        let s = GatewaySpec::from_value(&prior).unwrap();
        let mut obs = observed(&s, None);
        obs.public_key.spec.public_key = Some(ByteString(vec![7; 32]));
        if let GatewayObj::Server(g) = &mut obs.gateway {
            g.spec.mtu = Some(1200);
            g.status = None; // gateway restarting: endpoint outputs keep their last known value
        }
        let state = state_from_observed(&prior, &obs, "liqo-tenant-rome", "rome");
        assert_eq!(state.get("mtu"), &Value::Number(1200.0));
        assert_ne!(state.get("remote_public_key"), prior.get("remote_public_key"));
        assert_eq!(state.get("endpoint_addresses"), prior.get("endpoint_addresses"));
        let r = plan_update(&state, &config("server"));
        assert_eq!(r.planned.get("mtu"), &Value::Number(1340.0), "apply re-asserts the configured value");
        assert_eq!(r.planned.get("remote_public_key"), &Value::string(KEY));
    }

    #[test]
    fn a_liqoctl_gateway_with_an_empty_secret_ref_imports_without_a_key_secret() {
        let s = spec("server");
        let mut obs = observed(&s, None);
        if let GatewayObj::Server(g) = &mut obs.gateway {
            g.spec.secret_ref = Some(SecretReference { name: Some(String::new()) });
        }
        let defaults = Value::object([("wait_for_connection", Value::Bool(true)), ("timeouts", Value::Null)]);
        let state = state_from_observed(&defaults, &obs, "liqo-tenant-rome", "rome");
        assert!(state.get("key_secret_name").is_null(), "{state:?}");
    }

    #[test]
    fn empty_service_maps_keep_the_configured_form() {
        let cfg = with(config("server"), "server.service_labels", Value::Map(BTreeMap::new()));
        let prior = applied(&cfg);
        let s = GatewaySpec::from_value(&prior).unwrap();
        let state = state_from_observed(&prior, &observed(&s, None), "liqo-tenant-rome", "rome");
        assert_eq!(state.get("server").get("service_labels"), &Value::Map(BTreeMap::new()));
        assert!(state.get("server").get("service_annotations").is_null());
    }

    #[test]
    fn import_ids() {
        assert_eq!(parse_import_id("liqo-tenant-rome/rome").unwrap(), ("liqo-tenant-rome".into(), "rome".into()));
        for bad in ["rome", "a/b/c", "/rome", "ns/", "NS/rome"] {
            let d = parse_import_id(bad).unwrap_err();
            assert!(d.detail.contains("<tenant_namespace>/<gateway name>"), "{bad}");
        }
    }

    // --- waits -----------------------------------------------------------------------------------------------

    fn conn(name: &str, owner_uid: Option<&str>, value: &str) -> Connection {
        let mut c = Connection::new(name, Default::default());
        c.metadata.owner_references = owner_uid.map(|uid| {
            vec![OwnerReference {
                uid: uid.into(),
                name: "rome".into(),
                kind: "GatewayClient".into(),
                api_version: "networking.liqo.io/v1beta1".into(),
                ..Default::default()
            }]
        });
        c.status = Some(ConnectionStatus { value: Some(value.into()), latency: None });
        c
    }

    fn is_ready<T>(c: &Verdict<T>) -> bool {
        matches!(c, Verdict::Ready(_))
    }

    #[test]
    fn connection_phases() {
        let check = |value: &str, mode| {
            let mut c = conn("gw-rome", Some("uid-1"), value);
            c.metadata.uid = Some("conn-1".into());
            connection_check(&[c], Some("uid-1"), "ns", mode)
        };
        let ready = |c: Verdict<ConnPhase>| match c {
            Verdict::Ready(p) => Some(p),
            _ => None,
        };
        let connected = Some(ConnPhase::Connected { uid: Some("conn-1".into()), measured_at: None });
        // Waiting: Connecting pends, Connected is done, Error starts the grace period.
        assert!(matches!(connection_check(&[], Some("uid-1"), "ns", Mode::Await), Verdict::Pending(_)));
        assert!(matches!(check("Connecting", Mode::Await), Verdict::Pending(_)));
        assert_eq!(ready(check("Connected", Mode::Await)), connected);
        assert_eq!(
            ready(check("Error", Mode::Await)),
            Some(ConnPhase::Error { name: "gw-rome".into(), latency: None })
        );
        // Grace period: still Error pends; Connecting starts over; Connected is done.
        assert!(matches!(check("Error", Mode::Grace), Verdict::Pending(_)));
        assert_eq!(ready(check("Connecting", Mode::Grace)), Some(ConnPhase::Recovering));
        assert_eq!(ready(check("Connected", Mode::Grace)), connected);
        assert_eq!(ready(connection_check(&[], Some("uid-1"), "ns", Mode::Grace)), Some(ConnPhase::Recovering));
        // Settling a pre-existing Connected: staying Connected pends (the timeout is success), Error fails over
        // to the grace period, anything else starts over.
        let settle = Mode::Settle { fresh_after: Timestamp::now() };
        assert!(matches!(check("Connected", settle), Verdict::Pending(_)));
        assert!(matches!(ready(check("Error", settle)), Some(ConnPhase::Error { .. })));
        assert_eq!(ready(check("Connecting", settle)), Some(ConnPhase::Recovering));
    }

    #[test]
    fn after_a_change_only_a_fresh_measurement_confirms_connected() {
        let change = Timestamp::now();
        let measured = |at: Timestamp| {
            let mut c = conn("gw-rome", Some("uid-1"), "Connected");
            c.status = Some(ConnectionStatus {
                value: Some("Connected".into()),
                latency: Some(ConnectionLatency { value: Some("1ms".into()), timestamp: Some(Time(at)) }),
            });
            connection_check(&[c], Some("uid-1"), "ns", Mode::Settle { fresh_after: change })
        };
        let before = change - std::time::Duration::from_secs(5);
        let after = change + std::time::Duration::from_secs(1);
        assert!(matches!(measured(before), Verdict::Pending(_)), "a measurement from before the change");
        assert!(
            matches!(measured(after), Verdict::Ready(ConnPhase::Connected { measured_at: Some(at), .. }) if at == after),
            "a measurement after the change confirms the tunnel"
        );
    }

    #[test]
    fn stale_connections_of_an_old_gateway_are_ignored() {
        let all = [conn("gw-old", Some("uid-0"), "Error"), conn("gw-rome", Some("uid-1"), "Connected")];
        assert_eq!(pick_connection(&all, Some("uid-1")).unwrap().unwrap().metadata.name.as_deref(), Some("gw-rome"));
        assert!(pick_connection(&all[..1], Some("uid-1")).unwrap().is_none());
        let unowned = [conn("a", None, "Connected"), conn("b", None, "Connected")];
        assert!(pick_connection(&unowned, Some("uid-1")).unwrap_err().contains("2 Connections"));
        assert!(matches!(connection_check(&unowned, Some("uid-1"), "ns", Mode::Await), Verdict::Failed { .. }));
    }

    #[test]
    fn connection_error_names_endpoint_and_key_mismatch() {
        let OpError::Failed { object, reason, hint } = connection_error(
            "ns",
            "gw-rome",
            Some("3ms".into()),
            "10.0.0.5:30742/UDP",
            &["ConnectionError: handshake fails".into()],
        ) else {
            panic!()
        };
        assert_eq!(object, "Connection ns/gw-rome");
        assert!(
            reason.contains("Error")
                && reason.contains("10.0.0.5:30742/UDP")
                && reason.contains("3ms")
                && reason.contains("Liqo reported: ConnectionError: handshake fails")
        );
        assert!(
            hint.contains("Key mismatch") && hint.contains("wireguard_public_key") && hint.contains("UDP reachability")
        );
    }

    #[test]
    fn configuration_readiness() {
        let mut c = spec("server").configuration();
        assert!(matches!(configuration_check(None), Verdict::Pending(_)));
        assert!(
            matches!(configuration_check(Some(&c)), Verdict::Pending(ref s) if s.contains("NetworkCIDRsConfigured"))
        );
        c.metadata.generation = Some(2);
        c.status = serde_json::from_value(json!({"conditions": [{"type": "NetworkCIDRsConfigured", "status": "True",
            "observedGeneration": 1, "reason": "NetworkCIDRsConfigured", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}))
        .unwrap();
        assert!(
            matches!(configuration_check(Some(&c)), Verdict::Pending(ref s) if s.contains("observedGeneration Some(1)"))
        );
        c.metadata.generation = Some(1);
        assert!(is_ready(&configuration_check(Some(&c))));
    }

    #[test]
    fn endpoint_needs_an_address_and_a_port() {
        let s = spec("server");
        let Role::Server(ss) = &s.role else { panic!() };
        let mut g = s.gateway_server(ss, "liqo");
        assert!(matches!(endpoint_check(Some(&g), "NodePort"), Verdict::Pending(ref m) if m.contains("template")));
        g.status = Some(GatewayServerStatus {
            endpoint: Some(EndpointStatus { addresses: Some(vec!["".into()]), port: Some(30742), protocol: None }),
            ..Default::default()
        });
        assert!(matches!(endpoint_check(Some(&g), "NodePort"), Verdict::Pending(ref m) if m.contains("NotReady")));
        g.status.as_mut().unwrap().endpoint.as_mut().unwrap().addresses = Some(vec!["".into(), "10.0.0.5".into()]);
        assert!(is_ready(&endpoint_check(Some(&g), "NodePort")));
        // Only the non-empty addresses become outputs.
        let out = Outputs { endpoint: g.status.unwrap().endpoint, connection_status: String::new() };
        let state = fill_outputs(&plan_create(&config("server")).planned, &out);
        assert_eq!(state.get("endpoint_addresses"), &Value::string_list(["10.0.0.5"]));
        assert!(state.is_wholly_known());
    }

    #[test]
    fn key_secret_must_belong_to_this_peer() {
        let secret = |label: Option<&str>, keys: &[&str]| Secret {
            metadata: ObjectMeta {
                labels: label.map(|l| BTreeMap::from([(labels::REMOTE_CLUSTER_ID.to_string(), l.to_string())])),
                ..Default::default()
            },
            data: Some(keys.iter().map(|k| (k.to_string(), ByteString(vec![1; 32]))).collect()),
            ..Default::default()
        };
        assert!(matches!(key_secret_check(None, "rome"), Verdict::Pending(_)));
        assert!(is_ready(&key_secret_check(Some(&secret(None, &["privateKey", "publicKey"])), "rome")));
        assert!(is_ready(&key_secret_check(Some(&secret(Some("rome"), &["privateKey", "publicKey"])), "rome")));
        assert!(matches!(key_secret_check(Some(&secret(Some("paris"), &["privateKey", "publicKey"])), "rome"),
            Verdict::Failed { ref reason, .. } if reason.contains("paris")));
        assert!(matches!(key_secret_check(Some(&secret(None, &["publicKey"])), "rome"),
            Verdict::Failed { ref reason, .. } if reason.contains("privateKey")));
    }

    #[test]
    fn failed_create_state_is_wholly_known() {
        let planned = plan_create(&config("server")).planned;
        assert!(!planned.is_wholly_known());
        let partial = unknown_as_null(&planned);
        assert!(partial.is_wholly_known());
        assert_eq!(partial.get("remote_cluster_id"), planned.get("remote_cluster_id"));
    }
}
