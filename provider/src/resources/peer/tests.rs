use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Node, Secret};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use liqo_schema::liqo::{
    Connection, LiqoCondition, ResourceSlice, ResourceSliceStatus, VirtualNode, VirtualNodeSpec, VirtualNodeStatus,
    labels,
};
use liqo_schema::tf::{AttributePath, Diagnostics, Nesting, Severity, Value};

use super::PeerResource;
use super::kubeconfig::{KubeconfigParts, PublicParts, assemble_kubeconfig, key_for_certificate, public_parts};
use super::objects::{Credentials, minted_by_liqo, owning_identity};
use super::observed::observed_state;
use super::schema::{Flow, ISSUED, attr};
use super::status::{OnAuthDenial, slice_check};
use crate::cluster_api::ClusterApi;
use crate::crypto;
use crate::kube::{OpError, Verdict};
use crate::resources::lifecycle::{Driven, Plan, TIMEOUTS};
use crate::resources::shared::control_plane_key;
use crate::resources::shared::virtual_node_wait::{network_note, node_check, virtual_node_check};
use secrecy::ExposeSecret;

crate::resources::lifecycle::test_helpers!(super::PeerResource, 2);

fn config() -> Value {
    Value::object([
        (attr::tenant_namespace, Value::string("liqo-tenant-milan")),
        (attr::provider_cluster_id, Value::string("milan")),
        (attr::provider_tenant_namespace, Value::string("liqo-tenant-rome")),
        (attr::api_server_url, Value::string("https://milan.example.com:6443")),
        (attr::proxy_url, Value::Null),
        (attr::cluster_ca_certificate, Value::string(&issued().ca)),
        (attr::client_certificate, Value::string(&issued().cert)),
        (attr::client_key_secret, Value::string("controlplane-key-milan")),
        (attr::kubeconfig_wo, Value::Null),
        (attr::kubeconfig_wo_version, Value::Null),
        (attr::resources, Value::string_map([("cpu", "4"), ("memory", "8Gi"), ("pods", "110")])),
        (attr::class, Value::Null),
        (attr::create_virtual_node, Value::Null),
        (attr::resource_slice_name, Value::Null),
        (attr::wait_for_virtual_node, Value::Null),
        (attr::id, Value::Null),
        (attr::virtual_node_name, Value::Null),
        (attr::accepted_resources, Value::Null),
        (TIMEOUTS, Value::Null),
    ])
}

/// A CA, a client certificate it signed and the client's key, made once per test process.
struct Issued {
    ca: String,
    cert: String,
    key: String,
}

fn issued() -> &'static Issued {
    static ISSUED: std::sync::OnceLock<Issued> = std::sync::OnceLock::new();
    ISSUED.get_or_init(|| {
        let ca_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, &ca_key);
        let client = crypto::new_client_key("rome", "liqo.io").unwrap();
        let key = rcgen::KeyPair::from_pem(&client.key_pem).unwrap();
        let cert = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap().signed_by(&key, &issuer).unwrap();
        Issued { ca: ca.pem(), cert: cert.pem(), key: client.key_pem.to_string() }
    })
}

fn key_secret(key_pem: &str) -> Secret {
    Secret {
        data: Some(BTreeMap::from([(
            control_plane_key::PRIVATE_KEY.to_string(),
            ByteString(key_pem.as_bytes().to_vec()),
        )])),
        ..Default::default()
    }
}

fn error_paths(d: &Diagnostics) -> Vec<String> {
    d.iter().filter(|d| d.severity == Severity::Error).map(|d| d.attribute.as_ref().unwrap().to_string()).collect()
}

fn plan(prior: &Value, proposed: &Value, config: &Value) -> (Value, Vec<AttributePath>) {
    let p = Plan::run::<PeerResource>(prior, proposed.clone(), config);
    assert!(p.diagnostics.is_empty());
    (p.planned, p.replace)
}

fn planned_peer() -> attr::Peer {
    let (planned, _) = plan(&Value::Null, &config(), &config());
    attr::Peer::of(&planned)
}

/// The identity Secret this provider writes for `peer`, from the test's issued certificate and key.
fn our_identity_secret(peer: &attr::Peer) -> Secret {
    peer.identity_secret(&assemble_kubeconfig(&KubeconfigParts {
        server: "https://milan.example.com:6443",
        proxy_url: None,
        ca_pem: &issued().ca,
        cert_pem: &issued().cert,
        key_pem: &issued().key,
        cluster_name: "milan",
        namespace: "liqo-tenant-rome",
    }))
}

fn cond(t: &str, s: &str) -> LiqoCondition {
    LiqoCondition { type_: t.into(), status: s.into(), ..Default::default() }
}

fn slice_with(conditions: Vec<LiqoCondition>, granted: &[(&str, &str)]) -> ResourceSlice {
    let peer = planned_peer();
    let mut rs = peer.resource_slice();
    rs.status = Some(ResourceSliceStatus {
        conditions: Some(conditions),
        resources: Some(granted.iter().map(|(k, v)| (k.to_string(), Quantity(v.to_string()))).collect()),
        ..Default::default()
    });
    rs
}

