//! `ipam.liqo.io/v1alpha1`: Network (read-only for the provider; `status.cidr` is what peers receive).
use kube::CustomResource;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "ipam.liqo.io",
    version = "v1alpha1",
    kind = "Network",
    plural = "networks",
    namespaced,
    status = "NetworkStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct NetworkSpec {
    /// Desired CIDR (immutable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cidr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_allocated: Option<i32>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkStatus {
    /// Assigned (possibly remapped) CIDR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cidr: Option<String>,
}
