use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::ByteString;
use liqo_schema::liqo::labels;
use liqo_schema::liqo::{
    AUTHZ_POLICY_KEYS_EXCHANGE, AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE, Quota, QuotaSpec, ResourceSlice,
    TENANT_CONDITION_ACTIVE, Tenant, TenantSpec,
};
use liqo_schema::tf::{AttributePath, Diagnostics, Severity, Value};
use time::OffsetDateTime;

use super::TenantResource;
use super::objects::{
    binds_consumer, control_plane_role_selector, cordon_changes, cordoned_read, csr_name, csr_object, csr_selector,
    pick_control_plane_role, role_binding, tenant_object,
};
use super::schema::attr;
use super::state::{handshake_state, rfc3339};
use super::status::{Endpoint, csr_issued, quotas_follow, slices_drained, tenant_ready, tls_verdict};
use crate::attributes::Key;
use crate::cluster_api::ClusterApi;
use crate::crypto;
use crate::kube::Verdict;
use crate::resources::lifecycle::{Driven, Plan, TIMEOUTS};

crate::resources::lifecycle::test_helpers!(super::TenantResource, 2);

fn config(pairs: &[(Key, Value)]) -> Value {
    let mut v = Value::object([
        (attr::tenant_namespace, Value::string("liqo-tenant-rome")),
        (attr::consumer_cluster_id, Value::string("rome")),
        (attr::tenant_condition, Value::Null),
        (attr::cordoned_resource_slices, Value::Null),
        (attr::proxy_url, Value::Null),
        (attr::api_server_url, Value::Null),
        (attr::api_server_ca, Value::Null),
        (attr::certificate_validity, Value::Null),
        (attr::renew_before, Value::Null),
        (attr::id, Value::Null),
        (attr::csr, Value::string(csr_for("rome"))),
        (attr::client_certificate, Value::Null),
        (attr::cluster_ca_certificate, Value::Null),
        (attr::certificate_expires_at, Value::Null),
        (attr::authz_policy, Value::Null),
        (TIMEOUTS, Value::Null),
    ]);
    for (k, val) in pairs {
        v.set(*k, val.clone());
    }
    v
}

/// A consumer's CSR as liqo_consumer_key makes it, one per common name and test process.
fn csr_for(cn: &str) -> String {
    static CSRS: std::sync::Mutex<BTreeMap<String, String>> = std::sync::Mutex::new(BTreeMap::new());
    let mut csrs = CSRS.lock().unwrap();
    csrs.entry(cn.to_string()).or_insert_with(|| crypto::new_client_key(cn, "liqo.io").unwrap().csr_pem).clone()
}

/// A real (self-signed) CA certificate.
fn pem_ca() -> String {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    rcgen::CertificateParams::new(Vec::<String>::new()).unwrap().self_signed(&key).unwrap().pem()
}

fn error_paths(d: &Diagnostics) -> Vec<String> {
    d.iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.attribute.as_ref().map(|p| p.to_string()).unwrap_or_default())
        .collect()
}

/// An expiry `days` from now, as the state records it.
fn in_days(days: i64) -> String {
    rfc3339(OffsetDateTime::now_utc() + time::Duration::days(days))
}

/// A state as a successful apply leaves it.
fn applied_state(expires_at: &str) -> Value {
    config(&[
        (attr::id, Value::string("liqo-tenant-rome/rome")),
        (attr::tenant_condition, Value::string("Active")),
        (attr::api_server_url, Value::string("https://127.0.0.1:6443")),
        (attr::certificate_validity, Value::string("8760h")),
        (attr::renew_before, Value::string("720h")),
        (attr::client_certificate, Value::string("-----BEGIN CERTIFICATE-----\n")),
        (attr::cluster_ca_certificate, Value::string("-----BEGIN CERTIFICATE-----\n")),
        (attr::certificate_expires_at, Value::string(expires_at)),
        (attr::authz_policy, Value::string(AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE)),
    ])
}

#[test]
fn schema_holds_nothing_secret_and_describes_everything() {
    let s = schema();
    assert!(s.block.attribute("kubeconfig").is_none(), "no private key crosses through this resource");
    for a in &s.block.attributes {
        assert!(!a.description.is_empty(), "{} has no description", a.name);
        assert!(!a.sensitive, "{} is public", a.name);
    }
    for out in [attr::client_certificate, attr::cluster_ca_certificate, attr::certificate_expires_at] {
        let a = s.block.attribute(out).unwrap();
        assert!(a.computed && !a.optional, "{out} is an output");
    }
    for name in [attr::tenant_namespace, attr::consumer_cluster_id, attr::csr] {
        assert!(crate::attributes::shown_required(s.block.attribute(name).unwrap()));
    }
    for name in [attr::tenant_condition, attr::api_server_url, attr::certificate_validity, attr::renew_before] {
        let a = s.block.attribute(name).unwrap();
        assert!(a.optional && a.computed, "{name} is optional+computed (it has a default)");
    }
    let ca = s.block.attribute("api_server_ca").unwrap();
    assert!(ca.optional && !ca.computed, "api_server_ca: null means the cluster CA");
    assert!(s.block.blocks.iter().any(|b| b.type_name == "timeouts"));
}