#[test]
fn schema_describes_everything_and_keeps_the_brought_kubeconfig_out_of_state() {
    let s = schema();
    for a in &s.block.attributes {
        assert!(!a.description.is_empty(), "{} has no description", a.name);
    }
    assert!(s.block.attribute("kubeconfig").is_none(), "no key passes through state");
    let wo = s.block.attribute("kubeconfig_wo").unwrap();
    assert!(wo.write_only && wo.sensitive && wo.optional);
    for public in ISSUED {
        let a = s.block.attribute(public).unwrap();
        assert!(a.optional && !a.sensitive && !a.write_only, "{public}");
    }
    for out in [attr::id, attr::virtual_node_name, attr::accepted_resources] {
        let a = s.block.attribute(out).unwrap();
        assert!(a.computed && !a.optional && !a.required, "{out} must be computed only");
    }
    for input in [attr::tenant_namespace, attr::provider_cluster_id, attr::provider_tenant_namespace] {
        assert!(crate::attributes::shown_required(s.block.attribute(input).unwrap()), "{input} must be required");
    }
    assert!(s.block.blocks.iter().any(|b| b.type_name == "timeouts" && b.nesting == Nesting::Single));
}

#[test]
fn validation_names_each_bad_attribute() {
    let mut c = config();
    c.set(attr::tenant_namespace, Value::string("Tenant_NS"));
    c.set(attr::provider_cluster_id, Value::string("-milan"));
    c.set(attr::provider_tenant_namespace, Value::Unknown);
    c.set(attr::client_certificate, Value::string("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"));
    c.set(attr::resource_slice_name, Value::string("a.b"));
    c.set(attr::class, Value::string(""));
    c.set(
        attr::resources,
        Value::Map(BTreeMap::from([
            ("cpu".to_string(), Value::string("-1")),
            ("memory".to_string(), Value::string("8GB")),
            ("pods".to_string(), Value::Unknown),
            ("bad key!".to_string(), Value::string("1")),
            ("nvidia.com/gpu".to_string(), Value::string("2")),
        ])),
    );
    c.set(TIMEOUTS, Value::object([("create", Value::string("10 minutes"))]));
    let d = validate(&c);
    assert_eq!(
        error_paths(&d),
        [
            "tenant_namespace",
            "provider_cluster_id",
            r#"resources["bad key!"]"#,
            r#"resources["cpu"]"#,
            r#"resources["memory"]"#,
            "resource_slice_name",
            "class",
            "client_certificate",
            "timeouts.create",
        ]
    );
    let cert = d.iter().find(|d| d.attribute.as_ref().unwrap().to_string() == "client_certificate").unwrap();
    assert!(cert.detail.contains("PRIVATE KEY") && !cert.detail.contains("AAAA"), "{}", cert.detail);
    assert!(validate(&config()).is_empty());
}

/// The provider requires its required arguments itself when a create is applied (Terraform's schema calls them
/// optional), not at validation: each missing one is an error on it; an unknown one is not missing.
#[test]
fn each_missing_required_argument_is_named() {
    let mut c = config();
    c.set(attr::tenant_namespace, Value::Null);
    c.set(attr::provider_tenant_namespace, Value::Null);
    c.set(attr::provider_cluster_id, Value::Unknown);
    assert!(validate(&c).is_empty(), "a destroy validates the configuration too: a null there is no error");
    let mut v = crate::validate::Validator::new(&c);
    v.required(&attr::declared());
    let d = v.finish();
    assert_eq!(error_paths(&d), ["tenant_namespace", "provider_tenant_namespace"]);
    assert!(d.iter().all(|d| d.summary.starts_with("Missing required argument `")), "{d:?}");
    assert!(d.iter().all(|d| d.detail.contains("Set `")), "{d:?}");
}

/// Liqo's Terraform tutorial's liqo_peer (the Go provider 0.0.x) and a 0.1.x one: one error each, on the first
/// name of the old provider, listing every such name with what replaces it and pointing to the upgrade guide;
/// no "missing required argument" beside it.
#[test]
fn a_block_of_the_go_provider_gets_one_error_naming_the_way_to_1x() {
    let tutorial = Value::object([
        (attr::cluster_id, Value::Unknown),
        (attr::cluster_name, Value::Unknown),
        (attr::cluster_authurl, Value::Unknown),
        (attr::cluster_token, Value::Unknown),
    ]);
    let d = validate(&tutorial);
    assert_eq!(error_paths(&d), ["cluster_id"]);
    let e = &d.0[0];
    for name in ["cluster_id", "cluster_name", "cluster_authurl", "cluster_token"] {
        assert!(e.summary.contains(&format!("`{name}`")), "{}", e.summary);
    }
    assert!(e.summary.starts_with("liqo_peer of the Go provider 0.x"), "{}", e.summary);
    assert!(e.detail.contains("- `cluster_authurl`: `api_server_url`"), "{}", e.detail);
    assert!(e.detail.contains("docs/guides/upgrading-from-the-go-provider.md"), "{}", e.detail);
    let v010 = Value::object([
        (attr::remote_kubeconfig, Value::string("~/.kube/milan")),
        (attr::cpu, Value::string("4")),
        (attr::create_virtual_node, Value::Bool(true)),
    ]);
    let d = validate(&v010);
    assert_eq!(error_paths(&d), ["remote_kubeconfig"]);
    assert!(d.0[0].detail.contains("- `cpu`: `resources = {"), "{}", d.0[0].detail);
    assert!(!d.0[0].summary.contains("create_virtual_node"), "a 1.x name is not listed: {}", d.0[0].summary);
}

