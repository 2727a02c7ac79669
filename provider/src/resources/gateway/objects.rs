//! The Liqo objects `liqo_gateway` owns: built from a wholly known planned (or prior) state, and read back into
//! its state (read, import, the outputs of an apply); the import ID that names them.
use std::collections::BTreeMap;

use base64::Engine;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::ObjectMeta;
use liqo_schema::liqo::{
    ClusterConfig, ClusterConfigCidr, Configuration, ConfigurationSpec, Connection, EndpointStatus, GatewayClient,
    GatewayClientSpec, GatewayServer, GatewayServerEndpoint, GatewayServerSpec, PublicKey, PublicKeySpec,
    SecretReference, labels,
};
use liqo_schema::tf::{AttributePath, Diagnostic, Key, Value};

use super::schema::attr;
use super::status::status_value;

#[derive(Clone, Debug, PartialEq)]
pub struct ServerSpec {
    pub service_type: String,
    pub port: i32,
    pub node_port: Option<i32>,
    pub load_balancer_ip: Option<String>,
    pub service_annotations: Option<BTreeMap<String, String>>,
    pub service_labels: Option<BTreeMap<String, String>>,
    pub template_name: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ClientSpec {
    pub addresses: Vec<String>,
    pub port: i32,
    pub protocol: String,
    pub template_name: String,
}

/// The gateway's side of the tunnel, WireGuard server or client, with what that side has: its settings
/// ([`Role`]), its object as read from the cluster ([`GatewayObj`]), or nothing (plain `Side`, which one to look for).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Side<S = (), C = ()> {
    Server(S),
    Client(C),
}

/// The settings of the side this gateway is.
pub type Role = Side<ServerSpec, ClientSpec>;
/// The gateway object of either side as read from the cluster.
pub type GatewayObj = Side<GatewayServer, GatewayClient>;

/// Everything apply needs, read from a wholly known planned (or prior) state.
#[derive(Clone, Debug, PartialEq)]
pub struct GatewaySpec {
    pub namespace: String,
    pub remote_cluster_id: String,
    pub pod_cidrs: Vec<String>,
    pub external_cidr: String,
    pub public_key: Vec<u8>,
    /// None: Liqo generates the gateway's keys (`gw-<gateway>`), as for a gateway `liqoctl peer` made.
    pub key_secret_name: Option<String>,
    pub mtu: i64,
    pub role: Role,
    pub wait_for_connection: bool,
}

impl GatewaySpec {
    /// Fails only on values validation and plan already rule out; the message says which attribute.
    pub fn from_value(v: &Value) -> Result<GatewaySpec, Diagnostic> {
        use attr::{client as c, server as s_};
        let missing = |path: AttributePath| {
            Diagnostic::error(
                format!("`{path}` is missing or not known at apply time"),
                "This is a bug in the provider's plan; please report it with the configuration that triggers it.",
            )
            .at(path)
        };
        let s = |key: Key| v.get(key).as_str().map(str::to_string).ok_or_else(|| missing(key.path()));
        // `block` is the nested attribute `obj` is the value of, if any.
        let path = |block: Option<Key>, key: Key| match block {
            Some(b) => b.path().attr(key),
            None => key.path(),
        };
        let int =
            |obj: &Value, block: Key, key: Key| obj.get(key).as_i64().ok_or_else(|| missing(path(Some(block), key)));
        let str_in = |obj: &Value, block: Key, key: Key| {
            obj.get(key).as_str().map(str::to_string).ok_or_else(|| missing(path(Some(block), key)))
        };
        let strings = |obj: &Value, block: Option<Key>, key: Key| {
            obj.get(key).string_elements().ok_or_else(|| missing(path(block, key)))
        };
        let key = s(attr::remote_public_key)?;
        let public_key = base64::engine::general_purpose::STANDARD
            .decode(&key)
            .ok()
            .filter(|b| b.len() == 32)
            .ok_or_else(|| missing(attr::remote_public_key.path()))?;
        let (server, client) = (v.get(attr::server), v.get(attr::client));
        let role = if !server.is_null() {
            Role::Server(ServerSpec {
                service_type: str_in(server, attr::server, s_::service_type)?,
                port: int(server, attr::server, s_::port)? as i32,
                node_port: server.get(s_::node_port).as_i64().map(|p| p as i32),
                load_balancer_ip: server.get(s_::load_balancer_ip).as_str().map(str::to_string),
                service_annotations: server.get(s_::service_annotations).string_entries(),
                service_labels: server.get(s_::service_labels).string_entries(),
                template_name: str_in(server, attr::server, s_::template_name)?,
            })
        } else if !client.is_null() {
            Role::Client(ClientSpec {
                addresses: strings(client, Some(attr::client), c::addresses)?,
                port: int(client, attr::client, c::port)? as i32,
                protocol: str_in(client, attr::client, c::protocol)?,
                template_name: str_in(client, attr::client, c::template_name)?,
            })
        } else {
            return Err(missing(attr::server.path()));
        };
        Ok(GatewaySpec {
            namespace: s(attr::tenant_namespace)?,
            remote_cluster_id: s(attr::remote_cluster_id)?,
            pod_cidrs: strings(v, None, attr::remote_pod_cidrs)?,
            external_cidr: s(attr::remote_external_cidr)?,
            public_key,
            key_secret_name: v.get(attr::key_secret_name).as_str().map(str::to_string),
            mtu: v.get(attr::mtu).as_i64().ok_or_else(|| missing(attr::mtu.path()))?,
            role,
            wait_for_connection: v.get(attr::wait_for_connection).as_bool().unwrap_or(true),
        })
    }

