use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus, Taint, Toleration};
use liqo_schema::liqo::{VirtualNode, labels};
use liqo_schema::tf::{AttributePath, Value};

use super::VirtualNodeResource;
use super::objects::{keeping_liqos_keys, observed_state};
use super::operations::{labels_check, taints_check};
use super::schema::attr;
use crate::kube::Verdict;
use crate::resources::lifecycle::{Plan, TIMEOUTS};

crate::resources::lifecycle::test_helpers!(super::VirtualNodeResource, 2);

fn config() -> Value {
    Value::object([
        (attr::id, Value::Null),
        (attr::name, Value::string("milan-gpu")),
        (attr::tenant_namespace, Value::string("liqo-tenant-milan")),
        (attr::provider_cluster_id, Value::string("milan")),
        (attr::resource_slice_name, Value::string("gpu")),
        (attr::resources, Value::string_map([("cpu", "4"), ("memory", "8Gi"), ("pods", "110")])),
        (attr::labels, Value::string_map([("example.com/accelerator", "gpu")])),
        (attr::annotations, Value::Null),
        (attr::taints, Value::Null),
        (attr::node_selector, Value::Null),
        (attr::tolerations, Value::Null),
        (attr::runtime_class_name, Value::Null),
        (attr::labels_not_reflected, Value::Null),
        (attr::annotations_not_reflected, Value::Null),
        (attr::vk_options_template, Value::Null),
        (TIMEOUTS, Value::Null),
    ])
}

fn plan(prior: &Value, proposed: &Value) -> (Value, Vec<AttributePath>) {
    let p = Plan::run::<VirtualNodeResource>(prior, proposed.clone(), proposed);
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
    (p.planned, p.replace)
}

/// What Liqo holds after an apply of [`config`] (its webhook adds a template; the virtual kubelet reports status).
fn live() -> VirtualNode {
    let mut vn = attr::VirtualNode::of(&config()).virtual_node("kubeconfig-gpu");
    vn.spec.labels.as_mut().unwrap().insert("liqo.io/added-by-someone".into(), "x".into());
    vn.spec
        .resource_quota
        .as_mut()
        .unwrap()
        .hard
        .as_mut()
        .unwrap()
        .insert("memory".into(), k8s_openapi::apimachinery::pkg::api::resource::Quantity("8192Mi".into()));
    vn
}

#[test]
fn attributes_are_described_and_nothing_is_sensitive() {
    let s = schema();
    for a in &s.block.attributes {
        assert!(!a.description.is_empty(), "{} has no description", a.name);
        assert!(!a.sensitive, "{} carries nothing secret", a.name);
    }
    assert!(crate::attributes::shown_required(s.block.attribute("resources").unwrap()));
}

#[test]
fn validation_names_the_attribute_and_the_key() {
    assert!(validate(&config()).is_empty());
    let mut c = config();
    c.set(attr::name, Value::string("GPU_node"));
    c.set(attr::tenant_namespace, Value::string("Bad_NS"));
    c.set(attr::provider_cluster_id, Value::string("-milan"));
    c.set(attr::resource_slice_name, Value::string("no/slash"));
    c.set(attr::resources, Value::string_map([("cpu", "four")]));
    c.set(
        attr::labels,
        Value::string_map([("bad key", "gpu"), ("tier", "not/a/value"), (labels::REMOTE_CLUSTER_ID, "rome")]),
    );
    let found: Vec<(String, String)> =
        validate(&c).iter().map(|d| (d.attribute.as_ref().unwrap().to_string(), d.summary.clone())).collect();
    let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "tenant_namespace",
            "provider_cluster_id",
            "resource_slice_name",
            "resources[\"cpu\"]",
            "labels[\"bad key\"]",
            "labels[\"tier\"]",
            "name",
            "labels[\"liqo.io/remote-cluster-id\"]",
        ],
        "{found:?}"
    );
    assert_eq!(found[3].1, "Invalid quantity for `cpu` in `resources`");
    assert_eq!(found[5].1, "Invalid label value for `tier` in `labels`");
}