/// One flow or the other, complete; each mistake names the attribute to fix.
#[test]
fn credentials_are_one_complete_flow() {
    let brought = |version: Value, kubeconfig: &str| {
        let mut c = config();
        for a in ISSUED {
            c.set(a, Value::Null);
        }
        c.set(attr::kubeconfig_wo, Value::string(kubeconfig));
        c.set(attr::kubeconfig_wo_version, version);
        c
    };
    let good = "clusters: [{name: milan}]\nusers: [{name: eks, user: {token: SECRET-TOKEN}}]\n";
    assert!(validate(&brought(Value::Number(1.0), good)).is_empty());
    assert_eq!(error_paths(&validate(&brought(Value::Null, good))), [attr::kubeconfig_wo_version]);
    let d = validate(&brought(Value::Number(1.0), "clusters: []\nusers: [{user: {token: SECRET-TOKEN}}]"));
    assert_eq!(error_paths(&d), [attr::kubeconfig_wo]);
    assert!(d.0[0].detail.contains("no `clusters` entry") && !d.0[0].detail.contains("SECRET"), "never echoed");

    let mut both = config();
    both.set(attr::kubeconfig_wo, Value::string(good));
    assert_eq!(error_paths(&validate(&both)), [attr::kubeconfig_wo]);
    // Both flows under opposite conditions on a variable: unknown to `terraform validate`, not a conflict yet.
    let mut conditional = config();
    conditional.set(attr::kubeconfig_wo, Value::Unknown);
    conditional.set(attr::kubeconfig_wo_version, Value::Unknown);
    for a in ISSUED {
        conditional.set(a, Value::Unknown);
    }
    assert!(validate(&conditional).is_empty(), "{:?}", validate(&conditional));
    // One flow known to be set, the other possibly: a conflict.
    let mut one_known = conditional.clone();
    one_known.set(attr::kubeconfig_wo, Value::string(good));
    assert_eq!(error_paths(&validate(&one_known)), [attr::kubeconfig_wo]);
    let mut none = config();
    for a in ISSUED {
        none.set(a, Value::Null);
    }
    assert!(validate(&none).is_empty(), "no credentials keep the identity Liqo minted");
    let mut version_only = none.clone();
    version_only.set(attr::kubeconfig_wo_version, Value::Number(1.0));
    assert_eq!(error_paths(&validate(&version_only)), [attr::kubeconfig_wo]);
    let (planned, _) = plan(&Value::Null, &none, &none);
    assert!(matches!(attr::Peer::of(&planned).credentials(&none).unwrap(), Credentials::Liqo));
    let mut partial = config();
    partial.set(attr::client_key_secret, Value::Null);
    partial.set(attr::api_server_url, Value::Unknown);
    assert_eq!(error_paths(&validate(&partial)), [attr::client_key_secret]);
    let mut bad = config();
    bad.set(attr::api_server_url, Value::string("http://milan:6443"));
    bad.set(attr::cluster_ca_certificate, Value::string(format!("{}{}", issued().ca, issued().key)));
    assert_eq!(error_paths(&validate(&bad)), [attr::api_server_url, attr::cluster_ca_certificate]);

    // A proxy goes with the issued-certificate flow only, and must be a proxy URL.
    let mut proxied = config();
    proxied.set(attr::proxy_url, Value::string("http://127.0.0.1:3128"));
    assert!(validate(&proxied).is_empty(), "{:?}", validate(&proxied));
    let mut proxy_alone = none.clone();
    proxy_alone.set(attr::proxy_url, Value::string("http://127.0.0.1:3128"));
    assert_eq!(error_paths(&validate(&proxy_alone)), [attr::proxy_url]);
    let mut bad_proxy = config();
    bad_proxy.set(attr::proxy_url, Value::string("127.0.0.1:3128"));
    assert_eq!(error_paths(&validate(&bad_proxy)), [attr::proxy_url]);
}

/// Validation, apply and read take the flow from one decision: a configuration's `kubeconfig_wo`, else the issued
/// attributes, else the version a plan or state keeps of a brought kubeconfig; nothing keeps Liqo's identity.
#[test]
fn one_decision_names_the_flow_of_a_configuration_plan_or_state() {
    assert_eq!(Flow::of(&config()), Flow::Issued);
    let mut none = config();
    for a in ISSUED {
        none.set(a, Value::Null);
    }
    assert_eq!(Flow::of(&none), Flow::Minted);
    let mut partly_known = none.clone();
    partly_known.set(attr::api_server_url, Value::Unknown);
    assert_eq!(Flow::of(&partly_known), Flow::Issued, "an unknown value counts as set");
    let mut brought = none.clone();
    brought.set(attr::kubeconfig_wo, Value::string("clusters: [{name: milan}]\nusers: [{name: u}]\n"));
    brought.set(attr::kubeconfig_wo_version, Value::Number(1.0));
    assert_eq!(Flow::of(&brought), Flow::Brought);
    let mut state = brought.clone();
    state.set(attr::kubeconfig_wo, Value::Null);
    assert_eq!(Flow::of(&state), Flow::Brought, "a plan or state keeps only the version");
    let mut versioned = config();
    versioned.set(attr::kubeconfig_wo_version, Value::Number(1.0));
    assert_eq!(Flow::of(&versioned), Flow::Issued, "a version beside the issued attributes versions nothing");
    assert!(validate(&versioned).is_empty());
}