    /// Every owned object is named after the peer (reference §3: liqoctl's default names).
    pub fn name(&self) -> &str {
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
    pub fn configuration(&self) -> Configuration {
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

    pub fn public_key(&self) -> PublicKey {
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

    pub fn gateway_server(&self, s: &ServerSpec, liqo_namespace: &str) -> GatewayServer {
        let mut g = GatewayServer::new(
            self.name(),
            GatewayServerSpec {
                server_template_ref: Some(Self::template_ref(
                    "WgGatewayServerTemplate",
                    &s.template_name,
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

    pub fn gateway_client(&self, c: &ClientSpec, liqo_namespace: &str) -> GatewayClient {
        let mut g = GatewayClient::new(
            self.name(),
            GatewayClientSpec {
                client_template_ref: Some(Self::template_ref(
                    "WgGatewayClientTemplate",
                    &c.template_name,
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

    pub fn selector(&self) -> String {
        format!("{}={}", labels::REMOTE_CLUSTER_ID, self.remote_cluster_id)
    }
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
    /// The peer's CIDRs as Liqo remapped them (the Configuration's status once configured).
    pub remapped: ClusterConfigCidr,
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

/// The prior state's value of `key`, else its declared default (a state imported or older than the attribute).
fn prior_or_default(prior: &Value, key: Key) -> Value {
    match prior.get(key) {
        Value::Null => crate::attributes::default_of(&attr::declared(), key),
        v => v.clone(),
    }
}

/// The template a gateway names, as its state shows it.
fn template_name(template: Option<&ObjectReference>) -> Value {
    Value::opt_string(template.and_then(|t| t.name.clone()))
}

fn opt_number(n: Option<i64>) -> Value {
    n.map(|n| Value::Number(n as f64)).unwrap_or(Value::Null)
}

/// Builds the resource state from the cluster. Fields we own are taken from the objects (so out-of-band edits
/// show as drift); `wait_for_connection` comes from `prior`. Endpoint outputs keep their prior value
/// while Liqo has no endpoint to report (e.g. the gateway pod is restarting).
pub fn state_from_observed(prior: &Value, obs: &Observed, namespace: &str, name: &str) -> Value {
    use attr::server as s_;
    let mut state = Value::object([
        (attr::tenant_namespace, Value::string(namespace)),
        (attr::wait_for_connection, prior_or_default(prior, attr::wait_for_connection)),
    ]);
    state.set(attr::remote_cluster_id, Value::string(obs.gateway.remote_cluster_id(name)));

    let cidr = obs.configuration.spec.remote.as_ref().and_then(|r| r.cidr.as_ref());
    state.set(attr::remote_pod_cidrs, Value::string_list(cidr.and_then(|c| c.pod.clone()).unwrap_or_default()));
    state.set(
        attr::remote_external_cidr,
        Value::opt_string(cidr.and_then(|c| c.external.as_ref()).and_then(|e| e.first().cloned())),
    );
    let remapped = obs.configuration.remapped();
    state.set(attr::remapped_pod_cidrs, Value::string_list(remapped.pods()));
    state.set(attr::remapped_external_cidr, Value::opt_string(remapped.first_external()));
    state.set(
        attr::remote_public_key,
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
    state.set(attr::mtu, opt_number(mtu));
    state.set(attr::key_secret_name, Value::opt_string(secret));

    match &obs.gateway {
        GatewayObj::Server(g) => {
            let e = g.spec.endpoint.clone().unwrap_or_default();
            let prior_server = prior.get(attr::server);
            state.set(
                attr::server,
                Value::object([
                    // The CRD defaults serviceType to ClusterIP when absent.
                    (s_::service_type, Value::string(e.service_type.unwrap_or_else(|| "ClusterIP".into()))),
                    (s_::port, opt_number(e.port.map(i64::from))),
                    (s_::node_port, opt_number(e.node_port.map(i64::from))),
                    (s_::load_balancer_ip, Value::opt_string(e.load_balancer_ip)),
                    (
                        s_::service_annotations,
                        string_map_value(
                            g.spec.service_annotations.as_ref(),
                            prior_server.get(s_::service_annotations),
                        ),
                    ),
                    (
                        s_::service_labels,
                        string_map_value(g.spec.service_labels.as_ref(), prior_server.get(s_::service_labels)),
                    ),
                    (s_::template_name, template_name(g.spec.server_template_ref.as_ref())),
                ]),
            );
            state.set(attr::client, Value::Null);
            match g.status.as_ref().and_then(|s| s.endpoint.as_ref()).filter(|e| e.is_ready()) {
                Some(e) => {
                    let addrs = e.addresses.iter().flatten().filter(|a| !a.is_empty()).cloned();
                    state.set(attr::endpoint_addresses, Value::string_list(addrs));
                    state.set(attr::endpoint_port, opt_number(e.port.map(i64::from)));
                }
                None => {
                    state.set(attr::endpoint_addresses, prior.get(attr::endpoint_addresses).clone());
                    state.set(attr::endpoint_port, prior.get(attr::endpoint_port).clone());
                }
            }
        }
        GatewayObj::Client(g) => {
            let e = g.spec.endpoint.clone().unwrap_or_default();
            state.set(
                attr::client,
                Value::object([
                    (attr::client::addresses, Value::string_list(e.addresses.unwrap_or_default())),
                    (attr::client::port, opt_number(e.port.map(i64::from))),
                    (attr::client::protocol, Value::opt_string(e.protocol)),
                    (attr::client::template_name, template_name(g.spec.client_template_ref.as_ref())),
                ]),
            );
            state.set(attr::server, Value::Null);
            state.set(attr::endpoint_addresses, Value::Null);
            state.set(attr::endpoint_port, Value::Null);
        }
    }
    state.set(attr::connection_status, Value::string(obs.connection.as_ref().map(status_value).unwrap_or_default()));
    state
}

/// Fills the outputs left unknown by the plan; known planned values are kept (apply must return them).
pub fn fill_outputs(planned: &Value, out: &Outputs) -> Value {
    let mut state = planned.clone();
    if state.get(attr::endpoint_addresses).is_unknown() || state.get(attr::endpoint_port).is_unknown() {
        let e = out.endpoint.as_ref();
        let addrs = e.map(|e| Value::string_list(e.addresses.iter().flatten().filter(|a| !a.is_empty()).cloned()));
        state.set(attr::endpoint_addresses, addrs.unwrap_or(Value::Null));
        state.set(attr::endpoint_port, opt_number(e.and_then(|e| e.port).map(i64::from)));
    }
    if state.get(attr::connection_status).is_unknown() {
        state.set(attr::connection_status, Value::string(out.connection_status.clone()));
    }
    if state.get(attr::remapped_pod_cidrs).is_unknown() {
        state.set(attr::remapped_pod_cidrs, Value::string_list(out.remapped.pods()));
    }
    if state.get(attr::remapped_external_cidr).is_unknown() {
        state.set(attr::remapped_external_cidr, Value::opt_string(out.remapped.first_external()));
    }
    unknown_as_null(&state)
}

pub fn side_of(state: &Value) -> Side {
    if state.get(attr::server).is_null() { Side::Client(()) } else { Side::Server(()) }
}