#[test]
fn validation_names_the_attribute() {
    let cases: Vec<(Value, &str)> = vec![
        (config(&[(attr::consumer_cluster_id, Value::string("Rome_1"))]), "consumer_cluster_id"),
        (config(&[(attr::tenant_namespace, Value::string("-bad"))]), "tenant_namespace"),
        (config(&[(attr::tenant_condition, Value::string("active"))]), "tenant_condition"),
        (config(&[(attr::certificate_validity, Value::string("1y"))]), "certificate_validity"),
        (
            config(&[(attr::certificate_validity, Value::string("5m")), (attr::renew_before, Value::string("1m"))]),
            "certificate_validity",
        ),
        (config(&[(attr::certificate_validity, Value::string("100000000h"))]), "certificate_validity"),
        (config(&[(attr::renew_before, Value::string("soon"))]), "renew_before"),
        (config(&[(attr::renew_before, Value::string("8760h"))]), "renew_before"),
        (
            config(&[
                (attr::certificate_validity, Value::string("48h")),
                (attr::renew_before, Value::string("47h55m")),
            ]),
            "renew_before",
        ),
        (
            config(&[(attr::certificate_validity, Value::string("24h")), (attr::renew_before, Value::string("48h"))]),
            "renew_before",
        ),
        (config(&[(attr::api_server_url, Value::string("http://10.0.0.1:6443"))]), "api_server_url"),
        (config(&[(attr::api_server_url, Value::string("https://:6443"))]), "api_server_url"),
        (config(&[(attr::api_server_url, Value::string("https://10.0.0.1:0"))]), "api_server_url"),
        (config(&[(TIMEOUTS, Value::object([("create", Value::string("ten minutes"))]))]), "timeouts.create"),
        (config(&[(attr::csr, Value::string("not a CSR"))]), "csr"),
        (config(&[(attr::csr, Value::string(csr_for("naples")))]), "csr"),
        (config(&[(attr::csr, Value::string(pem_ca()))]), "csr"),
    ];
    for (cfg, path) in cases {
        let d = validate(&cfg);
        assert_eq!(error_paths(&d), [path], "config {cfg:?}");
    }
}

#[test]
fn valid_and_unknown_configs_pass() {
    for cfg in [
        config(&[]),
        config(&[
            (attr::tenant_condition, Value::string("Cordoned")),
            (attr::api_server_url, Value::string("https://milan.example.com:6443")),
            (attr::certificate_validity, Value::string("48h")),
            (attr::renew_before, Value::string("24h")),
        ]),
        config(&[(attr::api_server_url, Value::string("https://[fd00::1]:6443/k8s/clusters/c-1"))]),
        config(&[(attr::api_server_url, Value::string("https://api.example.com"))]),
        config(&[
            (attr::tenant_namespace, Value::Unknown),
            (attr::consumer_cluster_id, Value::Unknown),
            (attr::certificate_validity, Value::Unknown),
            (attr::renew_before, Value::string("8760h")),
            (attr::api_server_url, Value::Unknown),
        ]),
    ] {
        assert!(validate(&cfg).is_empty(), "{cfg:?}: {:?}", validate(&cfg));
    }
}

#[test]
fn create_fills_defaults_and_leaves_outputs_unknown() {
    let cfg = config(&[]);
    let p = Plan::run::<TenantResource>(&Value::Null, cfg.clone(), &cfg);
    assert!(p.replace.is_empty() && p.diagnostics.is_empty());
    assert_eq!(p.planned.get(attr::tenant_condition).as_str(), Some("Active"));
    assert_eq!(p.planned.get(attr::certificate_validity).as_str(), Some("8760h"));
    assert_eq!(p.planned.get(attr::renew_before).as_str(), Some("720h"));
    assert_eq!(p.planned.get(attr::id).as_str(), Some("liqo-tenant-rome/rome"));
    for out in
        [attr::api_server_url, attr::client_certificate, attr::cluster_ca_certificate, attr::certificate_expires_at]
    {
        assert!(p.planned.get(out).is_unknown(), "{out}");
    }
}

#[test]
fn unknown_references_stay_unknown() {
    let cfg = config(&[(attr::tenant_namespace, Value::Unknown), (attr::api_server_url, Value::Unknown)]);
    let p = Plan::run::<TenantResource>(&Value::Null, cfg.clone(), &cfg);
    assert!(p.planned.get(attr::id).is_unknown());
    assert!(p.planned.get(attr::tenant_namespace).is_unknown());
    assert!(p.planned.get(attr::api_server_url).is_unknown());
}

#[test]
fn tenant_condition_updates_in_place_and_keeps_the_credentials() {
    let prior = applied_state(&in_days(334));
    let mut proposed = prior.clone();
    proposed.set(attr::tenant_condition, Value::string("Cordoned"));
    let cfg = config(&[(attr::tenant_condition, Value::string("Cordoned"))]);
    let p = Plan::run::<TenantResource>(&prior, proposed.clone(), &cfg);
    assert!(p.replace.is_empty());
    assert_eq!(p.planned.get(attr::tenant_condition).as_str(), Some("Cordoned"));
    assert_eq!(p.planned.get(attr::client_certificate), prior.get(attr::client_certificate));
    assert_eq!(p.planned.get(attr::certificate_expires_at), prior.get(attr::certificate_expires_at));
}

#[test]
fn an_unchanged_config_plans_no_change() {
    let prior = applied_state(&in_days(334));
    let cfg = config(&[]);
    let p = Plan::run::<TenantResource>(&prior, prior.clone(), &cfg);
    assert_eq!(p.planned, prior);
    assert!(p.replace.is_empty());
}

#[test]
fn removing_an_explicit_condition_restores_the_default() {
    let mut prior = applied_state(&in_days(334));
    prior.set(attr::tenant_condition, Value::string("Drained"));
    let cfg = config(&[]);
    let p = Plan::run::<TenantResource>(&prior, prior.clone(), &cfg);
    assert_eq!(p.planned.get(attr::tenant_condition).as_str(), Some("Active"));
}

