//! `core.liqo.io/v1beta1`: ForeignCluster (cluster-scoped, name = peer cluster ID, created by Liqo).
use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::conditions::LiqoCondition;

pub const ROLE_CONSUMER: &str = "Consumer";
pub const ROLE_PROVIDER: &str = "Provider";
pub const ROLE_CONSUMER_AND_PROVIDER: &str = "ConsumerAndProvider";
pub const ROLE_UNKNOWN: &str = "Unknown";

/// Condition types of the modules.
pub const API_SERVER_STATUS: &str = "APIServerStatus";
pub const NETWORK_CONFIGURATION_STATUS: &str = "NetworkConfigurationStatus";
pub const NETWORK_GATEWAY_PRESENCE: &str = "NetworkGatewayPresence";
pub const NETWORK_GATEWAY_SERVER_STATUS: &str = "NetworkGatewayServerStatus";
pub const NETWORK_GATEWAY_CLIENT_STATUS: &str = "NetworkGatewayClientStatus";
pub const NETWORK_CONNECTION_STATUS: &str = "NetworkConnectionStatus";
pub const AUTH_TENANT_STATUS: &str = "AuthTenantStatus";
pub const AUTH_IDENTITY_CONTROL_PLANE_STATUS: &str = "AuthIdentityControlPlaneStatus";
pub const OFFLOADING_VIRTUAL_NODE_STATUS: &str = "OffloadingVirtualNodeStatus";
pub const OFFLOADING_NODE_STATUS: &str = "OffloadingNodeStatus";

/// Condition status values.
pub const STATUS_NONE: &str = "None";
pub const STATUS_PENDING: &str = "Pending";
pub const STATUS_ESTABLISHED: &str = "Established";
pub const STATUS_ERROR: &str = "Error";
pub const STATUS_READY: &str = "Ready";
pub const STATUS_NOT_READY: &str = "NotReady";
pub const STATUS_SOME_NOT_READY: &str = "SomeNotReady";

#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "core.liqo.io",
    version = "v1beta1",
    kind = "ForeignCluster",
    plural = "foreignclusters",
    status = "ForeignClusterStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ForeignClusterSpec {
    /// Required and immutable.
    #[serde(rename = "clusterID", default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
}

/// One module (`networking`, `authentication`, `offloading`); `enabled` is required by the CRD.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Module {
    pub enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<LiqoCondition>>,
}

impl Module {
    /// `liqoctl info`'s rule: healthy iff enabled and every condition is Established or Ready.
    pub fn is_healthy(&self) -> bool {
        self.enabled
            && self.conditions.iter().flatten().all(|c| c.status == STATUS_ESTABLISHED || c.status == STATUS_READY)
    }
}

/// All three modules are required by the CRD once `modules` is present.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Modules {
    pub networking: Module,
    pub authentication: Module,
    pub offloading: Module,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantNamespaces {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForeignClusterStatus {
    /// `Consumer` | `Provider` | `ConsumerAndProvider` | `Unknown` (required by the CRD).
    #[serde(default)]
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modules: Option<Modules>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<LiqoCondition>>,
    #[serde(rename = "apiServerUrl", default, skip_serializing_if = "Option::is_none")]
    pub api_server_url: Option<String>,
    #[serde(rename = "foreignProxyUrl", default, skip_serializing_if = "Option::is_none")]
    pub foreign_proxy_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_namespace: Option<TenantNamespaces>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
