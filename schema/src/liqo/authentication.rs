//! `authentication.liqo.io/v1beta1`: Tenant (provider side), ResourceSlice (consumer side, replicated to the
//! provider) and Identity (consumer side, handshake path).
use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::conditions::{LiqoCondition, find_condition};

/// A Kubernetes `ResourceList` (`cpu`, `memory`, `pods`, extended resources).
pub type ResourceList = BTreeMap<String, Quantity>;

// ---------------------------------------------------------------------------------------------------------------
// Tenant
// ---------------------------------------------------------------------------------------------------------------

pub const AUTHZ_POLICY_KEYS_EXCHANGE: &str = "KeysExchange";
pub const AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE: &str = "TolerateNoHandshake";
pub const TENANT_CONDITION_ACTIVE: &str = "Active";
pub const TENANT_CONDITION_CORDONED: &str = "Cordoned";
pub const TENANT_CONDITION_DRAINED: &str = "Drained";

/// Represents the consumer on the provider cluster.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "authentication.liqo.io",
    version = "v1beta1",
    kind = "Tenant",
    plural = "tenants",
    namespaced,
    status = "TenantStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct TenantSpec {
    /// Consumer cluster ID (immutable).
    #[serde(rename = "clusterID", default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    /// `KeysExchange` (default) | `TolerateNoHandshake`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authz_policy: Option<String>,
    /// `Active` (default) | `Cordoned` | `Drained`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_condition: Option<String>,
    #[serde(rename = "proxyURL", default, skip_serializing_if = "Option::is_none")]
    pub proxy_url: Option<String>,
    /// Handshake only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<ByteString>,
    /// Handshake only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csr: Option<ByteString>,
    /// Handshake only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<ByteString>,
}

/// Credentials Liqo hands out after a handshake (or for a ResourceSlice).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<ByteString>,
    #[serde(rename = "signedCRT", default, skip_serializing_if = "Option::is_none")]
    pub signed_crt: Option<ByteString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_server: Option<String>,
    #[serde(rename = "proxyURL", default, skip_serializing_if = "Option::is_none")]
    pub proxy_url: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_params: Option<AuthParams>,
}

// ---------------------------------------------------------------------------------------------------------------
// ResourceSlice
// ---------------------------------------------------------------------------------------------------------------

pub const RESOURCE_SLICE_CONDITION_AUTHENTICATION: &str = "Authentication";
pub const RESOURCE_SLICE_CONDITION_RESOURCES: &str = "Resources";
pub const RESOURCE_SLICE_ACCEPTED: &str = "Accepted";
pub const RESOURCE_SLICE_DENIED: &str = "Denied";
pub const RESOURCE_SLICE_AUTHENTICATION_ACCEPTED_REASON: &str = "ResourceSliceAuthenticationAccepted";
pub const RESOURCE_SLICE_AUTHENTICATION_DENIED_REASON: &str = "ResourceSliceAuthenticationDenied";
pub const RESOURCE_SLICE_RESOURCES_ACCEPTED_REASON: &str = "ResourceSliceResourcesAccepted";
pub const RESOURCE_SLICE_RESOURCES_DENIED_REASON: &str = "ResourceSliceResourcesDenied";
/// Class handled by Liqo's built-in controller (`""` is treated the same).
pub const RESOURCE_SLICE_CLASS_DEFAULT: &str = "default";

#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "authentication.liqo.io",
    version = "v1beta1",
    kind = "ResourceSlice",
    plural = "resourceslices",
    namespaced,
    status = "ResourceSliceStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSliceSpec {
    /// Filled by Liqo's consumer controller — do not own it.
    #[serde(rename = "consumerClusterID", default, skip_serializing_if = "Option::is_none")]
    pub consumer_cluster_id: Option<String>,
    #[serde(rename = "providerClusterID", default, skip_serializing_if = "Option::is_none")]
    pub provider_cluster_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceList>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Generated by Liqo's consumer controller — do not own it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csr: Option<ByteString>,
}

/// A storage class offered by the provider (`default`: the one the virtual kubelet maps Liqo's class to).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageType {
    pub storage_class_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
}

/// An ingress class offered by the provider, as [`StorageType`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IngressType {
    pub ingress_class_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
}

/// A load-balancer class offered by the provider, as [`StorageType`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerType {
    pub load_balancer_class_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSliceStatus {
    /// `Authentication` and `Resources`, each `Accepted` | `Denied`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<LiqoCondition>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceList>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_params: Option<AuthParams>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_classes: Option<Vec<StorageType>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_classes: Option<Vec<IngressType>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_classes: Option<Vec<LoadBalancerType>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
}

impl ResourceSlice {
    /// Liqo's rule for a ResourceSlice's cordons (`hasToBeCordoned` of its quota creator): the annotation is there
    /// and not `false`, `False` or `0`. Returns (the slice's own, its tenant's).
    pub fn cordons(&self) -> (bool, bool) {
        let set = |key: &str| {
            self.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(key))
                .is_some_and(|v| !matches!(v.as_str(), "false" | "False" | "0"))
        };
        (set(super::labels::CORDON), set(super::labels::CORDON_TENANT))
    }
}

impl ResourceSliceStatus {
    pub fn condition(&self, type_: &str) -> Option<&LiqoCondition> {
        find_condition(self.conditions.as_deref(), type_)
    }

    /// Both Authentication and Resources are Accepted.
    pub fn is_accepted(&self) -> bool {
        [RESOURCE_SLICE_CONDITION_AUTHENTICATION, RESOURCE_SLICE_CONDITION_RESOURCES]
            .iter()
            .all(|t| self.condition(t).is_some_and(|c| c.status == RESOURCE_SLICE_ACCEPTED))
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Identity
// ---------------------------------------------------------------------------------------------------------------

#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "authentication.liqo.io",
    version = "v1beta1",
    kind = "Identity",
    plural = "identities",
    namespaced,
    status = "IdentityStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct IdentitySpec {
    #[serde(rename = "clusterID", default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    /// `ControlPlane` | `ResourceSlice`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_params: Option<AuthParams>,
    /// Provider tenant namespace (ControlPlane identities).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdentityStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_secret_ref: Option<super::networking::SecretReference>,
}
