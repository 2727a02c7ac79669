//! The VirtualNode `liqo_virtual_node` writes, built from a plan, and the state read back from a live one.
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    NodeAffinity, NodeSelector, NodeSelectorTerm, ObjectReference, PreferredSchedulingTerm, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use liqo_schema::liqo::networking::SecretReference;
use liqo_schema::liqo::{
    Affinity, IngressType, LoadBalancerType, OffloadingPatch, ResourceQuotaSpec, ResourceSlice, StorageType,
    VirtualNode, VirtualNodeSpec, labels,
};
use liqo_schema::tf::{Diagnostic, Value};

use super::schema::attr;
use crate::attributes::Key;
use crate::resources::lifecycle::{self, known_string, observed_map};
use crate::resources::shared::node_selector;

#[derive(Clone, Debug, PartialEq)]
pub struct Wanted {
    pub name: String,
    pub tenant_namespace: String,
    pub provider_cluster_id: String,
    pub resource_slice_name: String,
    resources: BTreeMap<String, String>,
    pub labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    node_selector: BTreeMap<String, String>,
    tolerations: Vec<Toleration>,
    runtime_class_name: Option<String>,
    labels_not_reflected: Vec<String>,
    annotations_not_reflected: Vec<String>,
    /// `(namespace, name)`.
    vk_options_template: Option<(String, String)>,
    required_affinity: Vec<NodeSelectorTerm>,
    preferred_affinity: Vec<PreferredSchedulingTerm>,
    /// Unknown in a create's plan when left out: the slice's ([`Wanted::with_slice_classes`]).
    pub classes: Classes,
}

/// The provider's storage, ingress and load-balancer classes the node offers, each the default first; `None`: not
/// known yet.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Classes {
    storage: Option<Vec<String>>,
    ingress: Option<Vec<String>>,
    load_balancer: Option<Vec<String>>,
}

impl Classes {
    fn from_value(v: &Value) -> Classes {
        let names = |key: Key| v.get(key).is_wholly_known().then(|| v.get(key).string_elements().unwrap_or_default());
        Classes {
            storage: names(attr::storage_classes),
            ingress: names(attr::ingress_classes),
            load_balancer: names(attr::load_balancer_classes),
        }
    }

    /// The classes Liqo keeps (the default one flagged), as names, the default first.
    fn from_liqo(
        storage: Option<&[StorageType]>,
        ingress: Option<&[IngressType]>,
        lb: Option<&[LoadBalancerType]>,
    ) -> Classes {
        fn names<T>(classes: Option<&[T]>, name: fn(&T) -> &str, default: fn(&T) -> bool) -> Option<Vec<String>> {
            let classes = classes.unwrap_or_default();
            let (first, rest): (Vec<&T>, Vec<&T>) = classes.iter().partition(|c| default(c));
            Some(first.into_iter().chain(rest).map(|c| name(c).to_owned()).collect())
        }
        Classes {
            storage: names(storage, |c| &c.storage_class_name, |c| c.default == Some(true)),
            ingress: names(ingress, |c| &c.ingress_class_name, |c| c.default == Some(true)),
            load_balancer: names(lb, |c| &c.load_balancer_class_name, |c| c.default == Some(true)),
        }
    }

    /// Each class not known yet, from `other`.
    fn or(self, other: Classes) -> Classes {
        Classes {
            storage: self.storage.or(other.storage),
            ingress: self.ingress.or(other.ingress),
            load_balancer: self.load_balancer.or(other.load_balancer),
        }
    }

    /// Written into `state`.
    pub fn set_in(&self, state: &mut Value) {
        for (key, names) in [
            (attr::storage_classes, &self.storage),
            (attr::ingress_classes, &self.ingress),
            (attr::load_balancer_classes, &self.load_balancer),
        ] {
            state.set(key, names.as_ref().map_or(Value::Unknown, |n| Value::string_list(n.iter().cloned())));
        }
    }

    /// As Liqo's VirtualNode holds them, the first flagged default (as `liqoctl create virtualnode` writes them);
    /// none for an empty list.
    fn to_liqo<T>(names: &Option<Vec<String>>, class: fn(String, bool) -> T) -> Option<Vec<T>> {
        let names = names.as_ref().filter(|n| !n.is_empty())?;
        Some(names.iter().enumerate().map(|(i, n)| class(n.clone(), i == 0)).collect())
    }
}