#[test]
fn labels_and_resources_change_in_place_the_rest_replaces() {
    let (planned, replace) = plan(&Value::Null, &config());
    assert!(replace.is_empty());
    assert_eq!(planned.get(attr::id).as_str(), Some("liqo-tenant-milan/milan-gpu"));

    let prior = planned;
    let mut relabelled = prior.clone();
    relabelled.set(attr::labels, Value::string_map([("example.com/accelerator", "a100")]));
    relabelled.set(attr::resources, Value::string_map([("cpu", "8")]));
    let (_, replace) = plan(&prior, &relabelled);
    assert!(replace.is_empty(), "labels and resources update in place: {replace:?}");

    for key in [attr::name, attr::tenant_namespace, attr::provider_cluster_id, attr::resource_slice_name] {
        let mut moved = prior.clone();
        moved.set(key, Value::string("other"));
        let (_, replace) = plan(&prior, &moved);
        assert_eq!(replace, [key.path()]);
    }
}

#[test]
fn the_virtual_node_is_the_one_liqoctl_forges_for_a_slice() {
    let vn = attr::VirtualNode::of(&config()).virtual_node("kubeconfig-gpu");
    assert_eq!(vn.metadata.name.as_deref(), Some("milan-gpu"));
    assert_eq!(vn.metadata.namespace.as_deref(), Some("liqo-tenant-milan"));
    let meta = vn.metadata.labels.as_ref().unwrap();
    assert_eq!(meta.get(labels::REMOTE_CLUSTER_ID).map(String::as_str), Some("milan"));
    assert_eq!(meta.get(labels::RESOURCE_SLICE_NAME).map(String::as_str), Some("gpu"));
    assert_eq!(meta.get("app.kubernetes.io/managed-by").map(String::as_str), Some("terraform-provider-liqo"));
    let spec = &vn.spec;
    assert_eq!(spec.cluster_id.as_deref(), Some("milan"));
    assert_eq!(spec.create_node, Some(true));
    assert_eq!(spec.kubeconfig_secret_ref.as_ref().unwrap().name.as_deref(), Some("kubeconfig-gpu"));
    let node_labels = spec.labels.as_ref().unwrap();
    assert_eq!(
        node_labels,
        &BTreeMap::from([
            ("example.com/accelerator".to_string(), "gpu".to_string()),
            (labels::REMOTE_CLUSTER_ID.to_string(), "milan".to_string()),
        ])
    );
    let hard = spec.resource_quota.as_ref().unwrap().hard.as_ref().unwrap();
    assert_eq!(hard.get("memory").map(|q| q.0.as_str()), Some("8Gi"));
}

#[test]
fn reading_back_keeps_own_labels_and_spellings() {
    let (prior, _) = plan(&Value::Null, &config());
    let seen = observed_state(&prior, &live());
    // Someone else's label is not drift; Liqo's own is never shown; 8192Mi is the 8Gi that was written.
    assert_eq!(seen.get(attr::labels), &Value::string_map([("example.com/accelerator", "gpu")]));
    assert_eq!(seen.get(attr::resources), config().get(attr::resources));
    assert_eq!(seen.get(attr::resource_slice_name).as_str(), Some("gpu"));

    // A label removed out of band is drift.
    let mut stripped = live();
    stripped.spec.labels.as_mut().unwrap().remove("example.com/accelerator");
    assert_eq!(observed_state(&prior, &stripped).get(attr::labels), &Value::string_map::<[(&str, &str); 0], _, _>([]));

    // An import takes every label but Liqo's, and the slice from Liqo's label.
    let imported = owned(observed_state(&Value::Null, &live()), &Value::Null);
    assert_eq!(
        imported.get(attr::labels),
        &Value::string_map([("example.com/accelerator", "gpu"), ("liqo.io/added-by-someone", "x")])
    );
    assert_eq!(imported.get(attr::id).as_str(), Some("liqo-tenant-milan/milan-gpu"));
    assert_eq!(imported.get(attr::provider_cluster_id).as_str(), Some("milan"));
}

