//! `liqo_virtual_node`'s attributes and its plan-time checks.
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Taint, Toleration};
use liqo_schema::liqo::labels;
use liqo_schema::liqo::{LIQO_RUNTIME_CLASS, VIRTUAL_NODE_TAINT};
use liqo_schema::tf::{Nesting, Type, Value};

use crate::resources::lifecycle::Declared;
use crate::resources::shared::node_selector::{self, Wording};
use crate::validate::{Validator, check_dns_label, check_object_name, check_qualified_name};

/// `liqo_virtual_node`'s attributes.
pub mod attr {
    use super::*;
    use crate::attributes::*;

    attributes! {
        struct VirtualNode;
        id: Unset = computed(Type::String).describe("`<tenant_namespace>/<name>`; also the import ID.");
        name: String = required(Type::String).replace_on_change().describe(
            "Name of the VirtualNode and of the core Node Liqo registers for it. Must be unique among this \
             cluster's nodes. Changing it replaces the resource.",
        );
        tenant_namespace: String = required(Type::String).replace_on_change().check(Check::Namespace).describe(
            "Tenant namespace for the provider on this (consumer) cluster, where the ResourceSlice is: \
             `liqo_peer.<name>.tenant_namespace`. Changing it replaces the resource.",
        );
        // These two are null in a read of a VirtualNode that lacks them (one `liqoctl create virtualnode` made names
        // no slice); the plan repairs them in place (`plan.rs`). So may `resources` be (`observed_map`).
        provider_cluster_id: Option<String> = required(Type::String).replace_on_change().check(Check::ClusterId).describe(
            "Liqo cluster ID of the provider cluster the node runs pods on: `liqo_peer.<name>.provider_cluster_id`. \
             Changing it replaces the resource.",
        );
        resource_slice_name: Option<String> = required(Type::String).replace_on_change().check(Check::ObjectName {
            kind: "ResourceSlice",
            fix: "Use `liqo_peer.<name>.resource_slice_name`.",
        }).describe(
            "The ResourceSlice whose credentials the node's virtual kubelet uses: `liqo_peer.<name>.resource_slice_name` \
             of a liqo_peer with `create_virtual_node = false` (with `true`, Liqo makes a virtual node of its own for \
             the slice, and apply refuses to make a second one). Changing it replaces the resource.",
        );
        resources: Option<BTreeMap<String, String>> = required(Type::map(Type::String)).check(Check::Quantities).describe(
            "Resources the node offers, as Kubernetes quantities keyed by resource name: usually \
             `liqo_peer.<name>.accepted_resources`, what the provider granted the slice (a resize of the slice then \
             updates the node in the same apply). Updated in place.",
        );
        labels: Option<BTreeMap<String, String>> = optional(Type::map(Type::String)).check(Check::Labels).describe(
            "Labels of the Node, besides Liqo's own (`liqo.io/type`, `liqo.io/remote-cluster-id`, …), e.g. \
             `{ \"example.com/accelerator\" = \"gpu\" }`: what workloads select this node by (`nodeSelector`, \
             affinity) and what liqo_offload's `cluster_selector` matches. Updated in place: Liqo's virtual kubelet \
             relabels the Node.",
        );
        annotations: Option<BTreeMap<String, String>> = optional(Type::map(Type::String)).check(Check::QualifiedName { what: "annotation key", example: KEY_EXAMPLE }).describe(
            "Annotations of the Node, besides those Liqo and Kubernetes put there, e.g. \
             `{ \"example.com/owner\" = \"gpu-team\" }` (Liqo's VirtualNode `spec.annotations`). Keys are qualified \
             names; values are free. Updated in place: Liqo's virtual kubelet reannotates the Node.",
        );
        // Kubernetes' own types, read and written by their `Field` impls (`objects.rs`).
        taints: Option<Vec<Taint>> = nested(Nesting::List, taints::declared()).describe(
            "Taints of the Node (`liqoctl create virtualnode` has none; Liqo's VirtualNode `spec.taints`): only pods \
             that tolerate them are scheduled on this node, e.g. `{ key = \"example.com/gpu\", value = \"true\", \
             effect = \"NoSchedule\" }` keeps every other workload off a GPU slice. Liqo's own taint \
             (`virtual-node.liqo.io/not-allowed`, tolerated by the pods of offloaded namespaces) stays. Updated in \
             place: Liqo's virtual kubelet retaints the Node.",
        );
        node_selector: Option<BTreeMap<String, String>> = optional(Type::map(Type::String)).check(Check::Labels).describe(
            "Labels of the **provider's** nodes that every pod offloaded through this node must run on, e.g. \
             `{ \"example.com/pool\" = \"liqo\" }` (`liqoctl create virtualnode --node-selector`; Liqo's \
             `offloadingPatch.nodeSelector`): Liqo's virtual kubelet adds them to the `nodeSelector` of each pod's \
             copy on the provider cluster. Updated in place: Liqo restarts the node's virtual kubelet, and pods \
             offloaded from then on get the new selector.",
        );
        runtime_class_name: Option<String> = optional(Type::String).check(Check::ObjectName { kind: "RuntimeClass", fix: RUNTIME_CLASS_FIX }).describe(
            "RuntimeClass of each pod's copy on the **provider** cluster (`liqoctl create virtualnode \
             --runtime-class-name`; Liqo's `offloadingPatch.runtimeClassName`), for pods that name none of their own \
             (a pod's own `runtimeClassName`, or its `liqo.io/remote-runtime-class-name` annotation, wins). The \
             RuntimeClass must exist on the provider, or Liqo cannot create the copies. Updated in place, as \
             `node_selector`.",
        );
        tolerations: Option<Vec<Toleration>> = nested(Nesting::List, tolerations::declared()).describe(
            "Tolerations Liqo's virtual kubelet appends to each pod's copy on the **provider** cluster (Liqo's \
             `offloadingPatch.tolerations`), so that offloaded pods may run on provider nodes tainted for them. \
             Updated in place, as `node_selector`.",
        );
        vk_options_template: Option<String> = optional(Type::String).replace_on_change().describe(
            "The VkOptionsTemplate the node's virtual kubelet is made from, as `<namespace>/<name>` (`liqoctl create \
             virtualnode --vk-options-template`; Liqo's `spec.vkOptionsTemplateRef`): where the virtual kubelet \
             itself runs on this cluster (its tolerations, resources, replicas), its extra arguments and the keys \
             it never reflects. Left out, the template installed with Liqo (`liqo/virtual-kubelet-default`). It must \
             exist when the node is made (Liqo's webhook refuses the node otherwise). Liqo reads it only then, so \
             changing it replaces the resource.",
        );
        labels_not_reflected: Option<BTreeSet<String>> = optional(Type::set(Type::String)).check(Check::QualifiedName { what: "label key", example: KEY_EXAMPLE }).describe(
            "Label keys Liqo's virtual kubelet leaves off what it reflects to the **provider** cluster through this \
             node — each pod's copy, and the Services, ConfigMaps, Secrets and other objects of offloaded \
             namespaces (Liqo's `offloadingPatch.labelsNotReflected`), e.g. `[\"example.com/internal\"]`. Liqo \
             adds the keys of its VkOptionsTemplate (chart value `offloading.reflection.skip.labels`) to this list \
             when the node is made; they are not this resource's, are not drift, and an update keeps them. On \
             import it reads as unset. Updated in place, as \
             `node_selector`.",
        );
        annotations_not_reflected: Option<BTreeSet<String>> = optional(Type::set(Type::String)).check(Check::QualifiedName { what: "annotation key", example: KEY_EXAMPLE }).describe(
            "Annotation keys left off what the virtual kubelet reflects, as `labels_not_reflected` (Liqo's \
             `offloadingPatch.annotationsNotReflected`; Liqo adds its VkOptionsTemplate's keys, chart value \
             `offloading.reflection.skip.annotations`, e.g. `cloud.google.com/neg`). On import it reads as unset. \
             Updated in place, as `node_selector`.",
        );
        // `node_selector`'s terms, read and written there.
        required_node_affinity: Value = nested(Nesting::List, node_selector::term::declared()).describe(
            "Node selector terms, any of which a **provider** node must match (OR) for a pod offloaded through this \
             node to run there (Liqo's `offloadingPatch.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`), \
             e.g. `[{ match_expressions = [{ key = \"topology.kubernetes.io/zone\", operator = \"In\", values = \
             [\"eu-west-1a\"] }] }]`: where `node_selector` takes equal labels only, these take Kubernetes' operators. \
             Liqo's virtual kubelet appends them to the required terms of each pod's copy. Updated in place, as \
             `node_selector`.",
        );
        preferred_node_affinity: Value = nested(Nesting::List, node_selector::weighted_term::declared()).describe(
            "Weighted node selector terms the scheduler of the **provider** prefers for a pod offloaded through this \
             node (Liqo's `offloadingPatch.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution`), \
             e.g. `[{ weight = 50, match_expressions = [{ key = \"example.com/pool\", operator = \"In\", values = \
             [\"liqo\"] }] }]`. Liqo's virtual kubelet appends them to each pod's copy. Updated in place, as \
             `node_selector`.",
        );
        // Unknown at apply when left out, until read from the slice (`objects::Classes`).
        storage_classes: Value = optional_computed(Type::list(Type::String)).replace_on_change().check(Check::ObjectName {
            kind: "StorageClass",
            fix: CLASS_FIX,
        }).describe(
            "Storage classes of the **provider** the node offers, the default first (`liqoctl create virtualnode \
             --storage-classes`; Liqo's `spec.storageClasses`): with one, the node's virtual kubelet reflects \
             persistent volume claims of Liqo's storage class to the default one, and the Node is labelled \
             `storage.liqo.io/available=true`. Left out, the classes the provider reported in the slice's status \
             (as `liqoctl create virtualnode --resource-slice-name` and Liqo's own virtual node take them); \
             removing it later keeps the node's. Liqo reads them only when the node is made, so changing them \
             replaces the resource.",
        );
        ingress_classes: Value = optional_computed(Type::list(Type::String)).replace_on_change().check(Check::ObjectName {
            kind: "IngressClass",
            fix: CLASS_FIX,
        }).describe(
            "Ingress classes of the **provider** the node offers, the default first (`--ingress-classes`; Liqo's \
             `spec.ingressClasses`): with one, the virtual kubelet reflects the Ingresses of offloaded namespaces \
             with the default class. Left out, the slice's; changing them replaces the resource, as \
             `storage_classes`.",
        );
        load_balancer_classes: Value = optional_computed(Type::list(Type::String)).replace_on_change().check(Check::QualifiedName {
            what: "load-balancer class",
            example: "example.com/internal-vip",
        }).describe(
            "Load-balancer classes of the **provider** the node offers, the default first (`--load-balancer-classes`; \
             Liqo's `spec.loadBalancerClasses`): with one, the virtual kubelet reflects LoadBalancer Services of \
             offloaded namespaces with the default class. Left out, the slice's; changing them replaces the \
             resource, as `storage_classes`.",
        );
    }