#[test]
fn identity_changes_replace() {
    let prior = applied_state(&in_days(334));
    for (attr, value) in [(attr::consumer_cluster_id, "naples"), (attr::tenant_namespace, "other")] {
        let mut proposed = prior.clone();
        proposed.set(attr, Value::string(value));
        // Another consumer comes with its own CSR.
        if attr == attr::consumer_cluster_id {
            proposed.set(attr::csr, Value::string(csr_for("naples")));
        }
        let cfg = config(&[(attr, Value::string(value))]);
        let p = Plan::run::<TenantResource>(&prior, proposed.clone(), &cfg);
        assert_eq!(p.replace, [AttributePath::root(attr)]);
        assert!(p.planned.get(attr::client_certificate).is_unknown());
    }
}

#[test]
fn renewal_is_planned_once_renew_before_is_reached() {
    // now + 720h = in 30 days: an expiry in 31 days is not due, in 19 days it is.
    let fresh = applied_state(&in_days(31));
    let cfg = config(&[]);
    let p = Plan::run::<TenantResource>(&fresh, fresh.clone(), &cfg);
    assert_eq!(p.planned.get(attr::client_certificate), fresh.get(attr::client_certificate));

    let due = applied_state(&in_days(19));
    let cfg = config(&[]);
    let p = Plan::run::<TenantResource>(&due, due.clone(), &cfg);
    assert!(p.planned.get(attr::client_certificate).is_unknown());
    assert!(p.planned.get(attr::certificate_expires_at).is_unknown());
    assert!(p.replace.is_empty(), "renewal is an in-place update");
}

#[test]
fn validity_change_mints_but_respelling_does_not() {
    let prior = applied_state(&in_days(334));
    let mut same = prior.clone();
    same.set(attr::certificate_validity, Value::string("8760h0m0s"));
    let cfg = config(&[(attr::certificate_validity, Value::string("8760h0m0s"))]);
    let p = Plan::run::<TenantResource>(&prior, same.clone(), &cfg);
    assert!(!p.planned.get(attr::client_certificate).is_unknown());

    let mut shorter = prior.clone();
    shorter.set(attr::certificate_validity, Value::string("4380h"));
    let cfg = config(&[(attr::certificate_validity, Value::string("4380h"))]);
    let p = Plan::run::<TenantResource>(&prior, shorter.clone(), &cfg);
    assert!(p.planned.get(attr::certificate_expires_at).is_unknown());
}

#[test]
fn ca_change_keeps_the_certificate() {
    let prior = applied_state(&in_days(334));
    let mut proposed = prior.clone();
    let ca = pem_ca();
    proposed.set(attr::api_server_ca, Value::string(&ca));
    let cfg = config(&[(attr::api_server_ca, Value::string(&ca))]);
    let p = Plan::run::<TenantResource>(&prior, proposed.clone(), &cfg);
    assert!(p.replace.is_empty());
    assert!(p.planned.get(attr::cluster_ca_certificate).is_unknown());
    assert_eq!(p.planned.get(attr::client_certificate), prior.get(attr::client_certificate));
    assert_eq!(p.planned.get(attr::certificate_expires_at), prior.get(attr::certificate_expires_at));
}

/// A new CSR (the consumer rotated its key) is signed in place; the tenant stays.
#[test]
fn a_new_csr_is_signed_in_place() {
    let prior = applied_state(&in_days(334));
    let mut proposed = prior.clone();
    let rotated = crypto::new_client_key("rome", "liqo.io").unwrap().csr_pem;
    proposed.set(attr::csr, Value::string(&rotated));
    let cfg = config(&[(attr::csr, Value::string(&rotated))]);
    let p = Plan::run::<TenantResource>(&prior, proposed.clone(), &cfg);
    assert!(p.replace.is_empty());
    assert!(p.planned.get(attr::client_certificate).is_unknown());
    assert_eq!(p.planned.get(attr::cluster_ca_certificate), prior.get(attr::cluster_ca_certificate));
}

/// A CSR that only became known at plan time (both references unknown at validation) is still checked.
#[test]
fn a_csr_for_another_cluster_fails_the_plan() {
    let cfg = config(&[(attr::csr, Value::string(csr_for("naples")))]);
    let p = Plan::run::<TenantResource>(&Value::Null, cfg.clone(), &cfg);
    assert_eq!(error_paths(&p.diagnostics), [attr::csr]);
    assert!(p.diagnostics.0[0].detail.contains("`naples`") && p.diagnostics.0[0].detail.contains("`rome`"));
    let mut unknown = cfg.clone();
    unknown.set(attr::consumer_cluster_id, Value::Unknown);
    assert!(validate(&unknown).is_empty(), "the common name is compared once both are known");
}