fn node(ready: &str, node_labels: &[(&str, &str)]) -> Node {
    let mut n = Node::default();
    n.metadata.labels = Some(node_labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    n.status = Some(NodeStatus {
        conditions: Some(vec![NodeCondition { type_: "Ready".into(), status: ready.into(), ..Default::default() }]),
        ..Default::default()
    });
    n
}

#[test]
fn the_node_is_done_when_ready_with_the_labels() {
    let wanted = BTreeMap::from([("tier".to_string(), "gpu".to_string())]);
    let removed = ["old".to_string()];
    let pending = |v: Verdict<()>| matches!(v, Verdict::Pending(_));
    assert!(pending(labels_check(None, &wanted, &removed)));
    assert!(pending(labels_check(Some(&node("False", &[("tier", "gpu")])), &wanted, &removed)));
    assert!(pending(labels_check(Some(&node("True", &[("tier", "cpu")])), &wanted, &removed)));
    assert!(pending(labels_check(Some(&node("True", &[("tier", "gpu"), ("old", "x")])), &wanted, &removed)));
    assert!(matches!(
        labels_check(Some(&node("True", &[("tier", "gpu"), ("x", "y")])), &wanted, &removed),
        Verdict::Ready(())
    ));
}

#[test]
fn import_ids_are_namespace_slash_name() {
    assert_eq!(parse_import_id("liqo-tenant-milan/milan-gpu").unwrap(), ["liqo-tenant-milan", "milan-gpu"]);
    assert!(parse_import_id("milan-gpu").is_err());
}

fn summary_of(found: &[(String, String)], path: &str) -> String {
    found.iter().find(|(p, _)| p == path).map(|(_, s)| s.clone()).unwrap_or_default()
}

fn taint(key: &str, value: Option<&str>, effect: &str) -> Value {
    use attr::taints as t;
    Value::object([
        (t::key, Value::string(key)),
        (t::value, Value::opt_string(value)),
        (t::effect, Value::string(effect)),
    ])
}

fn toleration(key: Option<&str>, operator: Option<&str>, value: Option<&str>, effect: Option<&str>) -> Value {
    use attr::tolerations as t;
    Value::object([
        (t::key, Value::opt_string(key)),
        (t::operator, Value::opt_string(operator)),
        (t::value, Value::opt_string(value)),
        (t::effect, Value::opt_string(effect)),
    ])
}

/// Where offloaded pods land: the taints on the node, the selector and tolerations of the pods' copies.
fn placed() -> Value {
    let mut c = config();
    c.set(attr::taints, Value::List(vec![taint("example.com/gpu", Some("true"), "NoSchedule")]));
    c.set(attr::node_selector, Value::string_map([("example.com/pool", "liqo")]));
    c.set(attr::runtime_class_name, Value::string("gvisor"));
    c.set(attr::annotations, Value::string_map([("example.com/owner", "gpu team: ask #gpu")]));
    c.set(attr::labels_not_reflected, Value::Set(vec![Value::string("example.com/internal")]));
    c.set(attr::annotations_not_reflected, Value::Set(vec![Value::string("example.com/audit")]));
    c.set(attr::vk_options_template, Value::string("liqo/gpu"));
    c.set(
        attr::tolerations,
        Value::List(vec![
            toleration(Some("example.com/dedicated"), Some("Equal"), Some("liqo"), Some("NoSchedule")),
            toleration(None, Some("Exists"), None, None),
        ]),
    );
    c
}

/// Kubernetes' rules for taints and tolerations, and Liqo's own taint, are checked at plan, each error on the
/// element's attribute.
#[test]
fn taints_and_tolerations_are_checked_at_plan() {
    assert!(validate(&placed()).is_empty(), "{:?}", validate(&placed()));
    let mut c = config();
    c.set(
        attr::taints,
        Value::List(vec![
            taint("virtual-node.liqo.io/not-allowed", Some("true"), "NoExecute"),
            taint("bad key", None, "NoSchedule"),
            taint("example.com/gpu", None, "Sometimes"),
        ]),
    );
    c.set(
        attr::tolerations,
        Value::List(vec![
            toleration(Some("example.com/a"), Some("Exists"), Some("x"), None),
            toleration(None, None, Some("x"), None),
            toleration(Some("example.com/b"), Some("Maybe"), None, Some("NoRun")),
        ]),
    );
    c.set(attr::runtime_class_name, Value::string("liqo"));
    c.set(attr::annotations, Value::string_map([("bad key", "x")]));
    c.set(attr::labels_not_reflected, Value::Set(vec![Value::string("example.com/ok"), Value::string("-bad")]));
    c.set(attr::vk_options_template, Value::string("virtual-kubelet-default"));
    let found: Vec<(String, String)> =
        validate(&c).iter().map(|d| (d.attribute.as_ref().unwrap().to_string(), d.summary.clone())).collect();
    let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
    for path in [
        "annotations[\"bad key\"]",
        "labels_not_reflected[1]",
        "runtime_class_name",
        "vk_options_template",
        "taints[0].key",
        "taints[1].key",
        "taints[2].effect",
        "tolerations[0].value",
        "tolerations[1].key",
        "tolerations[2].operator",
        "tolerations[2].effect",
    ] {
        assert!(paths.contains(&path), "no error on {path}: {found:?}");
    }
    assert_eq!(found.len(), 11, "{found:?}");
    assert!(summary_of(&found, "vk_options_template").contains("Invalid VkOptionsTemplate reference"));
    assert!(summary_of(&found, "labels_not_reflected[1]").contains("Invalid label key"));
    assert!(summary_of(&found, "runtime_class_name").contains("Liqo's RuntimeClass"));
    let summary = |path: &str| summary_of(&found, path);
    assert!(summary("taints[0].key").contains("is Liqo's taint"));
    assert!(summary("tolerations[0].value").contains("`operator = \"Exists\"` takes no `value`"));
    assert!(summary("tolerations[1].key").contains("needs `operator = \"Exists\"`"));
}

/// The taints go to the VirtualNode's spec, the selector and tolerations to its offloading patch, as Liqo reads
/// them; each changes in place; read back from Liqo they are the plan (no drift), and a change out of band shows.
#[test]
fn placement_is_written_updated_in_place_and_read_back() {
    let vn = attr::VirtualNode::of(&placed()).virtual_node("kubeconfig-gpu");
    let taints = vn.spec.taints.clone().unwrap();
    assert_eq!(
        taints,
        [Taint {
            key: "example.com/gpu".into(),
            value: Some("true".into()),
            effect: "NoSchedule".into(),
            time_added: None
        }]
    );
    let patch = vn.spec.offloading_patch.clone().unwrap();
    assert_eq!(patch.node_selector, Some(BTreeMap::from([("example.com/pool".into(), "liqo".into())])));
    assert_eq!(patch.runtime_class_name.as_deref(), Some("gvisor"));
    assert_eq!(patch.labels_not_reflected, Some(vec!["example.com/internal".to_owned()]));
    assert_eq!(patch.annotations_not_reflected, Some(vec!["example.com/audit".to_owned()]));
    let template = vn.spec.vk_options_template_ref.clone().unwrap();
    assert_eq!((template.namespace.as_deref(), template.name.as_deref()), (Some("liqo"), Some("gpu")));
    let annotations = vn.spec.annotations.clone().unwrap();
    assert_eq!(annotations.get("example.com/owner").map(String::as_str), Some("gpu team: ask #gpu"), "values are free");
    let tolerations = patch.tolerations.unwrap();
    assert_eq!(tolerations.len(), 2);
    assert_eq!(
        tolerations[1],
        Toleration { operator: Some("Exists".into()), ..Default::default() },
        "an empty key with Exists tolerates every taint"
    );
    let json = serde_json::to_value(&vn.spec).unwrap();
    assert_eq!(json["offloadingPatch"]["nodeSelector"]["example.com/pool"], "liqo");
    assert_eq!(json["taints"][0]["effect"], "NoSchedule");
    let none = attr::VirtualNode::of(&config()).virtual_node("kubeconfig-gpu");
    assert!(none.spec.taints.is_none() && none.spec.offloading_patch.is_none(), "nothing set, nothing written");

    let (prior, _) = plan(&Value::Null, &placed());
    for (key, changed) in [
        (attr::taints, Value::List(vec![])),
        (attr::node_selector, Value::string_map([("example.com/pool", "other")])),
        (attr::tolerations, Value::Null),
        (attr::runtime_class_name, Value::string("kata")),
        (attr::annotations, Value::Null),
        (attr::labels_not_reflected, Value::Set(vec![Value::string("example.com/other")])),
        (attr::annotations_not_reflected, Value::Null),
    ] {
        let mut c = prior.clone();
        c.set(key, changed);
        let (_, replace) = plan(&prior, &c);
        assert!(replace.is_empty(), "{key:?} changes in place: {replace:?}");
    }

    // Liqo's webhook reads the template only when the node is made.
    let mut other_template = prior.clone();
    other_template.set(attr::vk_options_template, Value::string("liqo/other"));
    let (_, replace) = plan(&prior, &other_template);
    assert_eq!(replace, [attr::vk_options_template.path()], "a new template replaces the node");

    let seen = observed_state(&prior, &vn);
    for key in [
        attr::vk_options_template,
        attr::annotations,
        attr::taints,
        attr::node_selector,
        attr::tolerations,
        attr::runtime_class_name,
        attr::labels_not_reflected,
        attr::annotations_not_reflected,
    ] {
        assert_eq!(seen.get(key), prior.get(key), "{key:?} read back as planned");
    }
    // Liqo's webhook adds its VkOptionsTemplate's keys: not ours, not drift; on import none is taken.
    let mut extended = vn.clone();
    let live = extended.spec.offloading_patch.as_mut().unwrap();
    live.annotations_not_reflected = Some(vec!["example.com/audit".into(), "cloud.google.com/neg".into()]);
    live.labels_not_reflected = Some(vec![]);
    let seen = observed_state(&prior, &extended);
    assert_eq!(seen.get(attr::annotations_not_reflected), prior.get(attr::annotations_not_reflected));
    assert_eq!(seen.get(attr::labels_not_reflected), &Value::Set(vec![]), "taken away out of band: drift");
    assert!(observed_state(&Value::Null, &extended).get(attr::annotations_not_reflected).is_null());
    let mut edited = vn.clone();
    edited.spec.taints = None;
    edited.spec.offloading_patch.as_mut().unwrap().node_selector = None;
    let seen = observed_state(&prior, &edited);
    assert!(seen.get(attr::taints).is_null() && seen.get(attr::node_selector).is_null(), "removed out of band: drift");
    // Empty collections the user wrote stay as written (Liqo keeps nothing for them).
    let mut empty = prior.clone();
    empty.set(attr::taints, Value::List(vec![]));
    empty.set(attr::node_selector, Value::string_map::<[(&str, &str); 0], _, _>([]));
    let seen = observed_state(&empty, &edited);
    assert_eq!(seen.get(attr::taints), &Value::List(vec![]));
    assert_eq!(seen.get(attr::node_selector), empty.get(attr::node_selector));
}

#[test]
fn the_node_is_done_when_retainted() {
    let t = |key: &str, effect: &str| Taint { key: key.into(), value: None, effect: effect.into(), time_added: None };
    let with = |taints: Vec<Taint>| {
        let mut n = node("True", &[]);
        n.spec = Some(NodeSpec { taints: Some(taints), ..Default::default() });
        n
    };
    let (gpu, old) = (t("example.com/gpu", "NoSchedule"), t("example.com/old", "NoSchedule"));
    let liqo = t("virtual-node.liqo.io/not-allowed", "NoExecute");
    let wanted = [gpu.clone()];
    let pending = |v: Verdict<()>| matches!(v, Verdict::Pending(_));
    assert!(pending(taints_check(Some(&with(vec![liqo.clone()])), &wanted, &[&old])));
    assert!(pending(taints_check(Some(&with(vec![liqo.clone(), gpu.clone(), old.clone()])), &wanted, &[&old])));
    assert!(matches!(taints_check(Some(&with(vec![liqo, gpu])), &wanted, &[&old]), Verdict::Ready(())));
}

/// Liqo's webhook adds its VkOptionsTemplate's keys to the not-reflected lists only when the node is made: an update
/// keeps them, drops the user's removed keys, and leaves lists the user never set unwritten.
#[test]
fn an_update_keeps_the_keys_liqo_added_when_the_node_was_made() {
    let (prior, _) = plan(&Value::Null, &placed());
    let mut live = attr::VirtualNode::of(&prior).virtual_node("kubeconfig-gpu");
    let made = live.spec.offloading_patch.as_mut().unwrap();
    made.annotations_not_reflected = Some(vec!["example.com/audit".into(), "cloud.google.com/neg".into()]);
    made.labels_not_reflected = Some(vec!["example.com/internal".into(), "example.com/liqo-template".into()]);

    let mut next = prior.clone();
    next.set(attr::annotations_not_reflected, Value::Set(vec![Value::string("example.com/other")]));
    next.set(attr::labels_not_reflected, Value::Null);
    let vn = keeping_liqos_keys(attr::VirtualNode::of(&next).virtual_node("kubeconfig-gpu"), Some(&live), &prior);
    let patch = vn.spec.offloading_patch.unwrap();
    assert_eq!(
        patch.annotations_not_reflected,
        Some(vec!["example.com/other".to_owned(), "cloud.google.com/neg".to_owned()]),
        "the new key and Liqo's, not the one taken away"
    );
    assert_eq!(patch.labels_not_reflected, Some(vec!["example.com/liqo-template".to_owned()]), "unset: Liqo's stay");

    let untouched = attr::VirtualNode::of(&config()).virtual_node("kubeconfig-gpu");
    let kept = keeping_liqos_keys(untouched.clone(), Some(&live), &config());
    assert_eq!(kept.spec.offloading_patch, untouched.spec.offloading_patch, "never set: never written");
}

fn requirement(key: &str, operator: &str, values: &[&str]) -> Value {
    use crate::resources::shared::node_selector::term::match_expressions as e;
    let values = (!values.is_empty()).then(|| Value::string_list(values.iter().copied()));
    Value::object([
        (e::key, Value::string(key)),
        (e::operator, Value::string(operator)),
        (e::values, values.unwrap_or(Value::Null)),
    ])
}

fn term(requirements: Vec<Value>) -> Value {
    use crate::resources::shared::node_selector::term;
    Value::object([(term::match_expressions, Value::List(requirements))])
}

fn weighted(weight: f64, requirements: Vec<Value>) -> Value {
    use crate::resources::shared::node_selector::weighted_term as w;
    Value::object([(w::weight, Value::Number(weight)), (w::match_expressions, Value::List(requirements))])
}

/// [`config`] with a required and a preferred node affinity and the three kinds of classes.
fn with_affinity_and_classes() -> Value {
    let mut c = config();
    c.set(
        attr::required_node_affinity,
        Value::List(vec![term(vec![requirement("topology.kubernetes.io/zone", "In", &["eu-1a", "eu-1b"])])]),
    );
    c.set(
        attr::preferred_node_affinity,
        Value::List(vec![weighted(50.0, vec![requirement("example.com/pool", "Exists", &[])])]),
    );
    c.set(attr::storage_classes, Value::string_list(["fast", "slow"]));
    c.set(attr::ingress_classes, Value::string_list(["nginx"]));
    c.set(attr::load_balancer_classes, Value::string_list(["example.com/internal-vip"]));
    c
}

/// Kubernetes' rules for node selector terms and weights, and class names, at plan, each on its element.
#[test]
fn affinity_and_classes_are_checked_at_plan() {
    assert!(validate(&with_affinity_and_classes()).is_empty(), "{:?}", validate(&with_affinity_and_classes()));
    let mut c = config();
    c.set(
        attr::required_node_affinity,
        Value::List(vec![
            term(vec![]),
            term(vec![requirement("bad key", "In", &["a"]), requirement("zone", "Near", &["a"])]),
            term(vec![requirement("zone", "In", &[]), requirement("cpus", "Gt", &["many"])]),
        ]),
    );
    c.set(
        attr::preferred_node_affinity,
        Value::List(vec![weighted(0.0, vec![requirement("zone", "Exists", &[])]), weighted(2.5, vec![])]),
    );
    c.set(attr::storage_classes, Value::string_list(["Fast_SSD"]));
    c.set(attr::ingress_classes, Value::string_list(["nginx", "no/slash"]));
    c.set(attr::load_balancer_classes, Value::string_list(["-vip"]));
    let found: Vec<(String, String)> =
        validate(&c).iter().map(|d| (d.attribute.as_ref().unwrap().to_string(), d.summary.clone())).collect();
    let summary = |path: &str| summary_of(&found, path);
    for (path, expected) in [
        ("required_node_affinity[0].match_expressions", "Empty node selector term"),
        ("required_node_affinity[1].match_expressions[0].key", "Invalid label key in `required_node_affinity`"),
        ("required_node_affinity[1].match_expressions[1].operator", "Unsupported operator in `required_node_affinity`"),
        ("required_node_affinity[2].match_expressions[0].values", "Invalid values for operator `In`"),
        ("required_node_affinity[2].match_expressions[1].values", "Invalid values for operator `Gt`"),
        ("preferred_node_affinity[0].weight", "Invalid weight in `preferred_node_affinity`"),
        ("preferred_node_affinity[1].weight", "Invalid weight in `preferred_node_affinity`"),
        ("preferred_node_affinity[1].match_expressions", "Empty node selector term"),
        ("storage_classes[0]", "Invalid StorageClass name"),
        ("ingress_classes[1]", "Invalid IngressClass name"),
        ("load_balancer_classes[0]", "Invalid load-balancer class `-vip`"),
    ] {
        assert!(summary(path).contains(expected), "{path}: {expected:?} not in {found:?}");
    }
    assert_eq!(found.len(), 11, "{found:?}");
}

/// The affinity goes to the offloading patch as Kubernetes' node affinity, changes in place and reads back as
/// planned; the classes go to the spec, the first the default, and a change replaces the node.
#[test]
fn affinity_and_classes_are_written_and_read_back() {
    let vn = attr::VirtualNode::of(&with_affinity_and_classes()).virtual_node("kubeconfig-gpu");
    let json = serde_json::to_value(&vn.spec).unwrap();
    let affinity = &json["offloadingPatch"]["affinity"]["nodeAffinity"];
    let required = &affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0];
    assert_eq!(required["matchExpressions"][0]["values"], serde_json::json!(["eu-1a", "eu-1b"]));
    let preferred = &affinity["preferredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(preferred["weight"], 50);
    assert_eq!(preferred["preference"]["matchExpressions"][0]["operator"], "Exists");
    assert!(preferred["preference"]["matchExpressions"][0].get("values").is_none(), "Exists sends no values");
    assert_eq!(
        json["storageClasses"],
        serde_json::json!([{"storageClassName": "fast", "default": true}, {"storageClassName": "slow", "default": false}])
    );
    assert_eq!(json["ingressClasses"], serde_json::json!([{"ingressClassName": "nginx", "default": true}]));
    assert_eq!(json["loadBalancerClasses"][0]["loadBalancerClassName"], "example.com/internal-vip");

    let (prior, _) = plan(&Value::Null, &with_affinity_and_classes());
    let seen = observed_state(&prior, &vn);
    for key in [
        attr::required_node_affinity,
        attr::preferred_node_affinity,
        attr::storage_classes,
        attr::ingress_classes,
        attr::load_balancer_classes,
    ] {
        assert_eq!(seen.get(key), prior.get(key), "{key:?} read back as planned");
    }
    for key in [attr::required_node_affinity, attr::preferred_node_affinity] {
        let mut c = prior.clone();
        c.set(key, Value::Null);
        let (_, replace) = plan(&prior, &c);
        assert!(replace.is_empty(), "{key:?} changes in place: {replace:?}");
    }
    let mut other = prior.clone();
    other.set(attr::storage_classes, Value::string_list(["slow", "fast"]));
    let (_, replace) = plan(&prior, &other);
    assert_eq!(replace, [attr::storage_classes.path()], "Liqo reads the classes only when the node is made");
    // The default is read first wherever Liqo keeps it.
    let mut reordered = vn.clone();
    let classes = reordered.spec.storage_classes.as_mut().unwrap();
    classes.reverse();
    assert_eq!(observed_state(&prior, &reordered).get(attr::storage_classes), prior.get(attr::storage_classes));
}

/// Left out, the classes are the slice's (as liqoctl and Liqo's own virtual node take them), known only at apply;
/// written out, they are the configuration's whatever the slice reports.
#[test]
fn classes_left_out_are_the_slices() {
    use liqo_schema::liqo::{ResourceSlice, ResourceSliceStatus, StorageType};
    let (planned, _) = plan(&Value::Null, &config());
    for key in [attr::storage_classes, attr::ingress_classes, attr::load_balancer_classes] {
        assert!(planned.get(key).is_unknown(), "{key:?} is known after apply");
    }
    let mut slice = ResourceSlice::new("gpu", Default::default());
    slice.status = Some(ResourceSliceStatus {
        storage_classes: Some(vec![
            StorageType { storage_class_name: "standard".into(), default: None },
            StorageType { storage_class_name: "ssd".into(), default: Some(true) },
        ]),
        ..Default::default()
    });
    let mut node = attr::VirtualNode::of(&planned);
    node.take_slice_classes(&slice);
    let state = node.value();
    assert_eq!(state.get(attr::storage_classes), &Value::string_list(["ssd", "standard"]), "the default first");
    assert_eq!(state.get(attr::ingress_classes), &Value::List(vec![]));
    let vn = node.virtual_node("kubeconfig-gpu");
    assert_eq!(vn.spec.storage_classes.unwrap()[0].storage_class_name, "ssd");
    assert!(vn.spec.ingress_classes.is_none(), "none reported, none written");

    let (own, _) = plan(&Value::Null, &with_affinity_and_classes());
    let mut node = attr::VirtualNode::of(&own);
    node.take_slice_classes(&slice);
    let state = node.value();
    assert_eq!(state.get(attr::storage_classes), &Value::string_list(["fast", "slow"]), "the configuration's");
}