/// The assembled kubeconfig has Liqo's shape and loads in kube-rs with the P-256 key; its public parts read
/// back for drift detection, the key never does.
#[tokio::test]
async fn the_identity_kubeconfig_joins_the_public_parts_to_the_local_key() {
    let peer = planned_peer();
    let credentials = peer.credentials(&config()).unwrap();
    let Credentials::Issued { server, ca_pem, cert_pem, .. } = &credentials else { panic!("issued flow") };
    let key = key_for_certificate(Some(&key_secret(&issued().key)), "Secret liqo-tenant-milan/k", cert_pem).unwrap();
    let yaml = assemble_kubeconfig(&KubeconfigParts {
        server,
        proxy_url: Some("http://proxy.example.com:8118"),
        ca_pem,
        cert_pem,
        key_pem: &key,
        cluster_name: "milan",
        namespace: "liqo-tenant-rome",
    });
    let kc = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    assert_eq!(kc.current_context.as_deref(), Some("default-context"));
    let context = kc.contexts[0].context.as_ref().unwrap();
    assert_eq!((context.cluster.as_str(), context.namespace.as_deref()), ("milan", Some("liqo-tenant-rome")));
    let config = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await.unwrap();
    assert_eq!(config.default_namespace, "liqo-tenant-rome");
    // Building the client loads the identity into rustls: this fails if rustls rejects the key format.
    assert_eq!(
        config.proxy_url.as_ref().map(|u| u.to_string()).as_deref(),
        Some("http://proxy.example.com:8118/"),
        "kube reads the proxy"
    );
    kube::Client::try_from(config).expect("rustls accepts the P-256 PKCS#8 client key");
    assert_eq!(
        public_parts(&yaml),
        Some(PublicParts {
            server: server.clone(),
            ca_pem: ca_pem.clone(),
            cert_pem: cert_pem.clone(),
            proxy_url: Some("http://proxy.example.com:8118".into())
        })
    );

    // Read reflects those parts and never the key.
    let prior = peer.state(None);
    let rs = peer.resource_slice();
    let s = observed_state(&prior, &rs, &peer.identity_secret(&yaml));
    for a in ISSUED {
        assert_eq!(s.get(a), prior.get(a), "{a}");
    }
    assert!(!format!("{s:?}").contains(issued().key.lines().nth(1).unwrap()));
    // An identity Secret edited to another certificate shows as drift.
    let edited = yaml.replace(&STANDARD.encode(cert_pem.as_bytes()), &STANDARD.encode(issued().ca.as_bytes()));
    let s = observed_state(&prior, &rs, &peer.identity_secret(&edited));
    assert_eq!(s.get(attr::client_certificate).as_str(), Some(issued().ca.as_str()));
}

#[test]
fn the_key_must_be_the_certified_one() {
    let object = "Secret liqo-tenant-milan/controlplane-key-milan";
    let cert = &issued().cert;
    let other = crypto::new_client_key("rome", "liqo.io").unwrap();
    let reason = |r: Result<zeroize::Zeroizing<String>, OpError>| match r {
        Err(OpError::Failed { object: o, reason, .. }) => {
            assert_eq!(o, object);
            reason
        }
        _ => panic!("expected a failure"),
    };
    assert!(reason(key_for_certificate(None, object, cert)).contains("does not exist"));
    let mismatch = reason(key_for_certificate(Some(&key_secret(&other.key_pem)), object, cert));
    assert!(mismatch.contains("another key"), "{mismatch}");
    assert!(!mismatch.contains(other.key_pem.lines().nth(1).unwrap()));
    assert!(reason(key_for_certificate(Some(&Secret::default()), object, cert)).contains("privateKey"));
    assert!(key_for_certificate(Some(&key_secret(&issued().key)), object, cert).is_ok());
}

/// A brought kubeconfig comes from the configuration only and never shows in Debug output.
#[test]
fn a_brought_kubeconfig_comes_from_the_configuration() {
    let (planned, _) = plan(&Value::Null, &config(), &config());
    let mut cfg = config();
    cfg.set(attr::kubeconfig_wo, Value::string("clusters: [{}]\nusers: [{user: {token: SECRET-TOKEN}}]"));
    let credentials = attr::Peer::of(&planned).credentials(&cfg).unwrap();
    assert!(matches!(&credentials, Credentials::Brought(k) if k.expose_secret().contains("SECRET-TOKEN")));
    assert!(!format!("{credentials:?}").contains("SECRET-TOKEN"));
}

