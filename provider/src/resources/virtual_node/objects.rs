//! The VirtualNode `liqo_virtual_node` writes, built from a plan, and the state read back from a live one.
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{NodeAffinity, NodeSelector, ObjectReference, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use liqo_schema::liqo::networking::SecretReference;
use liqo_schema::liqo::{
    Affinity, IngressType, LoadBalancerType, OffloadingPatch, ResourceQuotaSpec, ResourceSlice, StorageType,
    VirtualNode, VirtualNodeSpec, labels,
};
use liqo_schema::tf::Value;

use super::schema::attr;
use crate::attributes::Field;
use crate::resources::lifecycle::{self, observed_map};
use crate::resources::shared::node_selector;

/// The provider's storage, ingress and load-balancer classes the node offers, each the default first; `None`: not
/// known yet.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Classes {
    storage: Option<Vec<String>>,
    ingress: Option<Vec<String>>,
    load_balancer: Option<Vec<String>>,
}

impl Classes {
    /// The classes a plan or state gives the node.
    fn of(node: &attr::VirtualNode) -> Classes {
        let names = |v: &Value| v.is_wholly_known().then(|| v.string_elements().unwrap_or_default());
        Classes {
            storage: names(&node.storage_classes),
            ingress: names(&node.ingress_classes),
            load_balancer: names(&node.load_balancer_classes),
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

    /// Written into `node` (unknown: not known yet).
    fn set_in(&self, node: &mut attr::VirtualNode) {
        let names = |names: &Option<Vec<String>>| names.as_ref().map_or(Value::Unknown, Value::string_list);
        node.storage_classes = names(&self.storage);
        node.ingress_classes = names(&self.ingress);
        node.load_balancer_classes = names(&self.load_balancer);
    }

    /// As Liqo's VirtualNode holds them, the first flagged default (as `liqoctl create virtualnode` writes them);
    /// none for an empty list.
    fn to_liqo<T>(names: &Option<Vec<String>>, class: fn(String, bool) -> T) -> Option<Vec<T>> {
        let names = names.as_ref().filter(|n| !n.is_empty())?;
        Some(names.iter().enumerate().map(|(i, n)| class(n.clone(), i == 0)).collect())
    }
}

/// The node a plan asks for (every value but the classes left out known at apply time).
impl attr::VirtualNode {
    /// The provider's cluster ID, as planned (known).
    pub fn provider(&self) -> &str {
        self.provider_cluster_id.as_deref().unwrap_or_default()
    }

    /// The slice's name, as planned (known).
    pub fn slice_name(&self) -> &str {
        self.resource_slice_name.as_deref().unwrap_or_default()
    }

    /// The classes left out taken from the slice's status, as `liqoctl create virtualnode --resource-slice-name`
    /// and Liqo's own virtual node for a slice take them.
    pub fn take_slice_classes(&mut self, slice: &ResourceSlice) {
        let status = slice.status.clone().unwrap_or_default();
        let reported = Classes::from_liqo(
            status.storage_classes.as_deref(),
            status.ingress_classes.as_deref(),
            status.load_balancer_classes.as_deref(),
        );
        Classes::of(self).or(reported).set_in(self);
    }

    /// The VirtualNode's offloading patch: none when nothing of it is set.
    fn offloading_patch(&self) -> Option<OffloadingPatch> {
        let tolerations = self.tolerations.clone().unwrap_or_default();
        let keys = |keys: &Option<BTreeSet<String>>| keys.iter().flatten().cloned().collect::<Vec<_>>();
        let (labels_not_reflected, annotations_not_reflected) =
            (keys(&self.labels_not_reflected), keys(&self.annotations_not_reflected));
        let required_affinity = node_selector::terms_from_value(&self.required_node_affinity);
        let preferred_affinity = node_selector::weighted_from_value(&self.preferred_node_affinity);
        let patch = OffloadingPatch {
            node_selector: self.node_selector.clone().filter(|s| !s.is_empty()),
            tolerations: (!tolerations.is_empty()).then_some(tolerations),
            runtime_class_name: self.runtime_class_name.clone(),
            labels_not_reflected: (!labels_not_reflected.is_empty()).then_some(labels_not_reflected),
            annotations_not_reflected: (!annotations_not_reflected.is_empty()).then_some(annotations_not_reflected),
            affinity: (!required_affinity.is_empty() || !preferred_affinity.is_empty()).then(|| Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: (!required_affinity.is_empty())
                        .then(|| NodeSelector { node_selector_terms: required_affinity.clone() }),
                    preferred_during_scheduling_ignored_during_execution: (!preferred_affinity.is_empty())
                        .then(|| preferred_affinity.clone()),
                }),
            }),
        };
        (patch != OffloadingPatch::default()).then_some(patch)
    }

    /// The VirtualNode as `liqoctl create virtualnode --resource-slice-name` forges it: the provider's ID as a label
    /// of the object and of the node, the slice's Identity kubeconfig for the virtual kubelet, the resources as the
    /// node's quota, and a Node. The slice's name is kept in the label Liqo puts on the virtual nodes it makes for
    /// slices, which is how a read or an import knows the slice.
    pub fn virtual_node(&self, kubeconfig_secret: &str) -> VirtualNode {
        let provider = || (labels::REMOTE_CLUSTER_ID.to_string(), self.provider().to_string());
        let mut node_labels = self.labels.clone().unwrap_or_default();
        node_labels.extend([provider()]);
        let taints = self.taints.clone().unwrap_or_default();
        let classes = Classes::of(self);
        let template = self.vk_options_template.as_deref().and_then(|r| r.split_once('/'));
        let spec = VirtualNodeSpec {
            cluster_id: Some(self.provider().to_string()),
            create_node: Some(true),
            disable_network_check: None,
            kubeconfig_secret_ref: Some(SecretReference { name: Some(kubeconfig_secret.to_string()) }),
            resource_quota: Some(ResourceQuotaSpec {
                hard: Some(self.resources.iter().flatten().map(|(k, q)| (k.clone(), Quantity(q.clone()))).collect()),
            }),
            labels: Some(node_labels),
            annotations: self.annotations.clone().filter(|a| !a.is_empty()),
            taints: (!taints.is_empty()).then_some(taints),
            offloading_patch: self.offloading_patch(),
            vk_options_template_ref: template.map(|(namespace, name)| ObjectReference {
                namespace: Some(namespace.to_owned()),
                name: Some(name.to_owned()),
                ..Default::default()
            }),
            storage_classes: Classes::to_liqo(&classes.storage, |storage_class_name, default| StorageType {
                storage_class_name,
                default: Some(default),
            }),
            ingress_classes: Classes::to_liqo(&classes.ingress, |ingress_class_name, default| IngressType {
                ingress_class_name,
                default: Some(default),
            }),
            load_balancer_classes: Classes::to_liqo(&classes.load_balancer, |load_balancer_class_name, default| {
                LoadBalancerType { load_balancer_class_name, default: Some(default) }
            }),
        };
        let mut vn = VirtualNode::new(&self.name, spec);
        vn.metadata.namespace = Some(self.tenant_namespace.clone());
        vn.metadata.labels = Some(BTreeMap::from([
            provider(),
            (labels::RESOURCE_SLICE_NAME.to_string(), self.slice_name().to_string()),
            crate::kube::provider_mark(),
        ]));
        vn
    }
}

