use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, NodeSelector};
use liqo_schema::liqo::{LiqoCondition, NamespaceOffloading, NamespaceOffloadingSpec, NamespaceOffloadingStatus};
use liqo_schema::tf::{Attribute, AttributePath, Diagnostics, Severity, Value};

use super::OffloadResource;
use super::objects::observed_state;
use super::plan::check_default_name;
use super::schema::attr;
use super::status::{Outcome, applied_state, no_cluster_warning, offloading_check};
use crate::kube::{FIELD_MANAGER, Verdict, created_by_provider};
use crate::resources::lifecycle::Plan;
use crate::resources::lifecycle::TIMEOUTS;

crate::resources::lifecycle::test_helpers!(super::OffloadResource, 1);

fn config() -> Value {
    Value::object([
        (attr::namespace, Value::string("liqo-demo")),
        (attr::create_namespace, Value::Null),
        (attr::namespace_mapping_strategy, Value::Null),
        (attr::remote_namespace_name, Value::Null),
        (attr::pod_offloading_strategy, Value::Null),
        (attr::cluster_selector, Value::Null),
        (attr::id, Value::Null),
        (attr::offloading_phase, Value::Null),
        (TIMEOUTS, Value::Null),
    ])
}

fn expr(key: &str, op: &str, values: Value) -> Value {
    Value::object([("key", Value::string(key)), ("operator", Value::string(op)), ("values", values)])
}

fn selector(exprs: Vec<Value>) -> Value {
    Value::List(vec![Value::object([("match_expressions", Value::List(exprs))])])
}

fn error_paths(d: &Diagnostics) -> Vec<String> {
    d.iter().filter(|d| d.severity == Severity::Error).map(|d| d.attribute.as_ref().unwrap().to_string()).collect()
}

/// The planned state and replace paths, as the driver plans them.
fn plan_values(prior: &Value, proposed: &Value, config: &Value) -> (Value, Vec<AttributePath>) {
    let p = Plan::run::<OffloadResource>(prior, proposed.clone(), config);
    (p.planned, p.replace)
}

/// The state the driver records after an apply.
fn applied(planned: &Value) -> Value {
    let state = applied_state(
        planned,
        Some(&Outcome { phase: "Ready".into(), remote_namespace_name: Some("liqo-demo-rome".into()) }),
    );
    owned(state, planned.get(TIMEOUTS))
}

#[test]
fn schema_describes_everything() {
    let s = schema();
    fn check(attrs: &[Attribute]) {
        for a in attrs {
            assert!(!a.description.is_empty(), "{} has no description", a.name);
            if let Some(n) = &a.nested {
                check(&n.attributes);
            }
        }
    }
    check(&s.block.attributes);
    assert!(crate::attributes::shown_required(s.block.attribute("namespace").unwrap()));
    let sel = s.block.attribute("cluster_selector").unwrap();
    assert!(sel.optional && !sel.computed && sel.ty.is_none());
    for out in [attr::id, attr::offloading_phase] {
        let a = s.block.attribute(out).unwrap();
        assert!(a.computed && !a.optional);
    }
    assert!(s.block.blocks.iter().any(|b| b.type_name == "timeouts"));
}

#[test]
fn selected_name_rules_are_checked_at_plan_time() {
    let mut c = config();
    c.set(attr::namespace_mapping_strategy, Value::string("SelectedName"));
    let d = validate(&c);
    assert_eq!(error_paths(&d), [attr::remote_namespace_name]);
    assert!(d.0[0].summary.contains("SelectedName"));

    c.set(attr::remote_namespace_name, Value::string("remote-demo"));
    assert!(validate(&c).is_empty());

    // Default strategy (null) and explicit others forbid it, also when the value is not known yet.
    for strategy in [Value::Null, Value::string("EnforceSameName")] {
        let mut c = config();
        c.set(attr::namespace_mapping_strategy, strategy);
        c.set(attr::remote_namespace_name, Value::Unknown);
        assert_eq!(error_paths(&validate(&c)), [attr::remote_namespace_name]);
        c.set(attr::remote_namespace_name, Value::string("elsewhere"));
        assert_eq!(error_paths(&validate(&c)), [attr::remote_namespace_name]);
    }
    // The name Liqo gives with the strategy passes validation (a configuration generated from an import).
    let namespace = c.get(attr::namespace).as_str().unwrap().to_string();
    for (strategy, remote) in [("EnforceSameName", namespace.clone()), ("DefaultName", format!("{namespace}-milan"))] {
        let mut c = config();
        c.set(attr::namespace_mapping_strategy, Value::string(strategy));
        c.set(attr::remote_namespace_name, Value::string(remote));
        assert!(validate(&c).is_empty(), "{strategy}");
    }
    // Unknown strategy: nothing can be said yet.
    let mut c = config();
    c.set(attr::namespace_mapping_strategy, Value::Unknown);
    c.set(attr::remote_namespace_name, Value::string("x"));
    assert!(validate(&c).is_empty());
}