/// Apply validates again, every value known: two flows that plan could not tell apart (unknown values) fail
/// there, before the cluster is reached (this one has no address: reaching it would fail otherwise).
#[tokio::test]
async fn apply_refuses_a_conflict_that_plan_could_not_see() {
    let resource = Driven::<PeerResource>::managed(Arc::new(ClusterApi::default()));
    let mut both = config();
    both.set(attr::kubeconfig_wo, Value::string("clusters: [{name: milan}]\nusers: [{name: u, user: {token: T}}]\n"));
    both.set(attr::kubeconfig_wo_version, Value::Number(1.0));
    let (planned, _) = plan(&Value::Null, &both, &both);
    let ctx = crate::protocol::Ctx { cancel: tokio_util::sync::CancellationToken::new() };
    let request = crate::protocol::ApplyRequest { prior: Value::Null, planned, config: both, private: Vec::new() };
    let response = resource.apply(&ctx, request).await;
    assert!(response.new_state.is_null());
    let summaries: Vec<&str> = response.diagnostics.0.iter().map(|d| d.summary.as_str()).collect();
    assert_eq!(summaries, ["Conflicting credentials for liqo_peer"]);
}

#[test]
fn upgrading_0_2_0_state_drops_the_kubeconfig() {
    let resource = Driven::<PeerResource>::managed(Arc::new(ClusterApi::default()));
    let old =
        serde_json::json!({"id": "liqo-tenant-milan/milan", "kubeconfig": "users: [{user: {client-key-data: S0VZ}}]"});
    let upgraded = resource.upgrade(0, old).unwrap();
    assert_eq!(upgraded, serde_json::json!({"id": "liqo-tenant-milan/milan"}));
    assert!(resource.upgrade(2, upgraded).is_err());
}

#[test]
fn create_plan_fills_defaults_and_leaves_the_grant_unknown() {
    let (planned, replace) = plan(&Value::Null, &config(), &config());
    assert!(replace.is_empty());
    assert_eq!(planned.get(attr::class), &Value::string("default"));
    assert_eq!(planned.get(attr::create_virtual_node), &Value::Bool(true));
    assert_eq!(planned.get(attr::wait_for_virtual_node), &Value::Bool(true));
    assert_eq!(planned.get(attr::resource_slice_name), &Value::string("milan"));
    assert_eq!(planned.get(attr::id), &Value::string("liqo-tenant-milan/milan"));
    assert_eq!(planned.get(attr::virtual_node_name), &Value::string("milan"));
    assert!(planned.get(attr::accepted_resources).is_unknown());

    // Cross-resource references unknown at plan time stay unknown, without errors.
    let mut c = config();
    c.set(attr::provider_cluster_id, Value::Unknown);
    let (planned, _) = plan(&Value::Null, &c, &c);
    assert!(planned.get(attr::resource_slice_name).is_unknown());
    assert!(planned.get(attr::id).is_unknown());
    assert!(planned.get(attr::virtual_node_name).is_unknown());
}

#[test]
fn resizing_updates_in_place_and_renaming_replaces() {
    let peer = planned_peer();
    // As the driver completes it (`id`, `timeouts`).
    let prior = owned(peer.state(Some(&BTreeMap::from([("cpu".to_string(), "4".to_string())]))), &Value::Null);

    // Same config: nothing changes, the grant is kept.
    let (again, replace) = plan(&prior, &prior, &config());
    assert!(replace.is_empty());
    assert_eq!(again, prior);

    // Resize: in place, grant unknown until the provider answers.
    let mut proposed = prior.clone();
    proposed.set(attr::resources, Value::string_map([("cpu", "8")]));
    let mut cfg = config();
    cfg.set(attr::resources, proposed.get(attr::resources).clone());
    let (planned, replace) = plan(&prior, &proposed, &cfg);
    assert!(replace.is_empty());
    assert!(planned.get(attr::accepted_resources).is_unknown());

    // A renewed certificate, or a new kubeconfig version: in place.
    for (attr, value) in
        [(attr::client_certificate, Value::string("renewed")), (attr::kubeconfig_wo_version, Value::Number(2.0))]
    {
        let mut proposed = prior.clone();
        proposed.set(attr, value);
        assert!(plan(&prior, &proposed, &config()).1.is_empty(), "{attr}");
    }

    for (attr, value) in [
        (attr::resource_slice_name, Value::string("other")),
        (attr::class, Value::string("gold")),
        (attr::create_virtual_node, Value::Bool(false)),
        (attr::provider_tenant_namespace, Value::string("elsewhere")),
    ] {
        let mut proposed = prior.clone();
        proposed.set(attr, value.clone());
        let mut cfg = config();
        cfg.set(attr, value);
        let (_, replace) = plan(&prior, &proposed, &cfg);
        assert_eq!(replace, vec![AttributePath::root(attr)], "{attr}");
    }

    // A value that vanished from the cluster (null after refresh) is re-asserted in place.
    let mut drifted = prior.clone();
    drifted.set(attr::create_virtual_node, Value::Null);
    let (planned, replace) = plan(&drifted, &prior, &config());
    assert!(replace.is_empty());
    assert_eq!(planned.get(attr::create_virtual_node), &Value::Bool(true));
    assert_eq!(
        planned.get(attr::accepted_resources),
        prior.get(attr::accepted_resources),
        "an in-place repair keeps the grant"
    );
}

