use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use liqo_schema::liqo::labels;
use liqo_schema::tf::{Diagnostics, Severity, Type, Value};

use super::GenerateResource;
use super::objects::{
    POD_SECURITY_LABELS, key_secret_object, key_secret_public_key, mounts_key_secret, namespace_drift,
    namespace_object, pod_selector,
};
use super::operations::key_pair_lost;
use super::schema::attr;
use super::state::state_of;
use super::status::namespace_check;
use crate::attributes::Key;
use crate::cluster_facts::ClusterFacts;
use crate::kube::{Verdict, created_by_provider};
use crate::resources::lifecycle::Plan;
use crate::resources::lifecycle::TIMEOUTS;

crate::resources::lifecycle::test_helpers!(super::GenerateResource, 1);

fn config(pairs: &[(Key, Value)]) -> Value {
    let mut v = Value::object([
        (attr::id, Value::Null),
        (attr::remote_cluster_id, Value::string("rome")),
        (attr::tenant_namespace, Value::Null),
        (attr::cluster_id, Value::Null),
        (attr::pod_cidrs, Value::Null),
        (attr::external_cidr, Value::Null),
        (attr::api_server_url, Value::Null),
        (attr::wireguard_public_key, Value::Null),
        (attr::key_secret_name, Value::Null),
        (TIMEOUTS, Value::Null),
    ]);
    for (k, val) in pairs {
        v.set(*k, val.clone());
    }
    v
}

fn facts() -> ClusterFacts {
    ClusterFacts {
        cluster_id: "milan".into(),
        pod_cidrs: vec!["10.1.0.0/16".into()],
        external_cidr: "10.70.0.0/16".into(),
        api_server_url: "https://127.0.0.1:6443".into(),
    }
}

/// The peering side with Rome, in Liqo's tenant namespace for it.
fn rome() -> attr::Generate {
    attr::Generate {
        remote_cluster_id: "rome".into(),
        tenant_namespace: "liqo-tenant-rome".into(),
        ..attr::Generate::defaults()
    }
}

/// The state a successful create leaves.
fn applied() -> Value {
    let key_secret_name = Some(labels::KEY_SECRET_NAME.to_string());
    owned(state_of(&rome(), &facts(), key_secret_name, Some("A".repeat(43) + "=")).value(), &Value::Null)
}

fn error_paths(d: &Diagnostics) -> Vec<String> {
    d.iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.attribute.as_ref().map(|p| p.to_string()).unwrap_or_default())
        .collect()
}

#[test]
fn schema_describes_everything_and_holds_no_secret() {
    let s = schema();
    for a in &s.block.attributes {
        assert!(!a.description.is_empty(), "{} has no description", a.name);
        // Nothing secret is an attribute: the private key stays in the cluster.
        assert!(!a.sensitive, "{}", a.name);
    }
    assert!(crate::attributes::shown_required(s.block.attribute("remote_cluster_id").unwrap()));
    let ns = s.block.attribute("tenant_namespace").unwrap();
    assert!(ns.optional && ns.computed);
    assert_eq!(s.block.attribute("pod_cidrs").unwrap().ty, Some(Type::list(Type::String)));
    assert_eq!(s.block.blocks[0].type_name, "timeouts");
    // The state holds exactly the schema's attributes, the Go provider's names always null.
    let Value::Object(state) = applied() else { unreachable!() };
    let mut names: Vec<&str> = s.block.attributes.iter().map(|a| a.name.as_str()).chain([TIMEOUTS.name()]).collect();
    names.sort();
    assert_eq!(state.keys().map(String::as_str).collect::<Vec<_>>(), names);
    for removed in s.block.attributes.iter().filter(|a| a.description.starts_with(crate::attributes::REMOVED_NOTE)) {
        assert!(state[&removed.name].is_null(), "{}", removed.name);
    }
}

#[test]
fn validation_names_the_attribute() {
    let bad = config(&[
        (attr::remote_cluster_id, Value::string("Rome_1")),
        (attr::tenant_namespace, Value::string("-bad")),
        (TIMEOUTS, Value::object([("create", Value::string("soon"))])),
    ]);
    assert_eq!(error_paths(&validate(&bad)), ["remote_cluster_id", "tenant_namespace", "timeouts.create"]);
    assert!(validate(&config(&[])).is_empty());
    assert!(
        validate(&config(&[(attr::remote_cluster_id, Value::Unknown), (attr::tenant_namespace, Value::Unknown)]))
            .is_empty()
    );
}