#[test]
fn api_server_ca_must_be_pem_certificates() {
    assert!(validate(&config(&[(attr::api_server_ca, Value::string(pem_ca()))])).is_empty());
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap().serialize_pem();
    let ca_and_key = format!("{}{key}", pem_ca());
    for bad in
        ["not a certificate", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", &key, &ca_and_key]
    {
        let d = validate(&config(&[(attr::api_server_ca, Value::string(bad))]));
        assert_eq!(error_paths(&d), [attr::api_server_ca], "{bad}");
    }
}

/// The check's verdict names the URL and where the CA came from, on the attribute to fix.
#[test]
fn an_untrusted_api_server_fails_naming_url_and_ca() {
    let endpoint = |ca_source: &str| Endpoint {
        server: "https://203.0.113.10:6443".into(),
        ca_pem: Vec::new(),
        ca_source: ca_source.into(),
    };
    let cluster_ca =
        endpoint("the cluster CA (ConfigMap liqo-tenant-rome/kube-root-ca.crt, the default of `api_server_ca`)");
    let untrusted = || Err(crate::kube::probe::TlsProbeError::Untrusted("UnknownIssuer".into()));
    let d = tls_verdict(&cluster_ca, untrusted()).unwrap();
    assert_eq!(d.severity, Severity::Error);
    assert!(d.summary.contains("https://203.0.113.10:6443") && d.summary.contains("cluster CA"), "{}", d.summary);
    assert!(d.detail.contains("UnknownIssuer") && d.detail.contains("set `api_server_ca`"), "{}", d.detail);
    let d = tls_verdict(&endpoint("the CA in `api_server_ca`"), untrusted()).unwrap();
    assert_eq!(d.attribute, Some(attr::api_server_ca.path()));
    let d = tls_verdict(&cluster_ca, Err(crate::kube::probe::TlsProbeError::Unreachable("refused".into()))).unwrap();
    assert_eq!(d.severity, Severity::Warning, "unreachable from here may still work from the consumer");
    assert!(tls_verdict(&cluster_ca, Ok(())).is_none());
}

#[test]
fn server_change_keeps_the_certificate() {
    let prior = applied_state(&in_days(334));
    let mut proposed = prior.clone();
    proposed.set(attr::api_server_url, Value::string("https://milan.example.com:6443"));
    let cfg = config(&[(attr::api_server_url, Value::string("https://milan.example.com:6443"))]);
    let p = Plan::run::<TenantResource>(&prior, proposed.clone(), &cfg);
    assert!(p.planned.get(attr::cluster_ca_certificate).is_unknown());
    assert_eq!(p.planned.get(attr::client_certificate), prior.get(attr::client_certificate));
}

/// After an import or an upgrade from 0.2.0 nothing but the certificate (and the CA, URL and CSR it records)
/// changes.
#[test]
fn after_import_only_the_certificate_changes() {
    let mut imported = applied_state("ignored");
    for attr in [attr::csr, attr::client_certificate, attr::cluster_ca_certificate, attr::certificate_expires_at] {
        imported.set(attr, Value::Null);
    }
    let mut proposed = imported.clone();
    proposed.set(attr::csr, Value::string(csr_for("rome")));
    let cfg = config(&[]);
    let p = Plan::run::<TenantResource>(&imported, proposed.clone(), &cfg);
    assert!(p.replace.is_empty());
    let mut expected = proposed.clone();
    for attr in [attr::client_certificate, attr::cluster_ca_certificate, attr::certificate_expires_at] {
        expected.set(attr, Value::Unknown);
    }
    assert_eq!(p.planned, expected);
}

/// 0.2.0 kept the consumer's private key in `kubeconfig`: the upgrade drops it.
#[test]
fn upgrading_0_2_0_state_drops_the_kubeconfig() {
    let resource = Driven::<TenantResource>::managed(Arc::new(ClusterApi::default()));
    let old =
        serde_json::json!({"id": "liqo-tenant-rome/rome", "kubeconfig": "users: [{user: {client-key-data: S0VZ}}]"});
    let upgraded = resource.upgrade(0, old).unwrap();
    assert_eq!(upgraded, serde_json::json!({"id": "liqo-tenant-rome/rome"}));
    assert!(resource.upgrade(1, upgraded.clone()).is_ok());
    assert!(resource.upgrade(7, upgraded).is_err());
}

/// A Tenant from `liqoctl peer`: Liqo minted the consumer's identity, so no plan ever issues credentials,
/// not even when its certificate nears expiry (Liqo renews it) or the inert settings change.
#[test]
fn a_handshake_tenant_never_gets_credentials_issued() {
    let mut imported = applied_state(&in_days(1));
    imported.set(attr::client_certificate, Value::Null);
    imported.set(attr::cluster_ca_certificate, Value::Null);
    imported.set(attr::authz_policy, Value::string(AUTHZ_POLICY_KEYS_EXCHANGE));
    let generated = config(&[
        (attr::tenant_condition, Value::string("Active")),
        (attr::api_server_url, Value::string("https://127.0.0.1:6443")),
        (attr::certificate_validity, Value::string("8760h")),
        (attr::renew_before, Value::string("720h")),
    ]);
    let p = Plan::run::<TenantResource>(&imported, imported.clone(), &generated);
    assert_eq!(p.planned, imported, "the generated configuration plans no change");
    let mut moved = imported.clone();
    moved.set(attr::api_server_url, Value::string("https://milan.example.com:6443"));
    let p = Plan::run::<TenantResource>(&imported, moved.clone(), &generated);
    assert!(p.planned.get(attr::client_certificate).is_null() && p.replace.is_empty());
    assert!(p.planned.get(attr::cluster_ca_certificate).is_null());
    let tenant = attr::Tenant::of(&p.planned);
    assert_eq!(tenant_object(&tenant).spec.authz_policy.as_deref(), Some(AUTHZ_POLICY_KEYS_EXCHANGE));
    // A replacement is a new Tenant, made by this resource.
    let mut other = imported.clone();
    other.set(attr::consumer_cluster_id, Value::string("naples"));
    other.set(attr::csr, Value::string(csr_for("naples")));
    let p = Plan::run::<TenantResource>(&imported, other.clone(), &generated);
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
    assert!(!p.replace.is_empty() && p.planned.get(attr::client_certificate).is_unknown());
    assert_eq!(p.planned.get(attr::authz_policy).as_str(), Some(AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE));
}

/// The proxy the consumer's Liqo reaches this cluster through is the Tenant's `spec.proxyURL`, checked at plan and
/// changed in place with the credentials kept.
#[test]
fn the_proxy_url_is_the_tenants_and_changes_in_place() {
    let proxy = Value::string("http://proxy.example.com:8118");
    let tenant = attr::Tenant::of(&config(&[(attr::proxy_url, proxy.clone())]));
    let t = serde_json::to_value(tenant_object(&tenant)).unwrap();
    assert_eq!(t["spec"]["proxyURL"], "http://proxy.example.com:8118");
    let none = serde_json::to_value(tenant_object(&attr::Tenant::of(&config(&[])))).unwrap();
    assert!(none["spec"].get("proxyURL").is_none(), "unset, not written");

    let prior = applied_state(&in_days(334));
    let mut proposed = prior.clone();
    proposed.set(attr::proxy_url, proxy.clone());
    let cfg = config(&[(attr::proxy_url, proxy)]);
    let p = Plan::run::<TenantResource>(&prior, proposed, &cfg);
    assert!(p.replace.is_empty(), "{:?}", p.replace);
    assert_eq!(p.planned.get(attr::client_certificate), prior.get(attr::client_certificate));

    for bad in ["proxy.example.com:8118", "ftp://proxy:21", "http://"] {
        let d = validate(&config(&[(attr::proxy_url, Value::string(bad))]));
        assert_eq!(error_paths(&d), ["proxy_url"], "{bad}");
        assert!(d.0[0].summary.contains("Invalid proxy URL for `proxy_url`"), "{:?}", d.0[0]);
    }
    assert!(validate(&config(&[(attr::proxy_url, Value::string("socks5://127.0.0.1:1080"))])).is_empty());
}

#[test]
fn objects_carry_liqo_labels_and_no_controller_fields() {
    let tenant = attr::Tenant::of(&config(&[(attr::tenant_condition, Value::string("Cordoned"))]));
    let t = serde_json::to_value(tenant_object(&tenant)).unwrap();
    assert_eq!(t["apiVersion"], "authentication.liqo.io/v1beta1");
    assert_eq!(t["metadata"]["name"], "rome");
    assert_eq!(t["metadata"]["namespace"], "liqo-tenant-rome");
    assert_eq!(t["metadata"]["labels"]["liqo.io/remote-cluster-id"], "rome");
    assert_eq!(
        t["spec"],
        serde_json::json!({"clusterID": "rome", "authzPolicy": "TolerateNoHandshake", "tenantCondition": "Cordoned"})
    );
    assert!(t.get("status").is_none(), "status belongs to Liqo");

    let rb = serde_json::to_value(role_binding(&tenant, "liqo-remote-controlplane")).unwrap();
    assert_eq!(rb["metadata"]["name"], "liqo-binding-liqo-remote-controlplane");
    assert_eq!(rb["metadata"]["labels"]["liqo.io/remote-cluster-id"], "rome");
    assert_eq!(
        rb["roleRef"],
        serde_json::json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "liqo-remote-controlplane"})
    );
    assert_eq!(
        rb["subjects"],
        serde_json::json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "rome"}])
    );
    let rb = role_binding(&tenant, "liqo-remote-controlplane");
    assert!(binds_consumer(&rb, "rome", "liqo-remote-controlplane"));
    assert!(!binds_consumer(&rb, "naples", "liqo-remote-controlplane"));
    assert!(!binds_consumer(&rb, "rome", "other-remote-controlplane"));
}