#[test]
fn objects_carry_liqo_labels_and_never_claim_liqo_fields() {
    let peer = planned_peer();
    let secret = serde_json::to_value(peer.identity_secret("apiVersion: v1\n")).unwrap();
    assert_eq!(secret["metadata"]["name"], "kubeconfig-controlplane-milan");
    assert_eq!(secret["metadata"]["namespace"], "liqo-tenant-milan");
    assert_eq!(secret["metadata"]["labels"]["liqo.io/identity-type"], "ControlPlane");
    assert_eq!(secret["metadata"]["labels"]["liqo.io/remote-cluster-id"], "milan");
    assert_eq!(secret["metadata"]["annotations"]["liqo.io/remote-tenant-namespace"], "liqo-tenant-rome");
    assert!(secret["data"]["kubeconfig"].is_string());

    let rs = serde_json::to_value(peer.resource_slice()).unwrap();
    assert_eq!(rs["apiVersion"], "authentication.liqo.io/v1beta1");
    assert_eq!(rs["kind"], "ResourceSlice");
    assert_eq!(rs["metadata"]["name"], "milan");
    let l = &rs["metadata"]["labels"];
    assert_eq!(
        (l["liqo.io/remote-cluster-id"].as_str(), l["liqo.io/remoteID"].as_str()),
        (Some("milan"), Some("milan"))
    );
    assert_eq!(l["liqo.io/replication"], "true");
    assert_eq!(rs["metadata"]["annotations"]["liqo.io/create-virtual-node"], "true");
    assert_eq!(
        rs["spec"],
        serde_json::json!({
            "class": "default",
            "providerClusterID": "milan",
            "resources": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        })
    );
    assert!(rs.get("status").is_none());

    let no_vn = attr::Peer { create_virtual_node: Some(false), resources: None, ..peer };
    let rs = serde_json::to_value(no_vn.resource_slice()).unwrap();
    assert_eq!(rs["metadata"]["annotations"]["liqo.io/create-virtual-node"], "false");
    assert!(rs["spec"].get("resources").is_none(), "no request: no null, the provider's defaults apply");
}

#[test]
fn slice_wait_follows_the_conditions() {
    let peer = planned_peer();
    assert!(matches!(slice_check(None, &peer, OnAuthDenial::Fail), Verdict::Pending(_)));

    let rs = slice_with(vec![cond("Authentication", "Accepted")], &[]);
    let Verdict::Pending(seen) = slice_check(Some(&rs), &peer, OnAuthDenial::Fail) else { panic!("expected pending") };
    assert_eq!(seen, "Authentication = Accepted, Resources = not reported");

    let mut denied = cond("Resources", "Denied");
    denied.reason = Some("ResourceSliceResourcesDenied".into());
    denied.message = Some("ResourceSlice resources denied".into());
    let rs = slice_with(vec![cond("Authentication", "Accepted"), denied], &[]);
    let Verdict::Failed { reason, hint } = slice_check(Some(&rs), &peer, OnAuthDenial::Fail) else {
        panic!("expected failure")
    };
    assert!(reason.contains("Resources is Denied") && reason.contains("ResourceSliceResourcesDenied"));
    assert!(reason.contains("ResourceSlice resources denied"));
    assert!(hint.contains("Cordoned"));

    let rs = slice_with(vec![cond("Authentication", "Denied")], &[]);
    let Verdict::Failed { hint, .. } = slice_check(Some(&rs), &peer, OnAuthDenial::Fail) else {
        panic!("expected failure")
    };
    assert!(hint.contains("liqo-tenant-rome"));
    // Within the grace after a failure, an Authentication denial is waited through (Liqo retries some); a
    // Resources denial is not.
    let Verdict::Pending(seen) = slice_check(Some(&rs), &peer, OnAuthDenial::Wait) else { panic!("expected pending") };
    assert!(seen.contains("Authentication is Denied") && seen.contains("waiting for it to clear"), "{seen}");
    let rs = slice_with(vec![cond("Authentication", "Accepted"), cond("Resources", "Denied")], &[]);
    assert!(matches!(slice_check(Some(&rs), &peer, OnAuthDenial::Wait), Verdict::Failed { .. }));

    // Accepted but still granting the old request (resize not processed yet): keep waiting.
    let accepted = vec![cond("Authentication", "Accepted"), cond("Resources", "Accepted")];
    let rs = slice_with(accepted.clone(), &[("cpu", "2"), ("memory", "8Gi"), ("pods", "110")]);
    let Verdict::Pending(seen) = slice_check(Some(&rs), &peer, OnAuthDenial::Fail) else { panic!("expected pending") };
    assert!(seen.contains("status.resources[cpu] is `2` while 4 is requested"));

    // Granted in canonical spelling, plus provider defaults for other keys.
    let rs = slice_with(accepted.clone(), &[("cpu", "4000m"), ("memory", "8Gi"), ("pods", "110"), ("x", "1")]);
    let Verdict::Ready(granted) = slice_check(Some(&rs), &peer, OnAuthDenial::Fail) else { panic!("expected ready") };
    assert_eq!(granted.get("cpu").map(String::as_str), Some("4000m"));
    assert_eq!(granted.len(), 4);

    // A custom class may grant something else: accepted is enough.
    let custom = attr::Peer { class: Some("gold".into()), ..peer };
    let rs = slice_with(accepted, &[("cpu", "1")]);
    assert!(matches!(slice_check(Some(&rs), &custom, OnAuthDenial::Fail), Verdict::Ready(_)));
}