impl Wanted {
    pub fn from_value(v: &Value) -> Result<Wanted, Diagnostic> {
        let s = |key: Key| known_string(v, key);
        let map = |key: Key| v.get(key).string_entries().unwrap_or_default();
        Ok(Wanted {
            name: s(attr::name)?,
            tenant_namespace: s(attr::tenant_namespace)?,
            provider_cluster_id: s(attr::provider_cluster_id)?,
            resource_slice_name: s(attr::resource_slice_name)?,
            resources: map(attr::resources),
            labels: map(attr::labels),
            annotations: map(attr::annotations),
            taints: Wanted::taints_of(v),
            node_selector: map(attr::node_selector),
            tolerations: v.get(attr::tolerations).elements().iter().map(toleration_from_value).collect(),
            runtime_class_name: v.get(attr::runtime_class_name).as_str().map(str::to_owned),
            labels_not_reflected: v.get(attr::labels_not_reflected).string_elements().unwrap_or_default(),
            annotations_not_reflected: v.get(attr::annotations_not_reflected).string_elements().unwrap_or_default(),
            vk_options_template: v
                .get(attr::vk_options_template)
                .as_str()
                .and_then(|r| r.split_once('/'))
                .map(|(namespace, name)| (namespace.to_owned(), name.to_owned())),
            required_affinity: node_selector::terms_from_value(v.get(attr::required_node_affinity)),
            preferred_affinity: node_selector::weighted_from_value(v.get(attr::preferred_node_affinity)),
            classes: Classes::from_value(v),
        })
    }

    /// The classes left out taken from the slice's status, as `liqoctl create virtualnode --resource-slice-name`
    /// and Liqo's own virtual node for a slice take them.
    pub fn with_slice_classes(mut self, slice: &ResourceSlice) -> Wanted {
        let status = slice.status.clone().unwrap_or_default();
        let reported = Classes::from_liqo(
            status.storage_classes.as_deref(),
            status.ingress_classes.as_deref(),
            status.load_balancer_classes.as_deref(),
        );
        self.classes = self.classes.or(reported);
        self
    }

    /// The VirtualNode's offloading patch: none when nothing of it is set.
    fn offloading_patch(&self) -> Option<OffloadingPatch> {
        let patch = OffloadingPatch {
            node_selector: (!self.node_selector.is_empty()).then(|| self.node_selector.clone()),
            tolerations: (!self.tolerations.is_empty()).then(|| self.tolerations.clone()),
            runtime_class_name: self.runtime_class_name.clone(),
            labels_not_reflected: (!self.labels_not_reflected.is_empty()).then(|| self.labels_not_reflected.clone()),
            annotations_not_reflected: (!self.annotations_not_reflected.is_empty())
                .then(|| self.annotations_not_reflected.clone()),
            affinity: (!self.required_affinity.is_empty() || !self.preferred_affinity.is_empty()).then(|| Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: (!self.required_affinity.is_empty())
                        .then(|| NodeSelector { node_selector_terms: self.required_affinity.clone() }),
                    preferred_during_scheduling_ignored_during_execution: (!self.preferred_affinity.is_empty())
                        .then(|| self.preferred_affinity.clone()),
                }),
            }),
        };
        (patch != OffloadingPatch::default()).then_some(patch)
    }

    /// The taints a plan or state gives the node (none for null).
    pub fn taints_of(v: &Value) -> Vec<Taint> {
        v.get(attr::taints).elements().iter().map(taint_from_value).collect()
    }

    /// The VirtualNode as `liqoctl create virtualnode --resource-slice-name` forges it: the provider's ID as a label
    /// of the object and of the node, the slice's Identity kubeconfig for the virtual kubelet, the resources as the
    /// node's quota, and a Node. The slice's name is kept in the label Liqo puts on the virtual nodes it makes for
    /// slices, which is how a read or an import knows the slice.
    pub fn virtual_node(&self, kubeconfig_secret: &str) -> VirtualNode {
        let provider = || (labels::REMOTE_CLUSTER_ID.to_string(), self.provider_cluster_id.clone());
        let mut node_labels = self.labels.clone();
        node_labels.extend([provider()]);
        let spec = VirtualNodeSpec {
            cluster_id: Some(self.provider_cluster_id.clone()),
            create_node: Some(true),
            disable_network_check: None,
            kubeconfig_secret_ref: Some(SecretReference { name: Some(kubeconfig_secret.to_string()) }),
            resource_quota: Some(ResourceQuotaSpec {
                hard: Some(self.resources.iter().map(|(k, q)| (k.clone(), Quantity(q.clone()))).collect()),
            }),
            labels: Some(node_labels),
            annotations: (!self.annotations.is_empty()).then(|| self.annotations.clone()),
            taints: (!self.taints.is_empty()).then(|| self.taints.clone()),
            offloading_patch: self.offloading_patch(),
            vk_options_template_ref: self.vk_options_template.as_ref().map(|(namespace, name)| ObjectReference {
                namespace: Some(namespace.clone()),
                name: Some(name.clone()),
                ..Default::default()
            }),
            storage_classes: Classes::to_liqo(&self.classes.storage, |storage_class_name, default| StorageType {
                storage_class_name,
                default: Some(default),
            }),
            ingress_classes: Classes::to_liqo(&self.classes.ingress, |ingress_class_name, default| IngressType {
                ingress_class_name,
                default: Some(default),
            }),
            load_balancer_classes: Classes::to_liqo(
                &self.classes.load_balancer,
                |load_balancer_class_name, default| LoadBalancerType {
                    load_balancer_class_name,
                    default: Some(default),
                },
            ),
        };
        let mut vn = VirtualNode::new(&self.name, spec);
        vn.metadata.namespace = Some(self.tenant_namespace.clone());
        vn.metadata.labels = Some(BTreeMap::from([
            provider(),
            (labels::RESOURCE_SLICE_NAME.to_string(), self.resource_slice_name.clone()),
            crate::kube::provider_mark(),
        ]));
        vn
    }
}