/// Liqo finds the control-plane role by label, and its name follows the Helm release's nameOverride: a renamed
/// installation gets a binding to its own role, named the way Liqo names it.
#[test]
fn the_control_plane_role_is_the_one_labelled_for_liqo() {
    assert_eq!(control_plane_role_selector(), "app.kubernetes.io/name=remote-controlplane");
    let role = pick_control_plane_role(vec!["acme-remote-controlplane".into()]).unwrap();
    let tenant = attr::Tenant::of(&config(&[]));
    let rb = role_binding(&tenant, &role);
    assert_eq!(rb.metadata.name.as_deref(), Some("liqo-binding-acme-remote-controlplane"));
    assert_eq!(rb.role_ref.name, "acme-remote-controlplane");

    let (reason, hint) = pick_control_plane_role(vec![]).unwrap_err();
    assert!(reason.contains("No ClusterRole") && reason.contains("app.kubernetes.io/name=remote-controlplane"));
    assert!(hint.contains("Install or repair Liqo"), "{hint}");
    let (reason, hint) =
        pick_control_plane_role(vec!["b-remote-controlplane".into(), "a-remote-controlplane".into()]).unwrap_err();
    assert!(reason.starts_with("2 ClusterRoles") && reason.contains("a-remote-controlplane, b-remote-controlplane"));
    assert!(hint.contains("exactly one"), "{hint}");
}

#[test]
fn csr_asks_the_client_signer_for_the_requested_lifetime() {
    let name = csr_name("rome");
    assert!(name.starts_with("liqo-tenant-rome-") && name.len() == "liqo-tenant-rome-".len() + 8);
    assert_ne!(csr_name("rome"), csr_name("rome"));
    let csr = serde_json::to_value(csr_object(&name, "rome", "PEM", Duration::from_secs(3600))).unwrap();
    assert_eq!(csr["spec"]["signerName"], "kubernetes.io/kube-apiserver-client");
    assert_eq!(csr["spec"]["usages"], serde_json::json!(["digital signature", "key encipherment", "client auth"]));
    assert_eq!(csr["spec"]["expirationSeconds"], 3600);
    let labels = &csr["metadata"]["labels"];
    let selector: Vec<String> = csr_selector("rome").split(',').map(str::to_string).collect();
    for term in selector {
        let (k, v) = term.split_once('=').unwrap();
        assert_eq!(labels[k], v, "the selector finds the CSR");
    }
}

