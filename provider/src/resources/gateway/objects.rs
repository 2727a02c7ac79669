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
use liqo_schema::tf::{AttributePath, Diagnostic, Value};

use super::schema::attr;
use super::status::status_value;

/// The gateway's side of the tunnel, WireGuard server or client, with what that side has: its settings
/// ([`Role`]), its object as read from the cluster ([`GatewayObj`]), or nothing (plain `Side`, which one to look for).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Side<S = (), C = ()> {
    Server(S),
    Client(C),
}

/// The settings of the side this gateway is.
pub type Role = Side<attr::server::Server, attr::client::Client>;
/// The gateway object of either side as read from the cluster.
pub type GatewayObj = Side<GatewayServer, GatewayClient>;

/// Everything apply needs, read from a wholly known planned (or prior) state.
#[derive(Clone, Debug, PartialEq)]
pub struct GatewaySpec {
    /// The state the objects are built from.
    pub planned: attr::Gateway,
    /// `remote_public_key`'s 32 bytes.
    pub public_key: Vec<u8>,
    /// The side `planned` sets: its `server` or its `client`.
    pub role: Role,
}

impl GatewaySpec {
    /// Fails only on values validation and plan already rule out; the message says which attribute.
    pub fn from_value(v: &Value) -> Result<GatewaySpec, Diagnostic> {
        let missing = |path: AttributePath| {
            Diagnostic::error(
                format!("`{path}` is missing or not known at apply time"),
                "This is a bug in the provider's plan; please report it with the configuration that triggers it.",
            )
            .at(path)
        };
        let planned = attr::Gateway::of(v);
        let public_key = planned
            .remote_public_key
            .as_ref()
            .and_then(|key| base64::engine::general_purpose::STANDARD.decode(key).ok())
            .filter(|b| b.len() == 32)
            .ok_or_else(|| missing(attr::remote_public_key.path()))?;
        let role = match (&planned.server, &planned.client) {
            (Some(server), _) => Role::Server(server.clone()),
            (None, Some(client)) => Role::Client(client.clone()),
            (None, None) => return Err(missing(attr::server.path())),
        };
        Ok(GatewaySpec { planned, public_key, role })
    }

    /// Every owned object is named after the peer (reference §3: liqoctl's default names).
    pub fn name(&self) -> &str {
        &self.planned.remote_cluster_id
    }

