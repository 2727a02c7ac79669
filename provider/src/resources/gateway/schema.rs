//! `liqo_gateway`'s attributes, their defaults and its plan-time checks.
use std::collections::BTreeMap;

use liqo_schema::liqo::labels;
use liqo_schema::tf::{Nesting, Type, Value};

use crate::attributes::{Check, Key};
use crate::resources::lifecycle::Declared;
use crate::validate::Validator;

pub const DEFAULT_MTU: i64 = 1340;
pub const DEFAULT_SERVER_PORT: i64 = 51840;
/// liqoctl's `--gw-server-service-type` default.
pub const DEFAULT_SERVICE_TYPE: &str = "LoadBalancer";
pub const DEFAULT_PROTOCOL: &str = "UDP";
const SERVICE_TYPES: &[&str] = &["NodePort", "LoadBalancer", "ClusterIP"];
/// Liqo's WireGuard gateways listen on UDP only: the server template's Service port and wireguard-go's socket are
/// UDP (`liqo-wireguard-gateway-server-template.yaml`), so a client dialling TCP would never reach it.
const PROTOCOLS: &[&str] = &["UDP"];
/// MTU bounds: 576 is the smallest datagram every IPv4 host accepts, 9000 the usual jumbo-frame size.
const MTU_RANGE: std::ops::RangeInclusive<i64> = 576..=9000;
/// Kubernetes' default NodePort range (`--service-node-port-range`).
const NODE_PORT_RANGE: std::ops::RangeInclusive<i64> = 30000..=32767;

const TEMPLATE_FIX: &str = "Name a gateway template in Liqo's namespace (`kubectl get wggatewayservertemplates,wggatewayclienttemplates -n liqo`).";

/// `liqo_gateway`'s attributes.
pub mod attr {
    use super::*;
    use crate::attributes::*;

