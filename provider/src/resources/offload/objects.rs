//! The objects `liqo_offload` writes (the NamespaceOffloading `offloading` and, with `create_namespace`, the
//! Namespace) built from a plan, and the state read back from a live NamespaceOffloading.
use crate::resources::shared::node_selector;
use std::collections::BTreeMap;

use super::schema::attr;
use k8s_openapi::api::core::v1::{Namespace, NodeSelector};
use kube::api::ObjectMeta;
use liqo_schema::liqo::{
    MAPPING_DEFAULT_NAME, MAPPING_SELECTED_NAME, NamespaceOffloading, NamespaceOffloadingSpec,
    POD_OFFLOADING_LOCAL_AND_REMOTE, labels,
};
use liqo_schema::tf::Value;

impl attr::Offload {
    /// The Namespace as `create_namespace` applies it; `ours` adds the marker that makes destroy delete it, and
    /// applying it without (as the same field manager) removes the marker again.
    pub fn namespace_object(&self, ours: bool) -> Namespace {
        let marker = ours.then(|| BTreeMap::from([crate::kube::provider_mark()]));
        Namespace {
            metadata: ObjectMeta { name: Some(self.namespace.clone()), labels: marker, ..Default::default() },
            ..Default::default()
        }
    }

    /// The NamespaceOffloading. `clusterSelector` is always sent with a (possibly empty) list of terms — an
    /// empty list is Liqo's "every virtual node" and `nodeSelectorTerms: null` is never sent. The remote name is
    /// sent only with SelectedName (the only strategy that reads it; the webhook freezes it).
    pub fn namespace_offloading(&self) -> NamespaceOffloading {
        let selected = self.namespace_mapping_strategy == MAPPING_SELECTED_NAME;
        let spec = NamespaceOffloadingSpec {
            namespace_mapping_strategy: Some(self.namespace_mapping_strategy.clone()),
            remote_namespace_name: self.remote_namespace_name.as_str().filter(|_| selected).map(str::to_string),
            pod_offloading_strategy: Some(self.pod_offloading_strategy.clone()),
            cluster_selector: Some(NodeSelector {
                node_selector_terms: node_selector::terms_from_value(&self.cluster_selector),
            }),
        };
        let mut o = NamespaceOffloading::new(labels::NAMESPACE_OFFLOADING_NAME, spec);
        o.metadata.namespace = Some(self.namespace.clone());
        o
    }
}

/// The state as the cluster has it; `prior` (Null on import: the declared defaults) provides what the cluster does
/// not hold.
pub fn observed_state(prior: &Value, o: &NamespaceOffloading) -> attr::Offload {
    let mut s = attr::Offload::of(prior);
    s.namespace = o.metadata.namespace.clone().unwrap_or_default();
    let spec = &o.spec;
    s.namespace_mapping_strategy = spec.namespace_mapping_strategy.as_deref().unwrap_or(MAPPING_DEFAULT_NAME).into();
    s.pod_offloading_strategy =
        spec.pod_offloading_strategy.as_deref().unwrap_or(POD_OFFLOADING_LOCAL_AND_REMOTE).into();
    let status = o.status.clone().unwrap_or_default();
    let remote = status.remote_namespace_name.or_else(|| spec.remote_namespace_name.clone());
    if let Some(remote) = remote {
        s.remote_namespace_name = Value::string(remote);
    } else if s.remote_namespace_name.is_unknown() {
        s.remote_namespace_name = Value::Null;
    }
    let terms = spec.cluster_selector.as_ref().map(|s| s.node_selector_terms.as_slice()).unwrap_or_default();
    s.cluster_selector = node_selector::terms_to_value(&s.cluster_selector, terms);
    s.offloading_phase = status.offloading_phase;
    s
}