#[test]
fn virtual_node_and_node_waits() {
    assert!(matches!(virtual_node_check(None), Verdict::Pending(_)));
    let mut vn = VirtualNode::new("milan", VirtualNodeSpec::default());
    vn.status =
        Some(VirtualNodeStatus { conditions: Some(vec![cond("VirtualKubelet", "Running"), cond("Node", "Creating")]) });
    let Verdict::Pending(seen) = virtual_node_check(Some(&vn)) else { panic!("expected pending") };
    assert_eq!(seen, "VirtualKubelet = Running, Node = Creating");
    vn.status =
        Some(VirtualNodeStatus { conditions: Some(vec![cond("VirtualKubelet", "Running"), cond("Node", "Running")]) });
    assert!(matches!(virtual_node_check(Some(&vn)), Verdict::Ready(true)));
    let mut dying = vn.clone();
    dying.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    let Verdict::Pending(seen) = virtual_node_check(Some(&dying)) else { panic!("a dying VirtualNode is not ready") };
    assert!(seen.contains("being deleted"));
    vn.spec.create_node = Some(false);
    vn.status =
        Some(VirtualNodeStatus { conditions: Some(vec![cond("VirtualKubelet", "Running"), cond("Node", "None")]) });
    assert!(matches!(virtual_node_check(Some(&vn)), Verdict::Ready(false)));

    let node: Node = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "milan"},
        "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]}
    }))
    .unwrap();
    let Verdict::Pending(seen) = node_check(Some(&node)) else { panic!("expected pending") };
    assert_eq!(seen, "Ready = False (KubeletNotReady)");
    let node: Node = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "milan"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .unwrap();
    assert!(matches!(node_check(Some(&node)), Verdict::Ready(())));
}

/// Real Liqo keeps the virtual node NotReady until the Connection is Connected: a timeout on the node names
/// the Connection and its state, or says that none exists and how to order the resources.
#[test]
fn a_node_timeout_names_the_connection_and_its_state() {
    let connection = |value: Option<&str>| -> Connection {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "networking.liqo.io/v1beta1", "kind": "Connection",
            "metadata": {"name": "gw-milan", "namespace": "liqo-tenant-milan"},
            "spec": {"type": "Client"},
            "status": value.map(|v| serde_json::json!({"value": v})),
        }))
        .unwrap()
    };
    let note = network_note(&[connection(Some("Connecting"))], "milan").unwrap();
    assert!(note.contains("Connection liqo-tenant-milan/gw-milan is Connecting"), "{note}");
    assert!(note.contains("NotReady until the network Connection is Connected"), "{note}");
    let none = network_note(&[], "milan").unwrap();
    assert!(none.contains("no Connection labelled liqo.io/remote-cluster-id=milan") && none.contains("depends_on"));
    assert!(network_note(&[connection(None)], "milan").unwrap().contains("without status"));
    assert_eq!(network_note(&[connection(Some("Connected"))], "milan"), None, "a working tunnel is not blamed");
}

/// A `liqoctl peer` identity: its Secret is owned by an Identity; import and read never take its key.
#[test]
fn an_identity_liqo_minted_is_kept_without_reading_its_key() {
    let peer = planned_peer();
    let rs = slice_with(vec![cond("Authentication", "Accepted"), cond("Resources", "Accepted")], &[("cpu", "4")]);
    let mut secret = our_identity_secret(&peer);
    assert!(!minted_by_liqo(&secret));
    let ours = observed_state(&Value::Null, &rs, &secret);
    assert!(
        ours.get(attr::client_certificate).as_str().is_some() && ours.get(attr::client_key_secret).as_str().is_some(),
        "our own Secret's public parts are read"
    );
    secret.metadata.owner_references = Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
        api_version: "authentication.liqo.io/v1beta1".into(),
        kind: "Identity".into(),
        name: "controlplane-milan".into(),
        uid: "u".into(),
        ..Default::default()
    }]);
    assert_eq!(owning_identity(&secret).as_deref(), Some("controlplane-milan"));
    let imported = observed_state(&Value::Null, &rs, &secret);
    for attr in ISSUED {
        assert!(imported.get(attr).is_null(), "import must not read Liqo's identity into state: {attr}");
    }
    let mut kept = peer.state(None);
    for attr in ISSUED {
        kept.set(attr, Value::Null);
    }
    let read = observed_state(&kept, &rs, &secret);
    assert!(ISSUED.iter().all(|a| read.get(*a).is_null()), "read keeps it out too");
    // What `-generate-config-out` writes: the state without its computed-only attributes.
    let mut generated = imported.clone();
    for computed in [attr::id, attr::virtual_node_name, attr::accepted_resources] {
        generated.set(computed, Value::Null);
    }
    let (replanned, replace) = plan(&imported, &imported, &generated);
    assert!(replace.is_empty() && ISSUED.iter().all(|a| replanned.get(*a).is_null()));
    assert!(validate(&generated).is_empty());
    assert!(matches!(attr::Peer::of(&replanned).credentials(&generated).unwrap(), Credentials::Liqo));
}

