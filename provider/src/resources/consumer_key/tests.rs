use liqo_schema::liqo::labels;
use liqo_schema::tf::{AttributePath, Value};

use super::ConsumerKeyResource;
use super::objects::{key_secret, sound};
use super::schema::attr;
use crate::crypto;
use crate::resources::lifecycle::Plan;
use crate::resources::lifecycle::TIMEOUTS;
use crate::resources::shared::control_plane_key::PRIVATE_KEY;

crate::resources::lifecycle::test_helpers!(super::ConsumerKeyResource, 2);

fn config() -> Value {
    Value::object([
        (attr::id, Value::Null),
        (attr::tenant_namespace, Value::string("liqo-tenant-milan")),
        (attr::provider_cluster_id, Value::string("milan")),
        (attr::cluster_id, Value::Null),
        (attr::csr, Value::Null),
        (attr::key_secret_name, Value::Null),
        (TIMEOUTS, Value::Null),
    ])
}

fn plan(prior: &Value, proposed: &Value) -> (Value, Vec<AttributePath>) {
    let p = Plan::run::<ConsumerKeyResource>(prior, proposed.clone(), proposed);
    assert!(p.diagnostics.is_empty());
    (p.planned, p.replace)
}

#[test]
fn only_the_csr_is_an_output_and_nothing_is_sensitive() {
    let s = schema();
    for a in &s.block.attributes {
        assert!(!a.description.is_empty(), "{} has no description", a.name);
        assert!(!a.sensitive, "{} carries nothing secret", a.name);
    }
    assert!(s.block.attribute("private_key").is_none());
}

#[test]
fn validation_names_the_attribute() {
    let mut c = config();
    c.set(attr::tenant_namespace, Value::string("Bad_NS"));
    c.set(attr::provider_cluster_id, Value::string("-milan"));
    let paths: Vec<String> = validate(&c).iter().map(|d| d.attribute.as_ref().unwrap().to_string()).collect();
    assert_eq!(paths, [attr::tenant_namespace, attr::provider_cluster_id]);
    assert!(validate(&config()).is_empty());
}

#[test]
fn a_new_namespace_or_provider_is_a_new_key() {
    let (planned, replace) = plan(&Value::Null, &config());
    assert!(replace.is_empty());
    assert_eq!(planned.get(attr::id).as_str(), Some("liqo-tenant-milan/milan"));
    assert_eq!(planned.get(attr::key_secret_name).as_str(), Some("controlplane-key-milan"));
    assert!(planned.get(attr::csr).is_unknown() && planned.get(attr::cluster_id).is_unknown());

    let mut prior = planned.clone();
    prior.set(attr::csr, Value::string("CSR"));
    prior.set(attr::cluster_id, Value::string("rome"));
    let (again, replace) = plan(&prior, &prior);
    assert!(replace.is_empty());
    assert_eq!(again, prior, "an unchanged configuration keeps the key");
    let mut moved = prior.clone();
    moved.set(attr::provider_cluster_id, Value::string("turin"));
    let (planned, replace) = plan(&prior, &moved);
    assert_eq!(replace, [attr::provider_cluster_id.path()]);
    assert!(planned.get(attr::csr).is_unknown());
}

#[test]
fn the_secret_holds_the_key_and_a_csr_for_it() {
    let key = crypto::new_client_key("rome", "liqo.io").unwrap();
    let secret = key_secret("liqo-tenant-milan", "milan", &key.key_pem, &key.csr_pem);
    assert_eq!(secret.metadata.name.as_deref(), Some("controlplane-key-milan"));
    let labels = secret.metadata.labels.as_ref().unwrap();
    assert_eq!(labels.get("app.kubernetes.io/managed-by").map(String::as_str), Some("terraform-provider-liqo"));
    assert_eq!(labels.get("liqo.io/remote-cluster-id").map(String::as_str), Some("milan"));
    assert!(!labels.contains_key(labels::IDENTITY_TYPE), "Liqo's crd-replicator must not take it for an identity");
    assert_eq!(sound(&secret), Some((key.csr_pem.clone(), "rome".to_string())));

    // A CSR for another key (the Secret edited by hand): not sound, so the resource is made again.
    let other = crypto::new_client_key("rome", "liqo.io").unwrap();
    let mixed = key_secret("liqo-tenant-milan", "milan", &key.key_pem, &other.csr_pem);
    assert_eq!(sound(&mixed), None);
    let mut emptied = secret.clone();
    emptied.data.as_mut().unwrap().remove(PRIVATE_KEY);
    assert_eq!(sound(&emptied), None);
}