#[test]
fn validation_names_each_bad_attribute() {
    let mut c = config();
    c.set(attr::namespace, Value::string("Demo"));
    c.set(attr::namespace_mapping_strategy, Value::string("defaultname"));
    c.set(attr::pod_offloading_strategy, Value::string("Both"));
    c.set(
        attr::cluster_selector,
        Value::List(vec![
            Value::object([(
                "match_expressions",
                Value::List(vec![
                    expr("liqo.io/remote-cluster-id", "In", Value::string_list(["milan"])),
                    expr("bad key!", "Exists", Value::Null),
                    expr("zone", "Equals", Value::Null),
                    expr("zone", "In", Value::List(vec![])),
                    expr("zone", "Exists", Value::string_list(["a"])),
                    expr("cpu", "Gt", Value::string_list(["two"])),
                    expr("cpu", "Lt", Value::List(vec![Value::Unknown])),
                ]),
            )]),
            Value::object([("match_expressions", Value::List(vec![]))]),
        ]),
    );
    c.set(TIMEOUTS, Value::object([("delete", Value::string("soon"))]));
    assert_eq!(
        error_paths(&validate(&c)),
        [
            "namespace",
            "namespace_mapping_strategy",
            "pod_offloading_strategy",
            "cluster_selector[0].match_expressions[1].key",
            "cluster_selector[0].match_expressions[2].operator",
            "cluster_selector[0].match_expressions[3].values",
            "cluster_selector[0].match_expressions[4].values",
            "cluster_selector[0].match_expressions[5].values",
            "cluster_selector[1].match_expressions",
            "timeouts.delete",
        ]
    );
    assert!(validate(&config()).is_empty());
}

#[test]
fn create_plan_fills_defaults() {
    let (planned, replace) = plan_values(&Value::Null, &config(), &config());
    assert!(replace.is_empty());
    assert_eq!(planned.get(attr::id), &Value::string("liqo-demo"));
    assert_eq!(planned.get(attr::create_namespace), &Value::Bool(false));
    assert_eq!(planned.get(attr::namespace_mapping_strategy), &Value::string("DefaultName"));
    assert_eq!(planned.get(attr::pod_offloading_strategy), &Value::string("LocalAndRemote"));
    assert!(planned.get(attr::remote_namespace_name).is_unknown());
    assert!(planned.get(attr::offloading_phase).is_unknown());

    let mut c = config();
    c.set(attr::namespace_mapping_strategy, Value::string("EnforceSameName"));
    let (planned, _) = plan_values(&Value::Null, &c, &c);
    assert_eq!(planned.get(attr::remote_namespace_name), &Value::string("liqo-demo"));

    let mut c = config();
    c.set(attr::namespace_mapping_strategy, Value::string("SelectedName"));
    c.set(attr::remote_namespace_name, Value::string("far-away"));
    let (planned, _) = plan_values(&Value::Null, &c, &c);
    assert_eq!(planned.get(attr::remote_namespace_name), &Value::string("far-away"));

    let mut c = config();
    c.set(attr::namespace, Value::Unknown);
    let (planned, _) = plan_values(&Value::Null, &c, &c);
    assert!(planned.get(attr::id).is_unknown());
}

