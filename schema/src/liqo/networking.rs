//! `networking.liqo.io/v1beta1`: Configuration, PublicKey, GatewayServer, GatewayClient, Connection and the
//! WireGuard gateway objects the gateways render into.
//!
//! Every field is optional and skipped when unset, so a server-side apply only claims what the caller filled.
use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ObjectReference, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::conditions::find_condition;

// ---------------------------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------------------------

/// Condition type (v1.2.0+) set True once the peer's CIDRs are configured (check its observedGeneration too).
pub const NETWORK_CIDRS_CONFIGURED: &str = "NetworkCIDRsConfigured";

/// Pod and external CIDRs of one cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterConfigCidr {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<Vec<String>>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cidr: Option<ClusterConfigCidr>,
}

/// Carries the **peer's** CIDRs (`spec.remote`); `spec.local` is filled by Liqo's controller.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "networking.liqo.io",
    version = "v1beta1",
    kind = "Configuration",
    plural = "configurations",
    namespaced,
    status = "ConfigurationStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ConfigurationSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<ClusterConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<ClusterConfig>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigurationStatus {
    /// How the local cluster sees the peer after remapping (index-aligned with `spec.remote`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<ClusterConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

impl Configuration {
    /// Liqo's readiness rule: condition NetworkCIDRsConfigured True for the current generation (v1.2.0+), or,
    /// when no condition exists (v1.0–1.1), non-empty first remote pod and external CIDRs in the status.
    pub fn cidrs_configured(&self) -> bool {
        let status = self.status.as_ref();
        let conditions = status.and_then(|s| s.conditions.as_deref());
        if let Some(c) = find_condition(conditions, NETWORK_CIDRS_CONFIGURED) {
            return c.status == "True" && c.observed_generation == self.metadata.generation;
        }
        let cidr = status.and_then(|s| s.remote.as_ref()).and_then(|r| r.cidr.as_ref());
        let first = |v: Option<&Vec<String>>| v.and_then(|v| v.first()).is_some_and(|s| !s.is_empty());
        cidr.is_some_and(|c| first(c.pod.as_ref()) && first(c.external.as_ref()))
    }

    /// How this cluster sees the peer's CIDRs (`status.remote.cidr`, index-aligned with `spec.remote.cidr`): where
    /// Liqo's IPAM remapped one, the range it gave in its place. Empty until Liqo has written it.
    pub fn remapped(&self) -> ClusterConfigCidr {
        self.status.as_ref().and_then(|s| s.remote.as_ref()).and_then(|r| r.cidr.clone()).unwrap_or_default()
    }
}

impl ClusterConfigCidr {
    /// The pod CIDRs, without the positions Liqo left empty.
    pub fn pods(&self) -> Vec<String> {
        self.pod.iter().flatten().filter(|c| !c.is_empty()).cloned().collect()
    }

    /// The first external CIDR (a cluster has one), if any.
    pub fn first_external(&self) -> Option<String> {
        self.external.iter().flatten().find(|c| !c.is_empty()).cloned()
    }
}

// ---------------------------------------------------------------------------------------------------------------
// PublicKey (no status subresource; plural "publickeies")
// ---------------------------------------------------------------------------------------------------------------

/// The **peer's** WireGuard public key. `publicKey` is a Go `[]byte`: the raw 32 key bytes, base64 in JSON.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "networking.liqo.io",
    version = "v1beta1",
    kind = "PublicKey",
    plural = "publickeies",
    namespaced,
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct PublicKeySpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<ByteString>,
}

// ---------------------------------------------------------------------------------------------------------------
// GatewayServer / GatewayClient
// ---------------------------------------------------------------------------------------------------------------

/// `spec.secretRef` of a gateway: the WireGuard key Secret in the gateway's namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretReference {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayServerEndpoint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    /// `ClusterIP` (CRD default) | `NodePort` | `LoadBalancer` (`ExternalName` is not supported by Liqo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_port: Option<i32>,
    #[serde(rename = "loadBalancerIP", default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_ip: Option<String>,
}

#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "networking.liqo.io",
    version = "v1beta1",
    kind = "GatewayServer",
    plural = "gatewayservers",
    namespaced,
    status = "GatewayServerStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct GatewayServerSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_template_ref: Option<ObjectReference>,
    /// No CRD default; the template passes it verbatim, so always set it (Liqo's default is 1340).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<GatewayServerEndpoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_annotations: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_labels: Option<BTreeMap<String, String>>,
}

/// Endpoint a client dials; also the server's discovered `status.endpoint`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addresses: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    /// `TCP` | `UDP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
}