    /// A taint of the virtual node.
    pub mod taints {
        use super::*;

        attributes! {
            key: required(Type::String).describe("Taint key, a qualified name such as `example.com/gpu`.");
            value: optional(Type::String).describe("Taint value (a label value; may be left out).");
            effect: required(Type::String).check(Check::OneOf(&TAINT_EFFECTS)).describe(
                "`NoSchedule`, `PreferNoSchedule` or `NoExecute` (also evicts running pods that do not tolerate it).",
            );
        }
    }

    /// A toleration added to the pods' copies on the provider.
    pub mod tolerations {
        use super::*;

        attributes! {
            key: optional(Type::String).describe(
                "Taint key the toleration matches; left out with `operator = \"Exists\"`, it matches every taint.",
            );
            operator: optional(Type::String).check(Check::OneOf(&TOLERATION_OPERATORS)).describe(
                "`Equal` (the default: the taint's value must be `value`) or `Exists` (any value; leave `value` out).",
            );
            value: optional(Type::String).describe("Taint value the toleration matches, with `operator = \"Equal\"`.");
            effect: optional(Type::String).check(Check::OneOf(&TAINT_EFFECTS)).describe(
                "Taint effect matched: `NoSchedule`, `PreferNoSchedule` or `NoExecute`; left out, every effect.",
            );
        }
    }
}