#[test]
fn a_generated_default_name_must_be_the_one_liqo_reported() {
    let (planned, _) = plan_values(&Value::Null, &config(), &config());
    let prior = applied(&planned);
    let reported = prior.get(attr::remote_namespace_name).as_str().unwrap().to_string();

    // What OpenTofu generates from the imported state: an empty plan, no diagnostic.
    let mut generated = config();
    generated.set(attr::remote_namespace_name, Value::string(reported.clone()));
    let (again, replace) = plan_values(&prior, &prior, &generated);
    assert!(replace.is_empty());
    assert_eq!(again, prior);
    assert!(check_default_name(&prior, &again, &generated).is_empty());

    // Another name, or any name on create: an error on the attribute, naming Liqo's choice when there is one.
    let mut other = config();
    other.set(attr::remote_namespace_name, Value::string("liqo-demo-elsewhere"));
    let mut proposed = prior.clone();
    proposed.set(attr::remote_namespace_name, other.get(attr::remote_namespace_name).clone());
    let (planned, _) = plan_values(&prior, &proposed, &other);
    let d = check_default_name(&prior, &planned, &other);
    assert_eq!(error_paths(&d), [attr::remote_namespace_name]);
    assert!(d.0[0].detail.contains(&reported), "{}", d.0[0].detail);
    let (planned, _) = plan_values(&Value::Null, &generated, &generated);
    assert_eq!(error_paths(&check_default_name(&Value::Null, &planned, &generated)), [attr::remote_namespace_name]);
}

#[test]
fn strategy_and_selector_update_in_place_mapping_replaces() {
    let (planned, _) = plan_values(&Value::Null, &config(), &config());
    let prior = applied(&planned);

    // Unchanged: empty plan, outputs kept.
    let (again, replace) = plan_values(&prior, &prior, &config());
    assert!(replace.is_empty());
    assert_eq!(again, prior);

    for (attr, value) in [
        (attr::pod_offloading_strategy, Value::string("Remote")),
        (
            attr::cluster_selector,
            selector(vec![expr("liqo.io/remote-cluster-id", "In", Value::string_list(["milan"]))]),
        ),
        (attr::create_namespace, Value::Bool(true)),
    ] {
        let mut proposed = prior.clone();
        proposed.set(attr, value.clone());
        let mut c = config();
        c.set(attr, value);
        let (planned, replace) = plan_values(&prior, &proposed, &c);
        assert!(replace.is_empty(), "{attr} must update in place");
        assert_eq!(planned.get(attr::remote_namespace_name), &Value::string("liqo-demo-rome"), "{attr}");
        if attr != attr::create_namespace {
            assert!(planned.get(attr::offloading_phase).is_unknown(), "{attr}");
        }
    }

    let mut proposed = prior.clone();
    proposed.set(attr::namespace_mapping_strategy, Value::string("EnforceSameName"));
    let mut c = config();
    c.set(attr::namespace_mapping_strategy, Value::string("EnforceSameName"));
    let (planned, replace) = plan_values(&prior, &proposed, &c);
    // The new remote name follows from the strategy; the strategy is what forces the replacement.
    assert_eq!(replace, vec![attr::namespace_mapping_strategy.path()]);
    assert_eq!(planned.get(attr::remote_namespace_name), &Value::string("liqo-demo"));

    let mut proposed = prior.clone();
    proposed.set(attr::namespace, Value::string("other"));
    let mut c = config();
    c.set(attr::namespace, Value::string("other"));
    let (planned, replace) = plan_values(&prior, &proposed, &c);
    assert_eq!(replace, vec![attr::namespace.path()]);
    assert!(planned.get(attr::remote_namespace_name).is_unknown());
}

#[test]
fn an_unknown_immutable_input_replaces_and_a_missing_remote_name_is_set_in_place() {
    let (planned, _) = plan_values(&Value::Null, &config(), &config());
    let prior = applied(&planned);

    // A namespace known only at apply (another resource's output) may differ: planned as a replacement, so the
    // final plan cannot turn an update into one.
    let mut c = config();
    c.set(attr::namespace, Value::Unknown);
    let mut proposed = prior.clone();
    proposed.set(attr::namespace, Value::Unknown);
    let (_, replace) = plan_values(&prior, &proposed, &c);
    assert_eq!(replace, vec![attr::namespace.path()]);

    // Imported before Liqo reported the remote name: the configured name is set in place.
    let mut imported = prior.clone();
    imported.set(attr::namespace_mapping_strategy, Value::string("SelectedName"));
    imported.set(attr::remote_namespace_name, Value::Null);
    let mut c = config();
    c.set(attr::namespace_mapping_strategy, Value::string("SelectedName"));
    c.set(attr::remote_namespace_name, Value::string("far-away"));
    let mut proposed = imported.clone();
    proposed.set(attr::remote_namespace_name, Value::string("far-away"));
    let (planned, replace) = plan_values(&imported, &proposed, &c);
    assert!(replace.is_empty(), "{replace:?}");
    assert_eq!(planned.get(attr::remote_namespace_name), &Value::string("far-away"));
}