    // A value the Liqo objects may lack is an `Option` (the state read back from them shows null, even for a
    // required argument); the outputs are `Value`s, since apply fills only those the plan left unknown.
    attributes! {
        struct Gateway;
        id: Unset = computed(Type::String).describe("`<tenant_namespace>/<remote_cluster_id>`: namespace and name of the gateway object (also the import ID).");
        tenant_namespace: String = required(Type::String).replace_on_change().check(Check::Namespace).describe(
            "Tenant namespace for the peer on this cluster (liqo_generate's `tenant_namespace`). All objects live there. Changing it replaces the resource.",
        );
        remote_cluster_id: String = required(Type::String).replace_on_change().check(Check::ClusterId).describe(
            "Cluster ID of the peer (the peer's liqo_generate `cluster_id`). Objects are named after it and labelled `liqo.io/remote-cluster-id`. Changing it replaces the resource.",
        );
        remote_pod_cidrs: Vec<String> = required(Type::list(Type::String)).check(Check::Cidr)
            .describe("The peer's pod CIDR(s) (the peer's liqo_generate `pod_cidrs`). Updated in place.");
        remote_external_cidr: Option<String> = required(Type::String).check(Check::Cidr)
            .describe("The peer's external CIDR (the peer's liqo_generate `external_cidr`). Updated in place.");
        remote_public_key: Option<String> = required(Type::String).check(Check::WireguardKey).describe(
            "The peer's WireGuard public key (the peer's liqo_generate `wireguard_public_key`: 32 bytes in standard base64). A wrong key leaves the tunnel in `Error`. Updated in place.",
        );
        /// None: Liqo generates the gateway's keys (`gw-<gateway>`), as for a gateway `liqoctl peer` made.
        key_secret_name: Option<String> = optional_computed(Type::String)
            .check(Check::ObjectName { kind: "Secret", fix: "Use liqo_generate's `key_secret_name`." })
            .describe(format!(
            "Name of this cluster's WireGuard key Secret in the tenant namespace (liqo_generate's `key_secret_name`, default `{}`). The private key never enters Terraform. Updated in place. A gateway imported from `liqoctl peer` has none (null): Liqo generates its keys (Secret `gw-<gateway>`), and the gateway keeps them.",
            labels::KEY_SECRET_NAME
        ));
        mtu: Option<i64> = optional_computed(Type::Number).default(Value::Number(DEFAULT_MTU as f64)).describe(format!(
            "MTU of the WireGuard interface (default `{DEFAULT_MTU}`, {}–{}); must be equal on both sides. Updated in place.",
            MTU_RANGE.start(),
            MTU_RANGE.end()
        ));
        server: Option<server::Server> = nested(Nesting::Single, server::declared()).replace_on_presence_change().describe(
            "Make this cluster the WireGuard **server** (usually the provider cluster). Exactly one of `server` and `client` must be set; switching between them replaces the resource.",
        );
        client: Option<client::Client> = nested(Nesting::Single, client::declared()).replace_on_presence_change().describe(
            "Make this cluster the WireGuard **client** (usually the consumer cluster), dialling the peer's server. Exactly one of `server` and `client` must be set; switching between them replaces the resource.",
        );
        wait_for_connection: bool = optional_computed(Type::Bool).default(Value::Bool(true)).describe(
            "Client side: wait until the gateway's Connection is `Connected` (default `true`); an `Error` lasting more than 60s fails the apply. When `false`, the client waits only until Liqo has rendered the gateway. The server side never waits for the Connection (its client is created after it) but reports it in `connection_status`.",
        );
        endpoint_addresses: Value = computed(Type::list(Type::String)).output().describe(
            "Server side: the addresses Liqo exposes the gateway on (`status.endpoint.addresses`); feed them to the peer's `client.addresses`. Null on the client side.",
        );
        endpoint_port: Value = computed(Type::Number).output().describe(
            "Server side: the port Liqo exposes the gateway on (`status.endpoint.port`, the node port for `NodePort`); feed it to the peer's `client.port`. Null on the client side.",
        );
        remapped_pod_cidrs: Value = computed(Type::list(Type::String)).output().describe(
            "The addresses this cluster reaches the peer's pods at: `remote_pod_cidrs` as Liqo's IPAM mapped them, in the same order (the Configuration's `status.remote.cidr.pod`, as `liqoctl info peer` shows it). A CIDR that overlaps one this cluster uses (two clusters made with kind's default pod CIDR) is given another range; one that does not is kept as it is. Use them for routes and firewall rules towards the peer. Refreshed on every read.",
        );
        remapped_external_cidr: Value = computed(Type::String).output().describe(
            "`remote_external_cidr` as Liqo's IPAM mapped it on this cluster (the Configuration's `status.remote.cidr.external`), like `remapped_pod_cidrs`. Refreshed on every read.",
        );
        connection_status: Value = computed(Type::String).output().describe(
            "`status.value` of the gateway's Connection: `Connecting`, `Connected` or `Error`; empty while the gateway has not created it yet. Refreshed on every read.",
        );
    }

    /// The WireGuard server's settings.
    pub mod server {
        use super::*;

