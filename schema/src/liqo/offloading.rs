//! `offloading.liqo.io/v1beta1`: VirtualNode and NamespaceOffloading (both consumer side).
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeAffinity, NodeSelector, ObjectReference, Taint, Toleration};
use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::authentication::{IngressType, LoadBalancerType, ResourceList, StorageType};
use super::conditions::{LiqoCondition, find_condition};
use super::networking::SecretReference;

// ---------------------------------------------------------------------------------------------------------------
// VirtualNode
// ---------------------------------------------------------------------------------------------------------------

pub const VIRTUAL_NODE_CONDITION_VIRTUAL_KUBELET: &str = "VirtualKubelet";
pub const VIRTUAL_NODE_CONDITION_NODE: &str = "Node";
pub const VIRTUAL_NODE_NONE: &str = "None";
pub const VIRTUAL_NODE_RUNNING: &str = "Running";
pub const VIRTUAL_NODE_CREATING: &str = "Creating";
pub const VIRTUAL_NODE_DRAINING: &str = "Draining";
pub const VIRTUAL_NODE_DELETING: &str = "Deleting";

/// `spec.resourceQuota` (a `ResourceQuotaSpec`; only `hard` is used by Liqo's peering flow).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceQuotaSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hard: Option<ResourceList>,
}

/// Normally created by Liqo from an accepted ResourceSlice (same name, ownerRef = the ResourceSlice).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "offloading.liqo.io",
    version = "v1beta1",
    kind = "VirtualNode",
    plural = "virtualnodes",
    namespaced,
    status = "VirtualNodeStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct VirtualNodeSpec {
    /// Provider cluster ID.
    #[serde(rename = "clusterID", default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_node: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_network_check: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_secret_ref: Option<SecretReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_quota: Option<ResourceQuotaSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Taints of the Node, besides the one Liqo's virtual kubelet always adds ([`VIRTUAL_NODE_TAINT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taints: Option<Vec<Taint>>,
    /// What the virtual kubelet adds to each pod's copy on the provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offloading_patch: Option<OffloadingPatch>,
    /// The VkOptionsTemplate (namespace and name) Liqo's webhook makes the virtual kubelet's Deployment from, when
    /// the VirtualNode is created; none: the template installed with Liqo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vk_options_template_ref: Option<ObjectReference>,
    /// The classes the virtual kubelet maps Liqo's own to on the provider (the default one, or the first), read
    /// by Liqo's webhook only when the VirtualNode is created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_classes: Option<Vec<StorageType>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_classes: Option<Vec<IngressType>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_classes: Option<Vec<LoadBalancerType>>,
}

/// The taint Liqo's virtual kubelet puts on every virtual node (`consts.VirtualNodeTolerationKey`, value `true`,
/// `NoExecute`); Liqo's webhook gives the pods of offloaded namespaces its toleration.
pub const VIRTUAL_NODE_TAINT: &str = "virtual-node.liqo.io/not-allowed";
/// The RuntimeClass Liqo installs to send pods to virtual nodes (`consts.LiqoRuntimeClassName`); the virtual kubelet
/// never gives it to a pod's copy.
pub const LIQO_RUNTIME_CLASS: &str = "liqo";

/// The part of a VirtualNode's `spec.offloadingPatch` this provider sets: the virtual kubelet adds `nodeSelector` to
/// each offloaded pod's copy on the provider, appends `tolerations` to its tolerations and gives it
/// `runtimeClassName` unless the pod names one of its own; it leaves the labels and annotations of
/// `labelsNotReflected`/`annotationsNotReflected` off the copies (and off every object it reflects), a list Liqo's
/// webhook extends with the keys of the VkOptionsTemplate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OffloadingPatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_class_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels_not_reflected: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations_not_reflected: Option<Vec<String>>,
    /// Appended to each copy's node affinity: the required terms to its required terms, the preferred ones to its
    /// preferred ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
}

/// Liqo's `offloadingPatch.affinity`: a node affinity only.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Affinity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_affinity: Option<NodeAffinity>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VirtualNodeStatus {
    /// `VirtualKubelet` and `Node`, each `None` | `Creating` | `Running` | `Draining` | `Deleting`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<LiqoCondition>>,
}

impl VirtualNodeStatus {
    pub fn condition(&self, type_: &str) -> Option<&LiqoCondition> {
        find_condition(self.conditions.as_deref(), type_)
    }
}

// ---------------------------------------------------------------------------------------------------------------
// NamespaceOffloading
// ---------------------------------------------------------------------------------------------------------------

pub const MAPPING_ENFORCE_SAME_NAME: &str = "EnforceSameName";
pub const MAPPING_DEFAULT_NAME: &str = "DefaultName";
pub const MAPPING_SELECTED_NAME: &str = "SelectedName";
pub const POD_OFFLOADING_LOCAL: &str = "Local";
pub const POD_OFFLOADING_REMOTE: &str = "Remote";
pub const POD_OFFLOADING_LOCAL_AND_REMOTE: &str = "LocalAndRemote";
pub const OFFLOADING_PHASE_READY: &str = "Ready";
pub const OFFLOADING_PHASE_NO_CLUSTER_SELECTED: &str = "NoClusterSelected";
pub const OFFLOADING_PHASE_IN_PROGRESS: &str = "InProgress";
pub const OFFLOADING_PHASE_SOME_FAILED: &str = "SomeFailed";
pub const OFFLOADING_PHASE_ALL_FAILED: &str = "AllFailed";
pub const OFFLOADING_PHASE_TERMINATING: &str = "Terminating";
/// Remote-namespace condition types.
pub const REMOTE_NAMESPACE_OFFLOADING_REQUIRED: &str = "OffloadingRequired";
pub const REMOTE_NAMESPACE_READY: &str = "Ready";

/// Must be named `offloading` and live in the namespace to offload.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "offloading.liqo.io",
    version = "v1beta1",
    kind = "NamespaceOffloading",
    plural = "namespaceoffloadings",
    namespaced,
    status = "NamespaceOffloadingStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceOffloadingSpec {
    /// `EnforceSameName` | `DefaultName` (default) | `SelectedName`; immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_mapping_strategy: Option<String>,
    /// Required iff `SelectedName`; immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_namespace_name: Option<String>,
    /// `Local` | `Remote` | `LocalAndRemote` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_offloading_strategy: Option<String>,
    /// Virtual nodes to offload to; no terms selects all of them (never send `nodeSelectorTerms: null`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<NodeSelector>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceOffloadingStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_namespace_name: Option<String>,
    /// `Ready` | `NoClusterSelected` | `InProgress` | `SomeFailed` | `AllFailed` | `Terminating`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offloading_phase: Option<String>,
    /// Per remote cluster (keyed by NamespaceMap name), conditions `OffloadingRequired` / `Ready`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_namespaces_conditions: Option<BTreeMap<String, Vec<LiqoCondition>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// What Liqo enforces for one ResourceSlice on the provider (made by its quota creator, owned by the slice): the
/// ShadowPod webhook refuses new pods of `user` while `cordoned` is true (the slice's `liqo.io/cordon` annotation, or
/// its tenant's cordon).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "offloading.liqo.io",
    version = "v1beta1",
    kind = "Quota",
    plural = "quotas",
    namespaced,
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct QuotaSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cordoned: Option<bool>,
}