const KEY_EXAMPLE: &str = "example.com/owner";
const CLASS_FIX: &str = "Give the names of classes of the provider cluster (`kubectl get storageclasses` or \
                         `kubectl get ingressclasses` there), the default first.";
const RUNTIME_CLASS_FIX: &str =
    "Give the name of a RuntimeClass of the provider cluster (`kubectl get runtimeclasses` there).";

/// Why `reference` is not `<namespace>/<name>` (a namespace, a DNS label; a name, a DNS subdomain), if it is not.
fn check_namespaced_name(reference: &str) -> Result<(), String> {
    let Some((namespace, name)) = reference.split_once('/') else {
        return Err("has no '/' between a namespace and a name".to_owned());
    };
    check_dns_label(namespace).map_err(|why| format!("names a namespace `{namespace}` that {why}"))?;
    check_object_name(name).map_err(|why| format!("names `{name}`, which {why}"))
}

const NODE_AFFINITY: Wording = Wording {
    example_key: "topology.kubernetes.io/zone",
    empty_term: "Empty node selector term",
    empty_term_fix: "Kubernetes refuses a term without match expressions. Add at least one expression, or drop the \
                     term.",
};

/// Kubernetes' taint effects.
pub const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
/// Kubernetes' toleration operators.
pub const TOLERATION_OPERATORS: [&str; 2] = ["Equal", "Exists"];

pub const DESCRIPTION: &str = "A virtual node of this (consumer) cluster for a provider's ResourceSlice, with labels, taints and \
             a placement of its pods on the provider of your choice, as `liqoctl create virtualnode \
             --resource-slice-name` makes: writes Liqo's VirtualNode and waits for its Node to be Ready with those \
             labels and taints. Use it with a liqo_peer whose `create_virtual_node` is \
             `false`, e.g. to give each of several slices of one provider (a GPU slice) a node that workloads can \
             select. Destroying it removes the node (Liqo drains it first); the slice stays.";