        attributes! {
            struct Server;
            service_type: String = optional_computed(Type::String).default(Value::string(DEFAULT_SERVICE_TYPE)).check(Check::OneOf(SERVICE_TYPES)).describe(format!(
                "How the gateway is exposed: `NodePort`, `LoadBalancer` or `ClusterIP` (default `{DEFAULT_SERVICE_TYPE}`, as liqoctl). Changing it recreates the GatewayServer (new endpoint) inside the update."
            ));
            port: Option<i64> = optional_computed(Type::Number).default(Value::Number(DEFAULT_SERVER_PORT as f64)).check(Check::Port(1..=65535)).describe(format!(
                "WireGuard listen port and Service port (default `{DEFAULT_SERVER_PORT}`). Changing it recreates the GatewayServer inside the update."
            ));
            node_port: Option<i64> = optional(Type::Number).check(Check::Port(NODE_PORT_RANGE)).describe(
                "Fixed NodePort (30000–32767) for `NodePort` or `LoadBalancer` services, making the endpoint predictable. Changing it recreates the GatewayServer inside the update.",
            );
            load_balancer_ip: Option<String> = optional(Type::String).describe(
                "Fixed load-balancer IP for `LoadBalancer` services. Changing it recreates the GatewayServer inside the update.",
            );
            service_annotations: Option<BTreeMap<String, String>> = optional(Type::map(Type::String)).describe(
                "Annotations for the gateway's Service, e.g. cloud load-balancer settings (Liqo 1.2.0 or later). Updated in place.",
            );
            service_labels: Option<BTreeMap<String, String>> = optional(Type::map(Type::String))
                .describe("Labels for the gateway's Service (Liqo 1.2.0 or later). Updated in place.");
            template_name: Option<String> = optional_computed(Type::String)
                .default(Value::string(labels::WIREGUARD_SERVER_TEMPLATE))
                .check(Check::ObjectName { kind: "template", fix: TEMPLATE_FIX })
                .describe(format!(
                    "Name of the gateway server template (`WgGatewayServerTemplate`) in Liqo's namespace that Liqo \
                     renders the gateway from (default `{}`, as liqoctl's `--gw-server-template-name`): a copy of \
                     Liqo's with, e.g., other resources, node selectors or tolerations for the gateway pod. It must \
                     exist when applied. Updated in place (Liqo renders the gateway again).",
                    labels::WIREGUARD_SERVER_TEMPLATE
                ));
        }
    }

    /// The WireGuard client's settings.
    pub mod client {
        use super::*;

        attributes! {
            struct Client;
            addresses: Vec<String> = required(Type::list(Type::String)).describe(
                "Addresses (IPs or host names) of the server's endpoint; Liqo dials the first. Usually the server's `endpoint_addresses`. Updated in place.",
            );
            port: Option<i64> = required(Type::Number).check(Check::Port(1..=65535))
                .describe("Port of the server's endpoint, usually the server's `endpoint_port`. Updated in place.");
            protocol: Option<String> = optional_computed(Type::String).default(Value::string(DEFAULT_PROTOCOL)).describe(format!(
                "Transport of the endpoint: only `{DEFAULT_PROTOCOL}` (the default), because Liqo's WireGuard server listens on UDP only (its gateway Service template exposes a UDP port); `TCP` is refused at plan time. Updated in place."
            ));
            template_name: Option<String> = optional_computed(Type::String)
                .default(Value::string(labels::WIREGUARD_CLIENT_TEMPLATE))
                .check(Check::ObjectName { kind: "template", fix: TEMPLATE_FIX })
                .describe(format!(
                    "Name of the gateway client template (`WgGatewayClientTemplate`) in Liqo's namespace that Liqo \
                     renders the gateway from (default `{}`, as liqoctl's `--gw-client-template-name`). It must exist \
                     when applied. Updated in place (Liqo renders the gateway again).",
                    labels::WIREGUARD_CLIENT_TEMPLATE
                ));
        }
    }
}

pub const DESCRIPTION: &str = "Network half of a Liqo peering on one cluster: the peer's CIDRs (Configuration), the peer's WireGuard public key (PublicKey) and a WireGuard gateway (GatewayServer or GatewayClient) in the tenant namespace. The server waits for its endpoint; the client waits for the tunnel to be `Connected`.";

