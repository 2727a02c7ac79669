//! The objects `liqo_offload` writes (the NamespaceOffloading `offloading` and, with `create_namespace`, the
//! Namespace) built from a plan, and the state read back from a live NamespaceOffloading.
use crate::resources::lifecycle::known_string;
use crate::resources::shared::node_selector;
use std::collections::BTreeMap;

use super::schema::attr;
use crate::attributes::Key;
use k8s_openapi::api::core::v1::{Namespace, NodeSelector, NodeSelectorTerm};
use kube::api::ObjectMeta;
use liqo_schema::liqo::{
    MAPPING_DEFAULT_NAME, MAPPING_SELECTED_NAME, NamespaceOffloading, NamespaceOffloadingSpec,
    POD_OFFLOADING_LOCAL_AND_REMOTE, labels,
};
use liqo_schema::tf::{Diagnostic, Value};

#[derive(Clone, Debug, PartialEq)]
pub struct Offload {
    pub namespace: String,
    pub create_namespace: bool,
    mapping: String,
    /// Sent only with SelectedName (the only strategy that reads it; the webhook freezes it).
    selected_name: Option<String>,
    pod_strategy: String,
    terms: Vec<NodeSelectorTerm>,
}

impl Offload {
    pub fn from_value(v: &Value) -> Result<Offload, Diagnostic> {
        let s = |key: Key| known_string(v, key);
        let mapping = s(attr::namespace_mapping_strategy)?;
        let selected_name = if mapping == MAPPING_SELECTED_NAME { Some(s(attr::remote_namespace_name)?) } else { None };
        Ok(Offload {
            namespace: s(attr::namespace)?,
            create_namespace: v.get(attr::create_namespace).as_bool().unwrap_or(false),
            mapping,
            selected_name,
            pod_strategy: s(attr::pod_offloading_strategy)?,
            terms: node_selector::terms_from_value(v.get(attr::cluster_selector)),
        })
    }

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
    /// empty list is Liqo's "every virtual node" and `nodeSelectorTerms: null` is never sent.
    pub fn namespace_offloading(&self) -> NamespaceOffloading {
        let spec = NamespaceOffloadingSpec {
            namespace_mapping_strategy: Some(self.mapping.clone()),
            remote_namespace_name: self.selected_name.clone(),
            pod_offloading_strategy: Some(self.pod_strategy.clone()),
            cluster_selector: Some(NodeSelector { node_selector_terms: self.terms.clone() }),
        };
        let mut o = NamespaceOffloading::new(labels::NAMESPACE_OFFLOADING_NAME, spec);
        o.metadata.namespace = Some(self.namespace.clone());
        o
    }
}

/// The state as the cluster has it; `prior` (Null on import) provides what the cluster does not hold.
pub fn observed_state(prior: &Value, o: &NamespaceOffloading) -> Value {
    let mut s =
        if prior.is_null() { Value::object([(attr::create_namespace, Value::Bool(false))]) } else { prior.clone() };
    let ns = o.metadata.namespace.clone().unwrap_or_default();
    s.set(attr::namespace, Value::string(ns));
    let spec = &o.spec;
    s.set(
        attr::namespace_mapping_strategy,
        Value::string(spec.namespace_mapping_strategy.as_deref().unwrap_or(MAPPING_DEFAULT_NAME)),
    );
    s.set(
        attr::pod_offloading_strategy,
        Value::string(spec.pod_offloading_strategy.as_deref().unwrap_or(POD_OFFLOADING_LOCAL_AND_REMOTE)),
    );
    let status = o.status.clone().unwrap_or_default();
    let remote = status.remote_namespace_name.or_else(|| spec.remote_namespace_name.clone());
    if let Some(remote) = remote {
        s.set(attr::remote_namespace_name, Value::string(remote));
    } else if s.get(attr::remote_namespace_name).is_unknown() {
        s.set(attr::remote_namespace_name, Value::Null);
    }
    let terms = spec.cluster_selector.as_ref().map(|s| s.node_selector_terms.as_slice()).unwrap_or_default();
    s.set(attr::cluster_selector, node_selector::terms_to_value(prior.get(attr::cluster_selector), terms));
    s.set(attr::offloading_phase, Value::opt_string(status.offloading_phase));
    s
}