#[test]
fn offloading_object_never_sends_null_terms() {
    let (planned, _) = plan_values(&Value::Null, &config(), &config());
    let mut known = planned.clone();
    known.set(attr::remote_namespace_name, Value::Null);
    let off = attr::Offload::of(&known);
    let json = serde_json::to_value(off.namespace_offloading()).unwrap();
    assert_eq!(json["apiVersion"], "offloading.liqo.io/v1beta1");
    assert_eq!(json["kind"], "NamespaceOffloading");
    assert_eq!(json["metadata"], serde_json::json!({"name": "offloading", "namespace": "liqo-demo"}));
    assert_eq!(
        json["spec"],
        serde_json::json!({
            "namespaceMappingStrategy": "DefaultName",
            "podOffloadingStrategy": "LocalAndRemote",
            "clusterSelector": {"nodeSelectorTerms": []},
        })
    );

    known.set(attr::namespace_mapping_strategy, Value::string("SelectedName"));
    known.set(attr::remote_namespace_name, Value::string("far-away"));
    known.set(
        attr::cluster_selector,
        selector(vec![
            expr("liqo.io/remote-cluster-id", "In", Value::string_list(["milan"])),
            expr("gpu", "Exists", Value::List(vec![])),
        ]),
    );
    let json = serde_json::to_value(attr::Offload::of(&known).namespace_offloading()).unwrap();
    assert_eq!(json["spec"]["remoteNamespaceName"], "far-away");
    assert_eq!(
        json["spec"]["clusterSelector"],
        serde_json::json!({"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "liqo.io/remote-cluster-id", "operator": "In", "values": ["milan"]},
            {"key": "gpu", "operator": "Exists"},
        ]}]})
    );

    let ns = serde_json::to_value(off.namespace_object(true)).unwrap();
    assert_eq!(
        ns,
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "liqo-demo", "labels": {"app.kubernetes.io/managed-by": "terraform-provider-liqo"}
        }})
    );
    let released = serde_json::to_value(off.namespace_object(false)).unwrap();
    assert_eq!(
        released,
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "liqo-demo"}})
    );
}

fn offloading(generation: i64, observed: Option<i64>, phase: &str) -> NamespaceOffloading {
    let mut o = NamespaceOffloading::new("offloading", NamespaceOffloadingSpec::default());
    o.metadata.namespace = Some("liqo-demo".into());
    o.metadata.generation = Some(generation);
    o.status = Some(NamespaceOffloadingStatus {
        offloading_phase: Some(phase.into()).filter(|p: &String| !p.is_empty()),
        observed_generation: observed,
        remote_namespace_name: Some("liqo-demo-rome".into()),
        ..Default::default()
    });
    o
}