impl EndpointStatus {
    /// Liqo's readiness for a server endpoint: at least one non-empty address and a non-zero port.
    pub fn is_ready(&self) -> bool {
        self.addresses.as_ref().is_some_and(|a| a.iter().any(|s| !s.is_empty())) && self.port.unwrap_or(0) != 0
    }
}

/// The port Liqo's WgGatewayServer controller publishes as a server's `status.endpoint.port` for its gateway Service
/// (`handleEndpointStatus` in Liqo 1.2.0): the first port's node port for a NodePort Service, its port otherwise;
/// `None` for a Service without ports (or a NodePort one with no node port yet).
pub fn published_port(service: &Service) -> Option<i32> {
    let spec = service.spec.as_ref()?;
    let first = spec.ports.as_ref()?.first()?;
    match spec.type_.as_deref() {
        Some("NodePort") => first.node_port,
        _ => Some(first.port),
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InternalGatewayEndpoint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayServerStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_ref: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<EndpointStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_endpoint: Option<InternalGatewayEndpoint>,
}

#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "networking.liqo.io",
    version = "v1beta1",
    kind = "GatewayClient",
    plural = "gatewayclients",
    namespaced,
    status = "GatewayClientStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct GatewayClientSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_template_ref: Option<ObjectReference>,
    /// Must match the server's MTU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<EndpointStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayClientStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_ref: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_endpoint: Option<InternalGatewayEndpoint>,
}

// ---------------------------------------------------------------------------------------------------------------
// Connection (created by the gateway, never by users)
// ---------------------------------------------------------------------------------------------------------------

pub const CONNECTION_TYPE_SERVER: &str = "Server";
pub const CONNECTION_TYPE_CLIENT: &str = "Client";
pub const CONNECTION_CONNECTING: &str = "Connecting";
pub const CONNECTION_CONNECTED: &str = "Connected";
pub const CONNECTION_ERROR: &str = "Error";

#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "networking.liqo.io",
    version = "v1beta1",
    kind = "Connection",
    plural = "connections",
    namespaced,
    status = "ConnectionStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionSpec {
    /// `Server` | `Client` (required by the CRD).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// The WgGatewayServer/WgGatewayClient (required by the CRD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_ref: Option<ObjectReference>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionLatency {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Time>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionStatus {
    /// `Connecting` | `Connected` | `Error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<ConnectionLatency>,
}

// ---------------------------------------------------------------------------------------------------------------
// WgGatewayServerTemplate / WgGatewayClientTemplate (in Liqo's namespace; the provider only checks one exists)
// ---------------------------------------------------------------------------------------------------------------

/// A gateway server template: what Liqo renders a GatewayServer's objects from (`spec.objectKind`,
/// `spec.template`), kept untyped because only Liqo's gateway controller interprets it.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "networking.liqo.io",
    version = "v1beta1",
    kind = "WgGatewayServerTemplate",
    plural = "wggatewayservertemplates",
    namespaced,
    schema = "disabled"
)]
pub struct WgGatewayServerTemplateSpec {
    #[serde(flatten)]
    pub fields: BTreeMap<String, serde_json::Value>,
}

/// A gateway client template, as [`WgGatewayServerTemplateSpec`] for GatewayClients.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "networking.liqo.io",
    version = "v1beta1",
    kind = "WgGatewayClientTemplate",
    plural = "wggatewayclienttemplates",
    namespaced,
    schema = "disabled"
)]
pub struct WgGatewayClientTemplateSpec {
    #[serde(flatten)]
    pub fields: BTreeMap<String, serde_json::Value>,
}

// ---------------------------------------------------------------------------------------------------------------
// WgGatewayServer / WgGatewayClient (rendered from the templates by Liqo; read-only for users)
// ---------------------------------------------------------------------------------------------------------------

/// The rendered WireGuard server. `deployment` and `service` are embedded Kubernetes objects
/// (`{metadata, spec}`), kept untyped because only Liqo's gateway controller interprets them.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "networking.liqo.io",
    version = "v1beta1",
    kind = "WgGatewayServer",
    plural = "wggatewayservers",
    namespaced,
    status = "WgGatewayServerStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct WgGatewayServerSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WgGatewayServerStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<EndpointStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_endpoint: Option<InternalGatewayEndpoint>,
}

/// The rendered WireGuard client (see [`WgGatewayServerSpec`] for why `deployment` is untyped).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "networking.liqo.io",
    version = "v1beta1",
    kind = "WgGatewayClient",
    plural = "wggatewayclients",
    namespaced,
    status = "WgGatewayClientStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct WgGatewayClientSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WgGatewayClientStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_endpoint: Option<InternalGatewayEndpoint>,
}