/// The node's name is a Node name Liqo also gives the virtual kubelet's Deployment; Liqo owns its own label and
/// taint; taints and tolerations follow Kubernetes' rules, which the API server would otherwise apply mid-apply.
pub fn validate(c: &mut Validator<'_>) {
    let config = c.config;
    let node = attr::VirtualNode::of(config);
    for (i, taint) in config.get(attr::taints).elements().iter().enumerate() {
        let path = attr::taints.path().index(i as i64).attr(attr::taints::key);
        match taint.get(attr::taints::key).as_str() {
            Some(VIRTUAL_NODE_TAINT) => c.error(
                path,
                format!("`{VIRTUAL_NODE_TAINT}` is Liqo's taint"),
                "Liqo's virtual kubelet puts it on every virtual node (and Liqo's webhook makes offloaded pods \
                 tolerate it); choose a key of your own, e.g. `example.com/gpu`.",
            ),
            Some(key) => {
                if let Err(why) = check_qualified_name(key) {
                    c.error(path, "Invalid taint key", format!("`{key}` {why}. Use a key such as `example.com/gpu`."));
                }
            }
            None => {}
        }
    }
    if let Some(reference) = &node.vk_options_template
        && let Err(why) = check_namespaced_name(reference)
    {
        c.error(
            attr::vk_options_template.path(),
            "Invalid VkOptionsTemplate reference for `vk_options_template`",
            format!(
                "`{reference}` {why}. Give the template as `<namespace>/<name>`, e.g. `liqo/virtual-kubelet-default` \
                 (`kubectl get vkoptionstemplates -A` lists them)."
            ),
        );
    }
    if node.runtime_class_name.as_deref() == Some(LIQO_RUNTIME_CLASS) {
        c.error(
            attr::runtime_class_name.path(),
            format!("`{LIQO_RUNTIME_CLASS}` is Liqo's RuntimeClass"),
            "Liqo uses it on the consumer to send pods to virtual nodes and never gives it to their copies; name a \
             RuntimeClass of the provider cluster, or leave `runtime_class_name` out.",
        );
    }
    for (i, toleration) in config.get(attr::tolerations).elements().iter().enumerate() {
        use attr::tolerations::{key, operator, value};
        let at = attr::tolerations.path().index(i as i64);
        let exists = toleration.get(operator).as_str() == Some("Exists");
        let operator_known = !toleration.get(operator).is_unknown();
        if let Some(k) = toleration.get(key).as_str()
            && let Err(why) = check_qualified_name(k)
        {
            c.error(at.clone().attr(key), "Invalid toleration key", format!("`{k}` {why}."));
        }
        if exists && toleration.get(value).as_str().is_some_and(|v| !v.is_empty()) {
            c.error(
                at.clone().attr(value),
                "A toleration with `operator = \"Exists\"` takes no `value`",
                "`Exists` matches the taint's key whatever its value: remove `value`, or use `operator = \"Equal\"`.",
            );
        }
        if !exists && operator_known && toleration.get(key).is_null() {
            c.error(
                at.attr(key),
                "A toleration without `key` needs `operator = \"Exists\"`",
                "Kubernetes matches an empty key only with `Exists` (it then tolerates every taint): give the \
                 taint's `key`, or set `operator = \"Exists\"`.",
            );
        }
    }
    node_selector::validate(c, attr::required_node_affinity, &NODE_AFFINITY);
    node_selector::validate(c, attr::preferred_node_affinity, &NODE_AFFINITY);
    if let Some(name) = config.get(attr::name).as_str()
        && let Err(why) = check_dns_label(name)
    {
        c.error(
            attr::name.path(),
            "Invalid virtual node name for `name`",
            format!(
                "`{name}` {why}. Liqo names the Node and its virtual kubelet after it, so it must be a DNS label: \
                 lowercase letters, digits and '-', at most 63 characters."
            ),
        );
    }
    if node.labels.is_some_and(|l| l.contains_key(labels::REMOTE_CLUSTER_ID)) {
        c.error(
            attr::labels.path().key(labels::REMOTE_CLUSTER_ID),
            format!("`{}` is Liqo's label", labels::REMOTE_CLUSTER_ID),
            "Liqo sets it to the provider cluster ID on every virtual node (from `provider_cluster_id`); remove it \
             from `labels`.",
        );
    }
}

/// What `liqo_virtual_node` declares to the lifecycle driver.
pub const DECLARED: Declared = Declared {
    description: DESCRIPTION,
    attributes: attr::declared,
    validate,
    rules: super::plan::RULES,
    ..Declared::NONE
};