#[test]
fn csr_wait_reports_denial_and_returns_the_certificate() {
    use k8s_openapi::api::certificates::v1::{CertificateSigningRequestCondition, CertificateSigningRequestStatus};
    let mut csr = csr_object("n", "rome", "PEM", Duration::from_secs(3600));
    assert!(matches!(csr_issued(Some(&csr)), Verdict::Pending(s) if s.contains("not approved")));
    let cond = |t: &str| CertificateSigningRequestCondition {
        type_: t.into(),
        status: "True".into(),
        reason: Some("Policy".into()),
        ..Default::default()
    };
    csr.status = Some(CertificateSigningRequestStatus { conditions: Some(vec![cond("Denied")]), certificate: None });
    assert!(
        matches!(csr_issued(Some(&csr)), Verdict::Failed { reason, .. } if reason.contains("Denied") && reason.contains("Policy"))
    );
    csr.status = Some(CertificateSigningRequestStatus {
        conditions: Some(vec![cond("Approved")]),
        certificate: Some(ByteString(b"CERT".to_vec())),
    });
    assert!(matches!(csr_issued(Some(&csr)), Verdict::Ready(c) if c == b"CERT"));
}

#[test]
fn tenant_wait_needs_our_namespace() {
    let tenant = attr::Tenant::of(&config(&[]));
    let mut t = tenant_object(&tenant);
    assert!(matches!(tenant_ready(Some(&t), "liqo-tenant-rome", "rome", false), Verdict::Pending(_)));
    t.status =
        Some(liqo_schema::liqo::TenantStatus { tenant_namespace: Some("liqo-tenant-rome".into()), auth_params: None });
    assert!(matches!(tenant_ready(Some(&t), "liqo-tenant-rome", "rome", false), Verdict::Ready(())));
    t.status = Some(liqo_schema::liqo::TenantStatus { tenant_namespace: Some("elsewhere".into()), auth_params: None });
    assert!(
        matches!(tenant_ready(Some(&t), "liqo-tenant-rome", "rome", false), Verdict::Failed { reason, .. } if reason.contains("elsewhere"))
    );
}

/// Liqo's tenant controller returns before writing status.tenantNamespace for a Drained Tenant: only its
/// finalizer shows that Liqo has taken the Tenant, so that is what a Drained create waits for.
#[test]
fn drained_tenant_wait_needs_only_liqos_finalizer() {
    let tenant = attr::Tenant::of(&config(&[(attr::tenant_condition, Value::string("Drained"))]));
    let mut t = tenant_object(&tenant);
    assert!(
        matches!(tenant_ready(Some(&t), "liqo-tenant-rome", "rome", true), Verdict::Pending(s) if s.contains("tenant.liqo.io/finalizer"))
    );
    t.metadata.finalizers = Some(vec![labels::TENANT_FINALIZER.to_string()]);
    assert!(t.status.is_none(), "what Liqo leaves on a Drained Tenant: no status");
    assert!(matches!(tenant_ready(Some(&t), "liqo-tenant-rome", "rome", true), Verdict::Ready(())));
    assert!(matches!(tenant_ready(Some(&t), "liqo-tenant-rome", "rome", false), Verdict::Pending(_)));
}

#[test]
fn drain_waits_for_live_slices_only() {
    let mut rs = ResourceSlice::new("s1", Default::default());
    assert!(matches!(slices_drained(&[]), Verdict::Ready(())));
    assert!(matches!(slices_drained(std::slice::from_ref(&rs)), Verdict::Pending(s) if s.contains("s1")));
    rs.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()));
    assert!(matches!(slices_drained(&[rs]), Verdict::Ready(())));
}

/// What `liqoctl peer` leaves on the provider: a KeysExchange Tenant with the consumer's Ed25519 CSR (Liqo's
/// key type) and the certificate Liqo signed. Import records Liqo's CSR as `csr` and no certificate of ours;
/// the configuration generated from that state validates and plans no change.
#[test]
fn a_handshake_tenant_imports_with_liqos_csr_and_plans_empty() {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
    let mut params = rcgen::CertificateParams::default();
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::CommonName, "rome");
    dn.push(rcgen::DnType::OrganizationName, labels::CONTROL_PLANE_ORGANIZATION);
    params.distinguished_name = dn;
    let csr = params.serialize_request(&key).unwrap().pem().unwrap();
    let mut tenant = Tenant::new(
        "rome",
        TenantSpec {
            cluster_id: Some("rome".into()),
            authz_policy: Some(AUTHZ_POLICY_KEYS_EXCHANGE.into()),
            csr: Some(k8s_openapi::ByteString(csr.clone().into_bytes())),
            ..TenantSpec::default()
        },
    );
    tenant.status = Some(liqo_schema::liqo::TenantStatus {
        tenant_namespace: Some("liqo-tenant-rome".into()),
        auth_params: Some(liqo_schema::liqo::AuthParams {
            api_server: Some("https://milan:6443".into()),
            ..Default::default()
        }),
    });
    let imported = owned(
        handshake_state(&tenant, "liqo-tenant-rome", "rome", TENANT_CONDITION_ACTIVE.into()).value(),
        &Value::Null,
    );
    assert_eq!(imported.get(attr::csr).as_str(), Some(csr.as_str()));
    assert!(imported.get(attr::client_certificate).is_null() && imported.get(attr::cluster_ca_certificate).is_null());
    // What `-generate-config-out` writes: the state without its computed-only attributes.
    let mut generated = imported.clone();
    for computed in [
        attr::id,
        attr::client_certificate,
        attr::cluster_ca_certificate,
        attr::certificate_expires_at,
        attr::authz_policy,
    ] {
        generated.set(computed, Value::Null);
    }
    assert!(validate(&generated).is_empty(), "{:?}", validate(&generated));
    let p = Plan::run::<TenantResource>(&imported, imported.clone(), &generated);
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
    assert_eq!(p.planned, imported, "the generated configuration plans no change");
}