#[test]
fn wait_needs_the_current_generation_and_a_final_phase() {
    assert!(matches!(offloading_check(None, 1), Verdict::Pending(_)));
    // A stale copy from before this apply, even if Ready, does not count.
    assert!(matches!(offloading_check(Some(&offloading(1, Some(1), "Ready")), 2), Verdict::Pending(_)));
    let Verdict::Pending(seen) = offloading_check(Some(&offloading(2, Some(1), "Ready")), 2) else { panic!() };
    assert!(seen.contains("observedGeneration = 1"));
    let Verdict::Pending(seen) = offloading_check(Some(&offloading(2, Some(2), "InProgress")), 2) else { panic!() };
    assert_eq!(seen, "offloadingPhase = InProgress");
    let Verdict::Ready(out) = offloading_check(Some(&offloading(2, Some(2), "Ready")), 2) else { panic!() };
    assert_eq!(out, Outcome { phase: "Ready".into(), remote_namespace_name: Some("liqo-demo-rome".into()) });
    assert!(matches!(offloading_check(Some(&offloading(2, Some(2), "NoClusterSelected")), 2), Verdict::Ready(_)));

    let mut failed = offloading(3, Some(3), "SomeFailed");
    let cond = |t: &str, s: &str, r: &str| LiqoCondition {
        type_: t.into(),
        status: s.into(),
        reason: Some(r.into()),
        ..Default::default()
    };
    failed.status.as_mut().unwrap().remote_namespaces_conditions = Some(BTreeMap::from([(
        "milan".to_string(),
        vec![cond("OffloadingRequired", "True", "ClusterSelected"), cond("Ready", "False", "CreationLoopBackOff")],
    )]));
    let Verdict::Failed { reason, hint } = offloading_check(Some(&failed), 3) else { panic!() };
    assert!(reason.contains("SomeFailed"));
    assert!(reason.contains("milan: OffloadingRequired=True (ClusterSelected), Ready=False (CreationLoopBackOff)"));
    assert!(hint.contains("apply again"));
    let Verdict::Failed { reason, .. } = offloading_check(Some(&offloading(3, Some(3), "AllFailed")), 3) else {
        panic!()
    };
    assert!(reason.contains("no per-cluster conditions"));
    assert!(no_cluster_warning("liqo-demo").detail.contains("NoClusterSelected"));
}

#[test]
fn read_reflects_drift_and_import_rebuilds_state() {
    let mut c = config();
    c.set(attr::cluster_selector, selector(vec![expr("gpu", "Exists", Value::List(vec![]))]));
    let (planned, _) = plan_values(&Value::Null, &c, &c);
    let prior = applied(&planned);
    let mut known = prior.clone();
    known.set(attr::remote_namespace_name, Value::Null);
    let mut live = attr::Offload::of(&known).namespace_offloading();
    live.status = offloading(1, Some(1), "Ready").status;

    // The live object reads back into the same state (an empty `values` list as the user wrote it).
    assert_eq!(owned(observed_state(&prior, &live).value(), prior.get(TIMEOUTS)), prior);

    // Out-of-band edits show up as drift.
    live.spec.pod_offloading_strategy = Some("Local".into());
    live.spec.cluster_selector = Some(NodeSelector { node_selector_terms: vec![] });
    let s = observed_state(&prior, &live).value();
    assert_eq!(s.get(attr::pod_offloading_strategy), &Value::string("Local"));
    assert!(s.get(attr::cluster_selector).is_null());

    // Import: full state, matching the plan of the documented config.
    let (want, _) = plan_values(&Value::Null, &config(), &config());
    let mut live = attr::Offload::of(&{
        let mut k = want.clone();
        k.set(attr::remote_namespace_name, Value::Null);
        k
    })
    .namespace_offloading();
    live.status = offloading(1, Some(1), "Ready").status;
    let s = owned(observed_state(&Value::Null, &live).value(), &Value::Null);
    for attr in [
        attr::id,
        attr::namespace,
        attr::create_namespace,
        attr::namespace_mapping_strategy,
        attr::pod_offloading_strategy,
        attr::cluster_selector,
    ] {
        assert_eq!(s.get(attr), want.get(attr), "{attr}");
    }
    assert_eq!(s.get(attr::remote_namespace_name), &Value::string("liqo-demo-rome"));
    assert_eq!(s.get(attr::offloading_phase), &Value::string("Ready"));
}

#[test]
fn import_ids_and_namespace_ownership() {
    assert_eq!(parse_import_id("liqo-demo").unwrap(), ["liqo-demo"]);
    for bad in ["ns/offloading", "Demo", ""] {
        assert!(parse_import_id(bad).unwrap_err().detail.contains("`<namespace>`"), "{bad}");
    }
    let mut ns = Namespace::default();
    assert!(!created_by_provider(&ns));
    ns.metadata.labels = Some(BTreeMap::from([("app.kubernetes.io/managed-by".into(), "someone-else".into())]));
    assert!(!created_by_provider(&ns));
    ns.metadata.labels = Some(BTreeMap::from([("app.kubernetes.io/managed-by".into(), FIELD_MANAGER.into())]));
    assert!(created_by_provider(&ns));
}

#[test]
fn failure_state_has_no_unknowns() {
    let (planned, _) = plan_values(&Value::Null, &config(), &config());
    let s = applied_state(&planned, None);
    assert!(s.is_wholly_known());
}