/// The state from a live VirtualNode. `resources`, `labels` and `annotations` hold the keys this resource set
/// ([`observed_map`]; on import every one but Liqo's own label), so keys someone else adds are not drift.
pub fn observed_state(prior: &Value, vn: &VirtualNode) -> Value {
    let imported = prior.is_null();
    let ours = attr::VirtualNode::of(prior);
    let managed = |written: Value| (!imported).then_some(written);
    let hard = vn.spec.resource_quota.as_ref().and_then(|q| q.hard.as_ref());
    let quota = hard.iter().flat_map(|h| h.iter()).map(|(k, q)| (k.clone(), q.0.clone())).collect();
    let mut node_labels = vn.spec.labels.clone().unwrap_or_default();
    node_labels.remove(labels::REMOTE_CLUSTER_ID);
    let annotations = vn.spec.annotations.clone().unwrap_or_default();
    // The taints and the offloading patch's fields are this resource's whole: read as Liqo has them.
    let taints = vn.spec.taints.clone().unwrap_or_default();
    let patch = vn.spec.offloading_patch.clone().unwrap_or_default();
    let selector = patch.node_selector.unwrap_or_default();
    let tolerations = patch.tolerations.unwrap_or_default();
    let template =
        vn.spec.vk_options_template_ref.as_ref().and_then(|r| Some((r.namespace.as_ref()?, r.name.as_ref()?)));
    let affinity = patch.affinity.and_then(|a| a.node_affinity).unwrap_or_default();
    let required = affinity.required_during_scheduling_ignored_during_execution.map(|r| r.node_selector_terms);
    let preferred = affinity.preferred_during_scheduling_ignored_during_execution.unwrap_or_default();
    let mut s = attr::VirtualNode {
        name: vn.metadata.name.clone().unwrap_or_default(),
        tenant_namespace: vn.metadata.namespace.clone().unwrap_or_default(),
        provider_cluster_id: vn.spec.cluster_id.clone(),
        resource_slice_name: vn.metadata.labels.as_ref().and_then(|l| l.get(labels::RESOURCE_SLICE_NAME)).cloned(),
        resources: Field::read(&observed_map(managed(ours.resources.write()).as_ref(), quota, crate::quantity::same)),
        labels: Field::read(&observed_map(managed(ours.labels.write()).as_ref(), node_labels, |a, b| a == b)),
        annotations: Field::read(&observed_map(managed(ours.annotations.write()).as_ref(), annotations, |a, b| a == b)),
        taints: or_empty_as_written(&ours.taints, taints),
        node_selector: match selector.is_empty() {
            true => Field::read(&lifecycle::empty_as_written(&ours.node_selector.write())),
            false => Some(selector),
        },
        runtime_class_name: patch.runtime_class_name.filter(|r| !r.is_empty()),
        tolerations: or_empty_as_written(&ours.tolerations, tolerations),
        vk_options_template: template.map(|(namespace, name)| format!("{namespace}/{name}")),
        required_node_affinity: node_selector::terms_to_value(
            &ours.required_node_affinity,
            &required.unwrap_or_default(),
        ),
        preferred_node_affinity: node_selector::weighted_to_value(&ours.preferred_node_affinity, &preferred),
        labels_not_reflected: observed_keys(
            &ours.labels_not_reflected,
            &patch.labels_not_reflected.unwrap_or_default(),
        ),
        annotations_not_reflected: observed_keys(
            &ours.annotations_not_reflected,
            &patch.annotations_not_reflected.unwrap_or_default(),
        ),
        ..attr::VirtualNode::defaults()
    };
    let spec = &vn.spec;
    Classes::from_liqo(
        spec.storage_classes.as_deref(),
        spec.ingress_classes.as_deref(),
        spec.load_balancer_classes.as_deref(),
    )
    .set_in(&mut s);
    s.value()
}