/// The state from a live VirtualNode. `resources`, `labels` and `annotations` hold the keys this resource set
/// ([`observed_map`]; on import every one but Liqo's own label), so keys someone else adds are not drift.
pub fn observed_state(prior: &Value, vn: &VirtualNode) -> Value {
    let mut s = if prior.is_null() { Value::Object(Default::default()) } else { prior.clone() };
    s.set(attr::name, Value::opt_string(vn.metadata.name.clone()));
    s.set(attr::tenant_namespace, Value::opt_string(vn.metadata.namespace.clone()));
    s.set(attr::provider_cluster_id, Value::opt_string(vn.spec.cluster_id.clone()));
    let label = vn.metadata.labels.as_ref().and_then(|l| l.get(labels::RESOURCE_SLICE_NAME));
    s.set(attr::resource_slice_name, Value::opt_string(label.cloned()));

    let managed = |key: Key| (!prior.is_null()).then(|| prior.get(key));
    let hard = vn.spec.resource_quota.as_ref().and_then(|q| q.hard.as_ref());
    let quota = hard.iter().flat_map(|h| h.iter()).map(|(k, q)| (k.clone(), q.0.clone())).collect();
    s.set(attr::resources, observed_map(managed(attr::resources), quota, crate::quantity::same));
    let mut node_labels = vn.spec.labels.clone().unwrap_or_default();
    node_labels.remove(labels::REMOTE_CLUSTER_ID);
    s.set(attr::labels, observed_map(managed(attr::labels), node_labels, |a, b| a == b));
    let annotations = vn.spec.annotations.clone().unwrap_or_default();
    s.set(attr::annotations, observed_map(managed(attr::annotations), annotations, |a, b| a == b));
    // The taints and the offloading patch's fields are this resource's whole: read as Liqo has them.
    let taints = vn.spec.taints.as_deref().unwrap_or_default();
    s.set(attr::taints, or_empty_as_written(prior.get(attr::taints), taints.iter().map(taint_to_value).collect()));
    let patch = vn.spec.offloading_patch.clone().unwrap_or_default();
    let selector = patch.node_selector.unwrap_or_default();
    let selector = match selector.is_empty() {
        true => lifecycle::empty_as_written(prior.get(attr::node_selector)),
        false => Value::string_map(selector),
    };
    s.set(attr::node_selector, selector);
    s.set(attr::runtime_class_name, Value::opt_string(patch.runtime_class_name.filter(|r| !r.is_empty())));
    let tolerations = patch.tolerations.unwrap_or_default().iter().map(toleration_to_value).collect();
    s.set(attr::tolerations, or_empty_as_written(prior.get(attr::tolerations), tolerations));
    let template =
        vn.spec.vk_options_template_ref.as_ref().and_then(|r| Some((r.namespace.as_ref()?, r.name.as_ref()?)));
    s.set(
        attr::vk_options_template,
        Value::opt_string(template.map(|(namespace, name)| format!("{namespace}/{name}"))),
    );
    let affinity = patch.affinity.and_then(|a| a.node_affinity).unwrap_or_default();
    let required = affinity.required_during_scheduling_ignored_during_execution.map(|r| r.node_selector_terms);
    s.set(
        attr::required_node_affinity,
        node_selector::terms_to_value(prior.get(attr::required_node_affinity), &required.unwrap_or_default()),
    );
    let preferred = affinity.preferred_during_scheduling_ignored_during_execution.unwrap_or_default();
    s.set(
        attr::preferred_node_affinity,
        node_selector::weighted_to_value(prior.get(attr::preferred_node_affinity), &preferred),
    );
    let spec = &vn.spec;
    Classes::from_liqo(
        spec.storage_classes.as_deref(),
        spec.ingress_classes.as_deref(),
        spec.load_balancer_classes.as_deref(),
    )
    .set_in(&mut s);
    for (key, live) in [
        (attr::labels_not_reflected, patch.labels_not_reflected),
        (attr::annotations_not_reflected, patch.annotations_not_reflected),
    ] {
        s.set(key, observed_keys(prior.get(key), &live.unwrap_or_default()));
    }
    s
}