    fn meta(&self, extra_labels: &[(&str, &str)]) -> ObjectMeta {
        let mut l = BTreeMap::from([(labels::REMOTE_CLUSTER_ID.to_string(), self.planned.remote_cluster_id.clone())]);
        l.extend(extra_labels.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        ObjectMeta {
            name: Some(self.name().to_string()),
            namespace: Some(self.planned.tenant_namespace.clone()),
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
                        pod: Some(self.planned.remote_pod_cidrs.clone()),
                        external: self.planned.remote_external_cidr.clone().map(|cidr| vec![cidr]),
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

    fn template_ref(kind: &str, name: Option<String>, liqo_namespace: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("networking.liqo.io/v1beta1".into()),
            kind: Some(kind.into()),
            name,
            namespace: Some(liqo_namespace.into()),
            ..Default::default()
        }
    }

    pub fn gateway_server(&self, s: &attr::server::Server, liqo_namespace: &str) -> GatewayServer {
        let mut g = GatewayServer::new(
            self.name(),
            GatewayServerSpec {
                server_template_ref: Some(Self::template_ref(
                    "WgGatewayServerTemplate",
                    s.template_name.clone(),
                    liqo_namespace,
                )),
                mtu: self.planned.mtu,
                endpoint: Some(GatewayServerEndpoint {
                    port: s.port.map(|p| p as i32),
                    service_type: Some(s.service_type.clone()),
                    node_port: s.node_port.map(|p| p as i32),
                    load_balancer_ip: s.load_balancer_ip.clone(),
                }),
                secret_ref: self.planned.key_secret_name.clone().map(|name| SecretReference { name: Some(name) }),
                service_annotations: s.service_annotations.clone(),
                service_labels: s.service_labels.clone(),
            },
        );
        g.metadata = self.meta(&[]);
        g
    }

    pub fn gateway_client(&self, c: &attr::client::Client, liqo_namespace: &str) -> GatewayClient {
        let mut g = GatewayClient::new(
            self.name(),
            GatewayClientSpec {
                client_template_ref: Some(Self::template_ref(
                    "WgGatewayClientTemplate",
                    c.template_name.clone(),
                    liqo_namespace,
                )),
                mtu: self.planned.mtu,
                endpoint: Some(EndpointStatus {
                    addresses: Some(c.addresses.clone()),
                    port: c.port.map(|p| p as i32),
                    protocol: c.protocol.clone(),
                }),
                secret_ref: self.planned.key_secret_name.clone().map(|name| SecretReference { name: Some(name) }),
            },
        );
        g.metadata = self.meta(&[]);
        g
    }

    pub fn selector(&self) -> String {
        format!("{}={}", labels::REMOTE_CLUSTER_ID, self.planned.remote_cluster_id)
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

/// A Service map as the state shows it. Empty and absent are the same to Liqo: keep whichever form the prior
/// state (the configuration) used.
fn service_map(
    live: Option<&BTreeMap<String, String>>,
    prior: Option<&BTreeMap<String, String>>,
) -> Option<BTreeMap<String, String>> {
    match live {
        Some(m) if !m.is_empty() => Some(m.clone()),
        _ if prior.is_some_and(BTreeMap::is_empty) => Some(BTreeMap::new()),
        _ => None,
    }
}

fn opt_number(n: Option<i64>) -> Value {
    n.map(|n| Value::Number(n as f64)).unwrap_or(Value::Null)
}

/// The non-empty addresses of an endpoint Liqo reports.
fn endpoint_addresses(e: &EndpointStatus) -> Value {
    Value::string_list(e.addresses.iter().flatten().filter(|a| !a.is_empty()).cloned())
}

/// Builds the resource state from the cluster. Fields we own are taken from the objects (so out-of-band edits
/// show as drift); `wait_for_connection` comes from `prior` (its declared default for an import). Endpoint outputs
/// keep their prior value while Liqo has no endpoint to report (e.g. the gateway pod is restarting).
pub fn state_from_observed(prior: &attr::Gateway, obs: &Observed, namespace: &str, name: &str) -> attr::Gateway {
    let (server, client, endpoint_addresses, endpoint_port) = match &obs.gateway {
        GatewayObj::Server(g) => {
            let e = g.spec.endpoint.clone().unwrap_or_default();
            let prior_server = prior.server.as_ref();
            let server = attr::server::Server {
                // The CRD defaults serviceType to ClusterIP when absent.
                service_type: e.service_type.unwrap_or_else(|| "ClusterIP".into()),
                port: e.port.map(i64::from),
                node_port: e.node_port.map(i64::from),
                load_balancer_ip: e.load_balancer_ip,
                service_annotations: service_map(
                    g.spec.service_annotations.as_ref(),
                    prior_server.and_then(|s| s.service_annotations.as_ref()),
                ),
                service_labels: service_map(
                    g.spec.service_labels.as_ref(),
                    prior_server.and_then(|s| s.service_labels.as_ref()),
                ),
                template_name: g.spec.server_template_ref.as_ref().and_then(|t| t.name.clone()),
            };
            let (addresses, port) = match g.status.as_ref().and_then(|s| s.endpoint.as_ref()).filter(|e| e.is_ready()) {
                Some(e) => (endpoint_addresses(e), opt_number(e.port.map(i64::from))),
                None => (prior.endpoint_addresses.clone(), prior.endpoint_port.clone()),
            };
            (Some(server), None, addresses, port)
        }
        GatewayObj::Client(g) => {
            let e = g.spec.endpoint.clone().unwrap_or_default();
            let client = attr::client::Client {
                addresses: e.addresses.unwrap_or_default(),
                port: e.port.map(i64::from),
                protocol: e.protocol,
                template_name: g.spec.client_template_ref.as_ref().and_then(|t| t.name.clone()),
            };
            (None, Some(client), Value::Null, Value::Null)
        }
    };
    let cidr = obs.configuration.spec.remote.as_ref().and_then(|r| r.cidr.as_ref());
    let remapped = obs.configuration.remapped();
    let (mtu, secret) = match &obs.gateway {
        GatewayObj::Server(g) => (g.spec.mtu, g.spec.secret_ref.as_ref().and_then(|s| s.name.clone())),
        GatewayObj::Client(g) => (g.spec.mtu, g.spec.secret_ref.as_ref().and_then(|s| s.name.clone())),
    };
    attr::Gateway {
        tenant_namespace: namespace.to_string(),
        remote_cluster_id: obs.gateway.remote_cluster_id(name),
        remote_pod_cidrs: cidr.and_then(|c| c.pod.clone()).unwrap_or_default(),
        remote_external_cidr: cidr.and_then(|c| c.external.as_ref()).and_then(|e| e.first().cloned()),
        remote_public_key: obs
            .public_key
            .spec
            .public_key
            .as_ref()
            .map(|k| base64::engine::general_purpose::STANDARD.encode(&k.0)),
        // liqoctl writes `secretRef: {name: ""}` on gateways whose keys Liqo generates (a Go struct, not a
        // pointer): no key Secret of ours, the same as no secretRef.
        key_secret_name: secret.filter(|name| !name.is_empty()),
        mtu,
        server,
        client,
        wait_for_connection: prior.wait_for_connection,
        endpoint_addresses,
        endpoint_port,
        remapped_pod_cidrs: Value::string_list(remapped.pods()),
        remapped_external_cidr: Value::opt_string(remapped.first_external()),
        connection_status: Value::string(obs.connection.as_ref().map(status_value).unwrap_or_default()),
        ..attr::Gateway::defaults()
    }
}

/// Fills the outputs left unknown by the plan; known planned values are kept (apply must return them).
pub fn fill_outputs(planned: &Value, out: &Outputs) -> Value {
    let mut state = attr::Gateway::of(planned);
    if state.endpoint_addresses.is_unknown() || state.endpoint_port.is_unknown() {
        let e = out.endpoint.as_ref();
        state.endpoint_addresses = e.map(endpoint_addresses).unwrap_or(Value::Null);
        state.endpoint_port = opt_number(e.and_then(|e| e.port).map(i64::from));
    }
    if state.connection_status.is_unknown() {
        state.connection_status = Value::string(out.connection_status.clone());
    }
    if state.remapped_pod_cidrs.is_unknown() {
        state.remapped_pod_cidrs = Value::string_list(out.remapped.pods());
    }
    if state.remapped_external_cidr.is_unknown() {
        state.remapped_external_cidr = Value::opt_string(out.remapped.first_external());
    }
    unknown_as_null(&state.value())
}

pub fn side_of(state: &attr::Gateway) -> Side {
    if state.server.is_none() { Side::Client(()) } else { Side::Server(()) }
}