#[test]
fn import_ids_are_namespace_slash_consumer() {
    assert_eq!(parse_import_id("liqo-tenant-rome/rome").unwrap(), ["liqo-tenant-rome", "rome"]);
    for bad in ["rome", "a/b/c", "/rome", "ns/Rome", ""] {
        let e = parse_import_id(bad).unwrap_err();
        assert!(e.detail.contains("<tenant_namespace>/<consumer_cluster_id>"), "{bad}: {e:?}");
    }
}

#[test]
fn api_server_urls() {
    use crate::validate::check_api_server_url;
    for ok in ["https://10.0.0.1:6443", "https://api.example.com", "https://[::1]:6443", "https://h:443/prefix"] {
        assert_eq!(check_api_server_url(ok), Ok(()), "{ok}");
    }
    for bad in [
        "10.0.0.1:6443",
        "http://h:6443",
        "https://",
        "https://h:99999",
        "https://h:x",
        "https://u@h:1",
        "https://[::1",
        "https://::1:6443",
    ] {
        assert!(check_api_server_url(bad).is_err(), "{bad}");
    }
}

/// A cluster marked `permanently_unreachable` (its API server at port 1, where nobody listens, would fail any
/// request): refresh keeps the prior state with a warning, destroy drops it with the list of what stays there and
/// the cleanup command, and neither waits for the reach budget (nothing is contacted).
#[tokio::test]
async fn a_cluster_gone_for_good_keeps_its_state_at_refresh_and_leaves_it_on_destroy_untouched() {
    use crate::cluster_api::Gone;
    use crate::protocol::{ApplyRequest, Ctx};
    let cluster = Arc::new(ClusterApi::default());
    cluster.set_access(
        crate::cluster_api::Access::Ready {
            config: Box::new(kube::Config::new("https://127.0.0.1:1".parse().unwrap())),
            client: Default::default(),
            facts: Default::default(),
        },
        None,
    );
    cluster.set_gone_for_good(
        Gone { this_cluster: true, peers: Default::default() },
        "https://127.0.0.1:1 (kubeconfig milan)".into(),
    );
    let resource = Driven::<TenantResource>::managed(cluster);
    let ctx = Ctx { cancel: tokio_util::sync::CancellationToken::new() };
    let prior = applied_state(&in_days(30));
    let started = std::time::Instant::now();

    let read = resource.read(&ctx, prior.clone(), Vec::new()).await;
    assert_eq!(read.new_state, prior);
    let warning = read.diagnostics.iter().next().expect("a warning");
    assert!(
        !read.diagnostics.has_errors() && warning.summary.contains("marked permanently unreachable"),
        "{warning:?}"
    );

    let request = ApplyRequest { prior, planned: Value::Null, config: Value::Null, private: Vec::new() };
    let destroyed = resource.apply(&ctx, request).await;
    assert!(destroyed.new_state.is_null(), "the resource leaves the state");
    assert!(!destroyed.diagnostics.has_errors(), "{:?}", destroyed.diagnostics);
    let warning = destroyed.diagnostics.iter().next().expect("a warning");
    for needle in [
        "https://127.0.0.1:1 (kubeconfig milan)",
        "the Tenant",
        "kubectl annotate foreignclusters rome",
        "kubectl delete namespace liqo-tenant-rome",
        "certificatesigningrequests -l liqo.io/remote-cluster-id=rome",
    ] {
        assert!(warning.detail.contains(needle), "missing {needle:?} in {}", warning.detail);
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "nothing was contacted: {:?}", started.elapsed());
}

/// Liqo's webhook counts Tenants in its cache: its "already exists" denial for a namespace the API server shows
/// empty is retried (the cache catches up), and one for a namespace that does hold a Tenant is not.
#[tokio::test]
async fn a_denial_from_liqos_stale_cache_is_retried() {
    const DENIED: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"admission webhook \"tenant.validate.liqo.io\" denied the request: a Tenant already exists in the tenant namespace","reason":"Forbidden","code":403}"#;
    const NONE: &str =
        r#"{"apiVersion":"authentication.liqo.io/v1beta1","kind":"TenantList","metadata":{},"items":[]}"#;
    const ONE: &str = r#"{"apiVersion":"authentication.liqo.io/v1beta1","kind":"TenantList","metadata":{},"items":[{"apiVersion":"authentication.liqo.io/v1beta1","kind":"Tenant","metadata":{"name":"other","namespace":"liqo-tenant-rome"},"spec":{}}]}"#;
    const TENANT: &str = r#"{"apiVersion":"authentication.liqo.io/v1beta1","kind":"Tenant","metadata":{"name":"rome","namespace":"liqo-tenant-rome"},"spec":{}}"#;
    let ctx = crate::protocol::Ctx { cancel: tokio_util::sync::CancellationToken::new() };
    let op = crate::resources::lifecycle::Op {
        ctx: &ctx,
        deadline: crate::resources::lifecycle::Deadline::after(Duration::from_secs(60)),
    };
    let tenant = attr::Tenant::of(&config(&[]));
    let tenants = |url: &str| {
        let client = crate::kube::client::build(kube::Config::new(url.parse().unwrap())).unwrap();
        kube::Api::<liqo_schema::liqo::Tenant>::namespaced(client, "liqo-tenant-rome")
    };

    let (url, seen) = crate::kube::tests::fake_api_server(vec![(403, DENIED), (200, NONE), (200, TENANT)]).await;
    TenantResource::apply_tenant(&op, &tenants(&url), &tenant).await.expect("applied once Liqo's cache caught up");
    let seen = seen.lock().unwrap().clone();
    assert!(seen[0].starts_with("PATCH") && seen[1].starts_with("GET") && seen[2].starts_with("PATCH"), "{seen:?}");

    let (url, seen) = crate::kube::tests::fake_api_server(vec![(403, DENIED), (200, ONE)]).await;
    let err = TenantResource::apply_tenant(&op, &tenants(&url), &tenant).await.unwrap_err();
    assert!(err.to_string().contains("forbidden") || format!("{err:?}").contains("already exists"), "{err:?}");
    assert_eq!(seen.lock().unwrap().len(), 2, "a Tenant the API server shows is a real conflict: not retried");
}