/// `vn` with the keys of its not-reflected lists that Liqo holds and this resource did not write (`live` minus
/// `prior`'s) kept. Liqo's webhook adds its VkOptionsTemplate's keys to the lists only when the VirtualNode is
/// created; applied as planned, an update of a list the user set would drop them for good. Lists the user never set
/// are not written, and keep whatever Liqo has.
pub fn keeping_liqos_keys(mut vn: VirtualNode, live: Option<&VirtualNode>, prior: &Value) -> VirtualNode {
    let live_patch = live.and_then(|l| l.spec.offloading_patch.clone()).unwrap_or_default();
    let mut patch = vn.spec.offloading_patch.take().unwrap_or_default();
    for (wanted, live, key) in [
        (&mut patch.labels_not_reflected, live_patch.labels_not_reflected, attr::labels_not_reflected),
        (&mut patch.annotations_not_reflected, live_patch.annotations_not_reflected, attr::annotations_not_reflected),
    ] {
        let written = prior.get(key).string_elements().unwrap_or_default();
        if wanted.is_none() && written.is_empty() {
            continue;
        }
        let list = wanted.get_or_insert_with(Vec::new);
        for k in live.unwrap_or_default() {
            if !written.contains(&k) && !list.contains(&k) {
                list.push(k);
            }
        }
    }
    vn.spec.offloading_patch = (patch != OffloadingPatch::default()).then_some(patch);
    vn
}

/// A set of keys this resource wrote, as Liqo has it: the prior keys still there (Liqo's webhook adds the
/// VkOptionsTemplate's keys, which are not ours; one of ours taken away shows as drift). Unset and on import,
/// unset: every live key may be the template's.
fn observed_keys(prior: &Value, live: &[String]) -> Value {
    match prior.string_elements() {
        Some(keys) if !keys.is_empty() => {
            Value::Set(keys.into_iter().filter(|k| live.contains(k)).map(Value::string).collect())
        }
        _ => lifecycle::empty_as_written(prior),
    }
}

/// The live list, or with none live the prior one as [`lifecycle::empty_as_written`] keeps it.
fn or_empty_as_written(prior: &Value, live: Vec<Value>) -> Value {
    if live.is_empty() { lifecycle::empty_as_written(prior) } else { Value::List(live) }
}

fn taint_from_value(v: &Value) -> Taint {
    use attr::taints::{effect, key, value};
    Taint {
        key: v.get(key).as_str().unwrap_or_default().to_owned(),
        value: v.get(value).as_str().map(str::to_owned),
        effect: v.get(effect).as_str().unwrap_or_default().to_owned(),
        time_added: None,
    }
}

fn taint_to_value(t: &Taint) -> Value {
    use attr::taints::{effect, key, value};
    let value_ = t.value.clone().filter(|v| !v.is_empty());
    Value::object([
        (key, Value::string(&t.key)),
        (value, Value::opt_string(value_)),
        (effect, Value::string(&t.effect)),
    ])
}

fn toleration_from_value(v: &Value) -> Toleration {
    use attr::tolerations::{effect, key, operator, value};
    let s = |k: Key| v.get(k).as_str().map(str::to_owned);
    Toleration { key: s(key), operator: s(operator), value: s(value), effect: s(effect), toleration_seconds: None }
}

fn toleration_to_value(t: &Toleration) -> Value {
    use attr::tolerations::{effect, key, operator, value};
    let s = |v: &Option<String>| Value::opt_string(v.clone().filter(|v| !v.is_empty()));
    Value::object([(key, s(&t.key)), (operator, s(&t.operator)), (value, s(&t.value)), (effect, s(&t.effect))])
}