#[test]
fn create_fills_the_default_namespace_and_leaves_outputs_unknown() {
    let cfg = config(&[]);
    let r = Plan::run::<GenerateResource>(&Value::Null, cfg.clone(), &cfg);
    assert_eq!(r.planned.get(attr::tenant_namespace), &Value::string("liqo-tenant-rome"));
    assert_eq!(r.planned.get(attr::id), &Value::string("liqo-tenant-rome"));
    assert_eq!(r.planned.get(attr::key_secret_name), &Value::string("gw-keys"));
    for key in crate::attributes::outputs(&attr::declared()) {
        assert!(r.planned.get(key).is_unknown(), "{key}");
    }
    assert!(r.replace.is_empty());

    let explicit = config(&[(attr::tenant_namespace, Value::string("peer-rome"))]);
    assert_eq!(
        Plan::run::<GenerateResource>(&Value::Null, explicit.clone(), &explicit).planned.get(attr::id),
        &Value::string("peer-rome")
    );
}

#[test]
fn an_unknown_peer_id_keeps_the_namespace_unknown() {
    let cfg = config(&[(attr::remote_cluster_id, Value::Unknown)]);
    let r = Plan::run::<GenerateResource>(&Value::Null, cfg.clone(), &cfg);
    assert!(r.planned.get(attr::tenant_namespace).is_unknown());
    assert!(r.planned.get(attr::id).is_unknown());
    assert!(r.diagnostics.is_empty());
}

#[test]
fn unchanged_config_plans_no_change() {
    let prior = applied();
    // Terraform's proposed state carries computed values over from the prior state.
    let cfg = config(&[]);
    let r = Plan::run::<GenerateResource>(&prior, prior.clone(), &cfg);
    assert_eq!(r.planned, prior);
    assert!(r.replace.is_empty());
}

#[test]
fn peer_or_namespace_change_replaces_and_unknowns_the_outputs() {
    let prior = applied();
    let mut proposed = prior.clone();
    proposed.set(attr::remote_cluster_id, Value::string("naples"));
    let cfg = config(&[(attr::remote_cluster_id, Value::string("naples"))]);
    let r = Plan::run::<GenerateResource>(&prior, proposed, &cfg);
    assert_eq!(r.replace, [attr::remote_cluster_id.path(), attr::tenant_namespace.path()]);
    assert_eq!(r.planned.get(attr::tenant_namespace), &Value::string("liqo-tenant-naples"));
    assert!(r.planned.get(attr::wireguard_public_key).is_unknown());

    let cfg = config(&[(attr::tenant_namespace, Value::string("peer-rome"))]);
    let mut proposed = prior.clone();
    proposed.set(attr::tenant_namespace, Value::string("peer-rome"));
    let r = Plan::run::<GenerateResource>(&prior, proposed, &cfg);
    assert_eq!(r.replace, [attr::tenant_namespace.path()]);
    assert!(r.planned.get(attr::cluster_id).is_unknown());
}

#[test]
fn timeouts_update_in_place() {
    let prior = applied();
    let timeouts = Value::object([("create", Value::string("5m")), ("update", Value::Null), ("delete", Value::Null)]);
    let mut proposed = prior.clone();
    proposed.set(TIMEOUTS, timeouts.clone());
    let cfg = config(&[(TIMEOUTS, timeouts)]);
    let r = Plan::run::<GenerateResource>(&prior, proposed, &cfg);
    assert!(r.replace.is_empty());
    assert_eq!(r.planned.get(attr::wireguard_public_key), prior.get(attr::wireguard_public_key));
}

#[test]
fn namespace_carries_liqo_and_pod_security_labels() {
    let ns = namespace_object(&rome(), true);
    let l = ns.metadata.labels.clone().unwrap();
    assert_eq!(l["liqo.io/remote-cluster-id"], "rome");
    assert_eq!(l["liqo.io/tenant-namespace"], "true");
    for mode in ["enforce", "audit", "warn"] {
        assert_eq!(l[&format!("pod-security.kubernetes.io/{mode}")], "privileged");
    }
    assert!(created_by_provider(&ns));
    assert!(namespace_drift(&ns, "rome").is_none());
    // Only fields we own are sent: no spec, no status.
    let json = serde_json::to_value(&ns).unwrap();
    assert_eq!(json["apiVersion"], "v1");
    assert_eq!(json["kind"], "Namespace");
    assert!(json.get("spec").is_none() && json.get("status").is_none());

    let adopted = namespace_object(&rome(), false);
    assert!(!created_by_provider(&adopted));

    let mut drifted = ns.clone();
    drifted.metadata.labels.as_mut().unwrap().remove("pod-security.kubernetes.io/enforce");
    assert!(
        namespace_drift(&drifted, "rome")
            .unwrap()
            .contains("pod-security.kubernetes.io/enforce=privileged (found nothing)")
    );
    assert!(namespace_drift(&ns, "naples").unwrap().contains("liqo.io/remote-cluster-id=naples"));

    // A Liqo 1.0 tenant namespace (liqoctl's, without Pod Security labels) is adopted as it is; one that has
    // them, or one we created, must have them right.
    let mut liqo_1_0 = adopted.clone();
    let l = liqo_1_0.metadata.labels.as_mut().unwrap();
    for k in POD_SECURITY_LABELS {
        l.remove(k);
    }
    assert!(namespace_drift(&liqo_1_0, "rome").is_none());
    assert!(namespace_drift(&liqo_1_0, "naples").is_some(), "Liqo's own lookup labels still count");
    let mut partly = adopted.clone();
    partly.metadata.labels.as_mut().unwrap().remove(labels::POD_SECURITY_WARN);
    assert!(namespace_drift(&partly, "rome").unwrap().contains("pod-security.kubernetes.io/warn"));
}