fn slice_set(names: &[&str]) -> Value {
    Value::Set(names.iter().map(|n| Value::string(*n)).collect())
}

/// The provider's copy of one of rome's ResourceSlices, with the cordon annotations given.
fn slice(name: &str, annotations: &[(&str, &str)]) -> ResourceSlice {
    let mut s = ResourceSlice::new(name, Default::default());
    s.metadata.annotations = Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    s
}

/// A tenant being created has no slices yet: a set of them is refused at plan, naming the attribute and the
/// two-step way; an existing tenant plans the change in place.
#[test]
fn slices_are_cordoned_only_on_an_existing_tenant() {
    let cfg = config(&[(attr::cordoned_resource_slices, slice_set(&["rome-a"]))]);
    let p = Plan::run::<TenantResource>(&Value::Null, cfg.clone(), &cfg);
    assert_eq!(error_paths(&p.diagnostics), vec!["cordoned_resource_slices"]);
    assert!(p.diagnostics.iter().any(|d| d.detail.contains("Apply without `cordoned_resource_slices` first")));
    let empty = config(&[(attr::cordoned_resource_slices, slice_set(&[]))]);
    assert!(error_paths(&Plan::run::<TenantResource>(&Value::Null, empty.clone(), &empty).diagnostics).is_empty());

    let prior = applied_state(&in_days(300));
    let mut proposed = prior.clone();
    proposed.set(attr::cordoned_resource_slices, slice_set(&["rome-a"]));
    let p = Plan::run::<TenantResource>(&prior, proposed.clone(), &cfg);
    assert!(error_paths(&p.diagnostics).is_empty(), "{:?}", p.diagnostics);
    assert!(p.replace.is_empty(), "a cordon is updated in place");
    assert_eq!(p.planned.get(attr::cordoned_resource_slices), &slice_set(&["rome-a"]));
    assert!(!p.planned.get(attr::client_certificate).is_unknown(), "a cordon signs nothing");
}

/// Liqo's rule for a cordon annotation, and what a change of the set does: cordon what is wanted, uncordon only
/// what this resource answers for.
#[test]
fn cordon_changes_follow_the_set_and_liqos_annotation_rule() {
    assert_eq!(slice("a", &[(labels::CORDON, "true")]).cordons(), (true, false));
    for off in ["false", "False", "0"] {
        assert_eq!(slice("a", &[(labels::CORDON, off)]).cordons(), (false, false), "{off} is Liqo's no");
    }
    assert_eq!(slice("a", &[(labels::CORDON_TENANT, "true")]).cordons(), (false, true));

    let slices = [slice("a", &[]), slice("b", &[(labels::CORDON, "true")]), slice("c", &[(labels::CORDON, "true")])];
    let set = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<std::collections::BTreeSet<_>>();
    // The set is given: a and nothing else.
    let changes = cordon_changes(&slices, &set(&["a"]), &set(&["a", "b", "c"]));
    assert_eq!(changes, vec![("a".into(), true), ("b".into(), false), ("c".into(), false)]);
    // The set was taken away: only what it named is uncordoned (c was cordoned with liqoctl).
    assert_eq!(cordon_changes(&slices, &set(&[]), &set(&["b"])), vec![("b".into(), false)]);
    // Nothing to change.
    assert!(cordon_changes(&slices, &set(&["b", "c"]), &set(&["a", "b", "c"])).is_empty());

    // Read: the cordoned slices, and a named slice that is gone (not drift).
    let read = cordoned_read(&slices, &set(&["a", "gone"]));
    assert_eq!(read, set(&["b", "c", "gone"]));
}

/// The wait ends once each changed slice's Quota says what Liqo's rule says for the slice; a tenant's cordon keeps
/// the Quota cordoned; a slice without a Quota has nothing to wait for.
#[test]
fn quotas_follow_the_cordons() {
    let quota = |slice: &str, cordoned: Option<bool>| {
        let mut q = Quota::new(&format!("{slice}-0a1b2c"), QuotaSpec { user: None, cordoned });
        q.metadata.owner_references = Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "authentication.liqo.io/v1beta1".into(),
            kind: "ResourceSlice".into(),
            name: slice.into(),
            uid: "uid".into(),
            ..Default::default()
        }]);
        q
    };
    let slices = [slice("a", &[(labels::CORDON, "true")]), slice("b", &[(labels::CORDON_TENANT, "true")])];
    let changes = vec![("a".to_string(), true), ("b".to_string(), false)];
    let lagging = quotas_follow(&[quota("a", None), quota("b", Some(true))], &changes, &slices);
    let Verdict::Pending(m) = lagging else { panic!("a Quota that lags is waited for") };
    assert!(m.contains("ResourceSlice a: cordoned false, true expected"), "{m}");
    assert!(matches!(
        quotas_follow(&[quota("a", Some(true)), quota("b", Some(true))], &changes, &slices),
        Verdict::Ready(())
    ));
    assert!(matches!(quotas_follow(&[], &changes, &slices), Verdict::Ready(())), "no Quota yet: nothing enforced");
}