/// Non-empty lists, the key Secret's name, the MTU, exactly one role, and the Service and transport each role can
/// use.
pub fn validate(c: &mut Validator<'_>) {
    let config = c.config;
    let pods = config.get(attr::remote_pod_cidrs);
    if matches!(pods, Value::List(v) if v.is_empty()) {
        c.error(
            attr::remote_pod_cidrs.path(),
            "No pod CIDR for `remote_pod_cidrs`",
            "Give at least one pod CIDR of the peer (the peer's liqo_generate `pod_cidrs`).",
        );
    }
    whole_number(c, attr::mtu, MTU_RANGE, "WireGuard MTU");

    let (server, client) = (config.get(attr::server), config.get(attr::client));
    let known_null = |v: &Value| v.is_null();
    let known_set = |v: &Value| !v.is_null() && !v.is_unknown();
    if known_null(server) && known_null(client) {
        c.error(
                attr::server.path(),
                "One of `server` and `client` is required",
                "Set `server = { … }` on the cluster that exposes the WireGuard endpoint (usually the provider) or `client = { … }` on the cluster that dials it (usually the consumer).",
            );
    }
    if known_set(server) && known_set(client) {
        c.error(
            attr::client.path(),
            "Only one of `server` and `client` may be set",
            "A tenant namespace holds exactly one Liqo gateway: keep `server` on one cluster and `client` on its peer.",
        );
    }

    use attr::{client as c_, server as s_};
    let service_type = server.get(s_::service_type);
    // An unset type means the default (LoadBalancer); an unknown one cannot be checked yet.
    let effective_type = if service_type.is_null() { Some(DEFAULT_SERVICE_TYPE) } else { service_type.as_str() };
    if !server.get(s_::node_port).is_null() && effective_type == Some("ClusterIP") {
        c.error(
                attr::server.path().attr(s_::node_port),
                "`server.node_port` needs a NodePort or LoadBalancer service",
                "A ClusterIP Service has no node port. Set `service_type = \"NodePort\"` (or `LoadBalancer`), or remove `node_port`.",
            );
    }
    let lb_ip = server.get(s_::load_balancer_ip);
    if let Some(ip) = lb_ip.as_str()
        && ip.parse::<std::net::IpAddr>().is_err()
    {
        c.error(
            attr::server.path().attr(s_::load_balancer_ip),
            "Invalid IP address for `server.load_balancer_ip`",
            format!("`{ip}` is not an IPv4 or IPv6 address."),
        );
    }
    if !lb_ip.is_null() && effective_type.is_some_and(|t| t != "LoadBalancer") {
        c.error(
            attr::server.path().attr(s_::load_balancer_ip),
            "`server.load_balancer_ip` needs a LoadBalancer service",
            "Set `service_type = \"LoadBalancer\"`, or remove `load_balancer_ip`.",
        );
    }

    let addresses = client.get(c_::addresses);
    if matches!(addresses, Value::List(v) if v.is_empty()) {
        c.error(
            attr::client.path().attr(c_::addresses),
            "No address for `client.addresses`",
            "Give the server's endpoint address (usually the server's `endpoint_addresses`).",
        );
    }
    for (i, a) in addresses.elements().iter().enumerate() {
        if a.as_str().is_some_and(|s| s.trim().is_empty()) {
            c.error(
                attr::client.path().attr(c_::addresses).index(i as i64),
                "Empty address in `client.addresses`",
                "Each address must be an IP or host name of the server's endpoint.",
            );
        }
    }
    let protocol = client.get(c_::protocol);
    let protocol_path = attr::client.path().attr(c_::protocol);
    if protocol.as_str() == Some("TCP") {
        c.error(
            protocol_path,
            "TCP is not supported for `client.protocol`",
            "Liqo's WireGuard gateway server listens on UDP only (the Service its template renders exposes a UDP \
             port, and WireGuard itself runs over UDP), so a client dialling TCP never connects. Remove `protocol` \
             or set it to `UDP`; if UDP cannot cross the network between the clusters, expose the server through a \
             path that carries UDP (NodePort or a LoadBalancer with UDP support).",
        );
    } else {
        c.check(&Check::OneOf(PROTOCOLS), protocol_path, protocol);
    }
}

fn whole_number(c: &mut Validator, key: Key, range: std::ops::RangeInclusive<i64>, what: &str) {
    let v = c.config.get(key);
    if let Value::Number(n) = v
        && !v.as_i64().is_some_and(|x| range.contains(&x))
    {
        c.error(
            key.path(),
            format!("Out of range for `{key}`"),
            format!("{n} is not a valid {what}: give a whole number between {} and {}.", range.start(), range.end()),
        );
    }
}

/// What `liqo_gateway` declares to the lifecycle driver.
pub const DECLARED: Declared = Declared {
    description: DESCRIPTION,
    attributes: attr::declared,
    validate,
    rules: super::plan::RULES,
    ..Declared::NONE
};