#[test]
fn key_secret_holds_raw_keys_and_is_checked_against_its_labels() {
    let keys = crate::crypto::wireguard::KeyPair::generate().unwrap();
    let secret = key_secret_object(&rome(), &keys);
    assert_eq!(secret.metadata.name.as_deref(), Some("gw-keys"));
    assert_eq!(secret.metadata.namespace.as_deref(), Some("liqo-tenant-rome"));
    let l = secret.metadata.labels.clone().unwrap();
    assert_eq!(
        (l["liqo.io/remote-cluster-id"].as_str(), l["networking.liqo.io/gateway-resource"].as_str()),
        ("rome", "true")
    );
    // On the wire, data values are the 44-character base64 of the raw 32 bytes, as `wg genkey` prints them.
    let json = serde_json::to_value(&secret).unwrap();
    assert_eq!(json["data"]["publicKey"], keys.public_key());
    assert_eq!(json["data"]["privateKey"].as_str().unwrap().len(), 44);
    assert!(secret.string_data.is_none());

    assert_eq!(key_secret_public_key(&secret, "rome"), Ok(keys.public_key()));
    assert!(key_secret_public_key(&secret, "naples").unwrap_err().contains("liqo.io/remote-cluster-id=naples"));
    let mut emptied = secret.clone();
    emptied.data = None;
    assert!(key_secret_public_key(&emptied, "rome").unwrap_err().contains("no data"));
}

#[test]
fn state_never_contains_the_private_key() {
    let keys = crate::crypto::wireguard::KeyPair::generate().unwrap();
    let secret = key_secret_object(&rome(), &keys);
    let private = serde_json::to_value(&secret).unwrap()["data"]["privateKey"].as_str().unwrap().to_string();
    let state = state_of(&rome(), &facts(), Some(labels::KEY_SECRET_NAME.into()), Some(keys.public_key())).value();
    let dump = format!("{state:?}");
    assert!(dump.contains(&keys.public_key()));
    assert!(!dump.contains(&private));
}

/// Liqo's gateway Deployment mounts the key Secret in its `wireguard-config` volume; its pods are found by the
/// Deployment's selector. Other Deployments are never touched.
#[test]
fn gateway_deployments_are_found_by_their_key_secret_volume() {
    let deployment = |secret: &str| -> Deployment {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "gw-rome", "namespace": "liqo-tenant-rome"},
            "spec": {
                "selector": {"matchLabels": {"networking.liqo.io/component": "gateway", "networking.liqo.io/active": "true"}},
                "template": {"spec": {
                    "containers": [{"name": "wireguard"}],
                    "volumes": [{"name": "wireguard-config", "secret": {"secretName": secret}}],
                }},
            },
        }))
        .unwrap()
    };
    let gw = deployment(labels::KEY_SECRET_NAME);
    assert!(mounts_key_secret(&gw));
    assert_eq!(
        pod_selector(&gw).as_deref(),
        Some("networking.liqo.io/active=true,networking.liqo.io/component=gateway")
    );
    assert!(!mounts_key_secret(&deployment("gw-other")));
    let mut unselective = gw.clone();
    unselective.spec.as_mut().unwrap().selector.match_labels = None;
    assert_eq!(pod_selector(&unselective), None, "no selector, no pods deleted");
}

#[test]
fn the_plan_warns_what_a_lost_key_pair_means() {
    let d = key_pair_lost("liqo-tenant-rome");
    assert_eq!(d.severity, Severity::Warning);
    for needle in ["liqo-tenant-rome/gw-keys", "NEW key pair", "restarts the pods", "same apply"] {
        assert!(d.detail.contains(needle), "{needle}: {}", d.detail);
    }
}

#[test]
fn namespace_wait_fails_fast_on_terminating() {
    let mut ns = Namespace::default();
    assert!(matches!(namespace_check(None), Verdict::Pending(_)));
    ns.status =
        Some(k8s_openapi::api::core::v1::NamespaceStatus { phase: Some("Terminating".into()), ..Default::default() });
    assert!(matches!(namespace_check(Some(&ns)), Verdict::Failed { .. }));
    ns.status =
        Some(k8s_openapi::api::core::v1::NamespaceStatus { phase: Some("Active".into()), ..Default::default() });
    assert!(matches!(namespace_check(Some(&ns)), Verdict::Ready(())));
}