#[test]
fn read_reflects_drift_and_keeps_equal_spellings() {
    let peer = planned_peer();
    let prior = peer.state(Some(&BTreeMap::new()));
    let mut rs = slice_with(
        vec![cond("Authentication", "Accepted"), cond("Resources", "Accepted")],
        &[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")],
    );
    let secret = our_identity_secret(&peer);

    // Unchanged objects read back into the same state (apart from the refreshed grant).
    let s = observed_state(&prior, &rs, &secret);
    let mut expected = prior.clone();
    expected.set(attr::accepted_resources, Value::string_map([("cpu", "4"), ("memory", "8Gi"), ("pods", "110")]));
    assert_eq!(s, expected);

    // Canonical spelling of an equal value keeps the user's spelling; a real change shows as drift.
    rs.spec.resources = Some(BTreeMap::from([
        ("cpu".to_string(), Quantity("4000m".into())),
        ("memory".to_string(), Quantity("16Gi".into())),
        ("pods".to_string(), Quantity("110".into())),
    ]));
    let s = observed_state(&prior, &rs, &secret);
    assert_eq!(s.get(attr::resources), &Value::string_map([("cpu", "4"), ("memory", "16Gi"), ("pods", "110")]));

    // A key removed out of band is drift; a key someone else added is not ours.
    let live = rs.spec.resources.as_mut().unwrap();
    live.remove("pods");
    live.insert("nvidia.com/gpu".into(), Quantity("1".into()));
    let s = observed_state(&prior, &rs, &secret);
    assert_eq!(s.get(attr::resources), &Value::string_map([("cpu", "4"), ("memory", "16Gi")]));
    let mut unset = prior.clone();
    unset.set(attr::resources, Value::Null);
    assert!(observed_state(&unset, &rs, &secret).get(attr::resources).is_null());
    rs.spec.resources = Some(BTreeMap::from([
        ("cpu".to_string(), Quantity("4000m".into())),
        ("memory".to_string(), Quantity("16Gi".into())),
        ("pods".to_string(), Quantity("110".into())),
    ]));

    // The remote tenant namespace annotation changed out of band: null, so the plan repairs the Secret in place
    // instead of replacing the peer (whose delete would need the broken annotation).
    let mut moved = secret.clone();
    moved.metadata.annotations =
        Some(BTreeMap::from([(labels::REMOTE_TENANT_NAMESPACE.to_string(), "elsewhere".to_string())]));
    let s = observed_state(&prior, &rs, &moved);
    assert!(s.get(attr::provider_tenant_namespace).is_null());
    let (planned_repair, replace) = plan(&s, &config(), &config());
    assert!(replace.is_empty(), "{replace:?}");
    assert_eq!(planned_repair.get(attr::provider_tenant_namespace), prior.get(attr::provider_tenant_namespace));

    // Annotation removed out of band: null (repaired in place), not a replacement trigger.
    rs.metadata.annotations = None;
    let s = observed_state(&prior, &rs, &secret);
    assert!(s.get(attr::create_virtual_node).is_null());
    assert_eq!(s.get(attr::virtual_node_name), &Value::string("milan"));

    // Import (no prior) rebuilds the full state with the documented defaults.
    let rs = peer.resource_slice();
    let s = owned(observed_state(&Value::Null, &rs, &secret), &Value::Null);
    let (want, _) = plan(&Value::Null, &config(), &config());
    for attr in [
        attr::id,
        attr::tenant_namespace,
        attr::provider_cluster_id,
        attr::provider_tenant_namespace,
        attr::api_server_url,
        attr::cluster_ca_certificate,
        attr::client_certificate,
        attr::client_key_secret,
        attr::resources,
        attr::class,
        attr::create_virtual_node,
        attr::resource_slice_name,
        attr::wait_for_virtual_node,
        attr::virtual_node_name,
    ] {
        assert_eq!(s.get(attr), want.get(attr), "{attr}");
    }
}

#[test]
fn import_ids_are_namespace_slash_name() {
    assert_eq!(parse_import_id("liqo-tenant-milan/milan").unwrap(), ["liqo-tenant-milan", "milan"]);
    for bad in ["milan", "a/b/c", "/milan", "ns/", "NS/milan"] {
        let e = parse_import_id(bad).unwrap_err();
        assert!(e.detail.contains("<tenant_namespace>/<resource_slice_name>"), "{bad}");
    }
}

#[test]
fn failure_state_has_no_unknowns() {
    let peer = planned_peer();
    let s = peer.state(None);
    assert!(s.is_wholly_known());
    assert!(s.get(attr::accepted_resources).is_null());
}
