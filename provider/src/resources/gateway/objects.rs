//! The Liqo objects `liqo_gateway` owns, built from a wholly known planned (or prior) state.
use std::collections::BTreeMap;

use base64::Engine;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::ObjectMeta;
use liqo_schema::liqo::{
    ClusterConfig, ClusterConfigCidr, Configuration, ConfigurationSpec, EndpointStatus, GatewayClient,
    GatewayClientSpec, GatewayServer, GatewayServerEndpoint, GatewayServerSpec, PublicKey, PublicKeySpec,
    SecretReference, labels,
};
use liqo_schema::tf::{Diagnostic, Value};

#[derive(Clone, Debug, PartialEq)]
pub struct ServerSpec {
    pub service_type: String,
    pub port: i32,
    pub node_port: Option<i32>,
    pub load_balancer_ip: Option<String>,
    pub service_annotations: Option<BTreeMap<String, String>>,
    pub service_labels: Option<BTreeMap<String, String>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ClientSpec {
    pub addresses: Vec<String>,
    pub port: i32,
    pub protocol: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Role {
    Server(ServerSpec),
    Client(ClientSpec),
}

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

    pub fn gateway_client(&self, c: &ClientSpec, liqo_namespace: &str) -> GatewayClient {
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

    pub fn selector(&self) -> String {
        format!("{}={}", labels::REMOTE_CLUSTER_ID, self.remote_cluster_id)
    }
}