/// `vn` with the keys of its not-reflected lists that Liqo holds and this resource did not write (`live` minus
/// `prior`'s) kept. Liqo's webhook adds its VkOptionsTemplate's keys to the lists only when the VirtualNode is
/// created; applied as planned, an update of a list the user set would drop them for good. Lists the user never set
/// are not written, and keep whatever Liqo has.
pub fn keeping_liqos_keys(mut vn: VirtualNode, live: Option<&VirtualNode>, prior: &Value) -> VirtualNode {
    let prior = attr::VirtualNode::of(prior);
    let live_patch = live.and_then(|l| l.spec.offloading_patch.clone()).unwrap_or_default();
    let mut patch = vn.spec.offloading_patch.take().unwrap_or_default();
    for (wanted, live, written) in [
        (&mut patch.labels_not_reflected, live_patch.labels_not_reflected, prior.labels_not_reflected),
        (&mut patch.annotations_not_reflected, live_patch.annotations_not_reflected, prior.annotations_not_reflected),
    ] {
        let written = written.unwrap_or_default();
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
fn observed_keys(prior: &Option<BTreeSet<String>>, live: &[String]) -> Option<BTreeSet<String>> {
    match prior {
        Some(keys) if !keys.is_empty() => Some(keys.iter().filter(|k| live.contains(k)).cloned().collect()),
        _ => Field::read(&lifecycle::empty_as_written(&prior.write())),
    }
}

/// The live list, or with none live the prior one as [`lifecycle::empty_as_written`] keeps it.
fn or_empty_as_written<T: Field>(prior: &Option<Vec<T>>, live: Vec<T>) -> Option<Vec<T>> {
    if live.is_empty() { Field::read(&lifecycle::empty_as_written(&prior.write())) } else { Some(live) }
}

/// A taint of the node as its nested attribute holds it.
impl Field for Taint {
    fn read(v: &Value) -> Taint {
        use attr::taints::{effect, key, value};
        Taint {
            key: v.get(key).as_str().unwrap_or_default().to_owned(),
            value: v.get(value).as_str().map(str::to_owned),
            effect: v.get(effect).as_str().unwrap_or_default().to_owned(),
            time_added: None,
        }
    }
    fn write(&self) -> Value {
        use attr::taints::{effect, key, value};
        let value_ = self.value.clone().filter(|v| !v.is_empty());
        Value::object([
            (key, Value::string(&self.key)),
            (value, Value::opt_string(value_)),
            (effect, Value::string(&self.effect)),
        ])
    }
}

/// A toleration of the pods' copies as its nested attribute holds it.
impl Field for Toleration {
    fn read(v: &Value) -> Toleration {
        use attr::tolerations::{effect, key, operator, value};
        let s = |k| v.get(k).as_str().map(str::to_owned);
        Toleration { key: s(key), operator: s(operator), value: s(value), effect: s(effect), toleration_seconds: None }
    }
    fn write(&self) -> Value {
        use attr::tolerations::{effect, key, operator, value};
        let s = |v: &Option<String>| Value::opt_string(v.clone().filter(|v| !v.is_empty()));
        Value::object([
            (key, s(&self.key)),
            (operator, s(&self.operator)),
            (value, s(&self.value)),
            (effect, s(&self.effect)),
        ])
    }
}
