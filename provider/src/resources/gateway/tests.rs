use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::ObjectMeta;
use liqo_schema::liqo::{
    ClusterConfig, ClusterConfigCidr, ConfigurationStatus, Connection, ConnectionLatency, ConnectionStatus,
    EndpointStatus, GatewayServerStatus, SecretReference, labels,
};
use liqo_schema::tf::{AttributePath, Diagnostics, Type, Value};
use serde_json::json;

use super::GatewayResource;
use super::objects::{
    GatewayObj, GatewaySpec, Observed, Outputs, Role, fill_outputs, state_from_observed, unknown_as_null,
};
use super::plan::server_needs_recreate;
use super::schema::attr;
use super::status::{
    ConnPhase, WaitPhase, configuration_check, connection_check, connection_error, endpoint_check, endpoint_served,
    key_secret_check, pick_connection,
};
use crate::attributes::Key;
use crate::kube::{OpError, Verdict};
use crate::resources::lifecycle::Plan;
use crate::resources::lifecycle::TIMEOUTS;

crate::resources::lifecycle::test_helpers!(super::GatewayResource, 2);

const KEY: &str = "HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw=";

fn server_cfg() -> Value {
    Value::object([
        ("service_type", Value::string("NodePort")),
        ("port", Value::Null),
        ("node_port", Value::Number(30742.0)),
        ("load_balancer_ip", Value::Null),
        ("service_annotations", Value::Null),
        ("service_labels", Value::Null),
    ])
}

fn client_cfg() -> Value {
    Value::object([
        ("addresses", Value::string_list(["192.168.1.10"])),
        ("port", Value::Number(30742.0)),
        ("protocol", Value::Null),
    ])
}

/// A configuration as Terraform sends it: every attribute present, unset ones null.
fn config(role: &str) -> Value {
    Value::object([
        (attr::id, Value::Null),
        (attr::tenant_namespace, Value::string("liqo-tenant-rome")),
        (attr::remote_cluster_id, Value::string("rome")),
        (attr::remote_pod_cidrs, Value::string_list(["10.243.0.0/16"])),
        (attr::remote_external_cidr, Value::string("10.70.0.0/16")),
        (attr::remote_public_key, Value::string(KEY)),
        (attr::key_secret_name, Value::Null),
        (attr::mtu, Value::Null),
        (attr::server, if role == "server" { server_cfg() } else { Value::Null }),
        (attr::client, if role == "client" { client_cfg() } else { Value::Null }),
        (attr::wait_for_connection, Value::Null),
        (attr::endpoint_addresses, Value::Null),
        (attr::endpoint_port, Value::Null),
        (attr::remapped_pod_cidrs, Value::Null),
        (attr::remapped_external_cidr, Value::Null),
        (attr::connection_status, Value::Null),
        (TIMEOUTS, Value::Null),
    ])
}

fn with(mut v: Value, path: &str, x: Value) -> Value {
    let steps: Vec<&str> = path.split('.').collect();
    let mut cur = &mut v;
    for s in &steps[..steps.len() - 1] {
        cur = cur.get_mut_named(s);
    }
    cur.set_named(steps[steps.len() - 1], x);
    v
}

/// What Terraform gets back from a plan.
struct Planned {
    planned: Value,
    replace: Vec<AttributePath>,
}

fn plan(prior: &Value, proposed: Value, config: &Value) -> Planned {
    let p = Plan::run::<GatewayResource>(prior, proposed, config);
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
    Planned { planned: p.planned, replace: p.replace }
}

fn plan_create(cfg: &Value) -> Planned {
    plan(&Value::Null, cfg.clone(), cfg)
}

/// The state after a successful create of `cfg` (outputs as a server/client would report them), as the driver
/// records it.
fn applied(cfg: &Value) -> Value {
    let planned = plan_create(cfg).planned;
    let out = Outputs {
        endpoint: Some(EndpointStatus { addresses: Some(vec!["10.0.0.5".into()]), port: Some(30742), protocol: None }),
        connection_status: "Connected".into(),
        remapped: remapped(),
    };
    owned(fill_outputs(&planned, &out), planned.get(TIMEOUTS))
}

/// The peer's CIDRs as Liqo's IPAM remapped them in these tests (the peer's pod CIDR overlapped; its external
/// CIDR did not).
fn remapped() -> ClusterConfigCidr {
    ClusterConfigCidr { pod: Some(vec!["10.71.0.0/18".into()]), external: Some(vec!["10.70.0.0/16".into()]) }
}

fn plan_update(prior: &Value, cfg: &Value) -> Planned {
    plan(prior, cfg.clone(), cfg)
}

fn paths(d: &Diagnostics) -> Vec<String> {
    d.iter().map(|d| d.attribute.as_ref().map(|p| p.to_string()).unwrap_or_default()).collect()
}

// --- schema ----------------------------------------------------------------------------------------------

#[test]
fn schema_is_documented_and_well_formed() {
    let s = schema();
    for a in &s.block.attributes {
        assert!(!a.description.is_empty(), "{} lacks a description", a.name);
        assert!(a.required || a.optional || a.computed, "{} has no mode", a.name);
        if let Some(n) = &a.nested {
            assert!(a.ty.is_none(), "{}: nested attributes must not carry a plain type", a.name);
            for inner in &n.attributes {
                assert!(!inner.description.is_empty(), "{}.{} lacks a description", a.name, inner.name);
            }
        }
    }
    let schema_of = |key: Key| s.block.attribute(key).unwrap();
    assert!(schema_of(attr::id).computed && !schema_of(attr::id).optional);
    for out in [
        attr::endpoint_addresses,
        attr::endpoint_port,
        attr::connection_status,
        attr::remapped_pod_cidrs,
        attr::remapped_external_cidr,
    ] {
        assert!(schema_of(out).computed && !schema_of(out).optional, "{out} is an output");
    }
    for default in [attr::key_secret_name, attr::mtu, attr::wait_for_connection] {
        assert!(schema_of(default).optional && schema_of(default).computed, "{default} has a default");
    }
    assert!(s.block.blocks.iter().any(|b| b.type_name == "timeouts"));
    // Every attribute of a config built for tests exists in the schema and vice versa.
    let Type::Object(types) = s.block.implied_type() else { panic!() };
    let cfg = config("server");
    let cfg_keys: Vec<&String> = cfg.entries().unwrap().keys().collect();
    assert_eq!(types.keys().collect::<Vec<_>>(), cfg_keys);
}

// --- validation ------------------------------------------------------------------------------------------

#[test]
fn valid_configs_pass() {
    assert!(validate(&config("server")).is_empty());
    assert!(validate(&config("client")).is_empty());
    // Values from other resources are unknown at validation: never an error.
    let unknowns = with(with(config("client"), "remote_cluster_id", Value::Unknown), "client", Value::Unknown);
    assert!(validate(&unknowns).is_empty());
    let unknown_list = with(config("client"), "client.addresses", Value::Unknown);
    assert!(validate(&unknown_list).is_empty());
}

#[test]
fn bad_inputs_name_the_attribute() {
    let cases: Vec<(Value, &str)> = vec![
        (with(config("server"), "tenant_namespace", Value::string("Tenant_NS")), "tenant_namespace"),
        (with(config("server"), "remote_cluster_id", Value::string("-rome")), "remote_cluster_id"),
        (
            with(config("server"), "remote_pod_cidrs", Value::string_list(["10.243.0.0/16", "10.1.0.0"])),
            "remote_pod_cidrs[1]",
        ),
        (with(config("server"), "remote_pod_cidrs", Value::List(vec![])), "remote_pod_cidrs"),
        (with(config("server"), "remote_external_cidr", Value::string("10.70.0.0/40")), "remote_external_cidr"),
        (with(config("server"), "remote_public_key", Value::string("dG9vIHNob3J0")), "remote_public_key"),
        (with(config("server"), "key_secret_name", Value::string("GW keys")), "key_secret_name"),
        (with(config("server"), "mtu", Value::Number(100.0)), "mtu"),
        (with(config("server"), "mtu", Value::Number(1340.5)), "mtu"),
        (with(config("server"), "server.service_type", Value::string("nodeport")), "server.service_type"),
        (with(config("server"), "server.port", Value::Number(70000.0)), "server.port"),
        (with(config("server"), "server.node_port", Value::Number(8080.0)), "server.node_port"),
        (with(config("server"), "server.service_type", Value::string("ClusterIP")), "server.node_port"),
        (
            with(
                with(config("server"), "server.service_type", Value::string("LoadBalancer")),
                "server.load_balancer_ip",
                Value::string("lb.example.com"),
            ),
            "server.load_balancer_ip",
        ),
        (with(config("client"), "client.addresses", Value::List(vec![])), "client.addresses"),
        (with(config("client"), "client.addresses", Value::string_list(["1.2.3.4", " "])), "client.addresses[1]"),
        (with(config("client"), "client.port", Value::Number(0.0)), "client.port"),
        (with(config("client"), "client.protocol", Value::string("SCTP")), "client.protocol"),
        (
            with(
                config("client"),
                "timeouts",
                Value::object([
                    ("create", Value::string("10 minutes")),
                    ("update", Value::Null),
                    ("delete", Value::Null),
                ]),
            ),
            "timeouts.create",
        ),
        (with(config("server"), "server", Value::Null), "server"),
        (with(config("server"), "client", client_cfg()), "client"),
    ];
    for (cfg, path) in cases {
        let d = validate(&cfg);
        assert_eq!(paths(&d), [path], "config for {path}: {d:?}");
        assert!(!d.0[0].detail.is_empty());
    }
}

#[test]
fn tcp_is_refused_with_the_reason() {
    let d = validate(&with(config("client"), "client.protocol", Value::string("TCP")));
    assert_eq!(paths(&d), ["client.protocol"]);
    assert!(d.0[0].summary.contains("TCP is not supported"), "{d:?}");
    assert!(d.0[0].detail.contains("UDP only"), "{d:?}");
    assert!(validate(&with(config("client"), "client.protocol", Value::string("UDP"))).is_empty());
}

#[test]
fn load_balancer_ip_needs_a_load_balancer() {
    let cfg = with(
        with(config("server"), "server.load_balancer_ip", Value::string("203.0.113.7")),
        "server.node_port",
        Value::Null,
    );
    assert_eq!(paths(&validate(&cfg)), ["server.load_balancer_ip"], "NodePort + LB IP");
    let cfg = with(cfg, "server.service_type", Value::Null);
    assert!(validate(&cfg).is_empty(), "the default type is LoadBalancer");
}

// --- plan ------------------------------------------------------------------------------------------------

#[test]
fn create_fills_defaults_and_leaves_outputs_unknown() {
    let p = plan_create(&config("server")).planned;
    assert_eq!(p.get(attr::id), &Value::string("liqo-tenant-rome/rome"));
    assert_eq!(p.get(attr::mtu), &Value::Number(1340.0));
    assert_eq!(p.get(attr::key_secret_name), &Value::string("gw-keys"));
    assert_eq!(p.get(attr::wait_for_connection), &Value::Bool(true));
    assert_eq!(p.get(attr::server).get(attr::server::port), &Value::Number(51840.0));
    assert_eq!(p.get(attr::server).get(attr::server::service_type), &Value::string("NodePort"));
    assert!(p.get(attr::endpoint_addresses).is_unknown() && p.get(attr::endpoint_port).is_unknown());
    assert!(p.get(attr::connection_status).is_unknown());
    assert!(p.get(attr::remapped_pod_cidrs).is_unknown() && p.get(attr::remapped_external_cidr).is_unknown());

    let c = plan_create(&config("client")).planned;
    assert_eq!(c.get(attr::client).get(attr::client::protocol), &Value::string("UDP"));
    assert!(
        c.get(attr::endpoint_addresses).is_null() && c.get(attr::endpoint_port).is_null(),
        "client has no endpoint outputs"
    );
    assert!(c.get(attr::server).is_null());
}

#[test]
fn unknown_inputs_stay_unknown() {
    let cfg = with(with(config("client"), "remote_cluster_id", Value::Unknown), "client.addresses", Value::Unknown);
    let p = plan_create(&cfg).planned;
    assert!(p.get(attr::remote_cluster_id).is_unknown());
    assert!(p.get(attr::id).is_unknown());
    assert!(p.get(attr::client).get(attr::client::addresses).is_unknown());
    assert_eq!(p.get(attr::client).get(attr::client::protocol), &Value::string("UDP"));
    let p = plan_create(&with(config("server"), "server", Value::Unknown)).planned;
    assert!(p.get(attr::server).is_unknown() && p.get(attr::endpoint_port).is_unknown());
}

#[test]
fn no_change_plans_the_prior_state() {
    let prior = applied(&config("server"));
    let r = plan_update(&prior, &config("server"));
    assert!(r.replace.is_empty());
    assert_eq!(r.planned, prior, "an unchanged config must give an empty plan");
}

#[test]
fn in_place_updates() {
    let prior = applied(&config("server"));
    for (path, v) in [
        ("mtu", Value::Number(1400.0)),
        ("remote_pod_cidrs", Value::string_list(["10.243.0.0/16", "10.244.0.0/16"])),
        ("remote_external_cidr", Value::string("10.71.0.0/16")),
        ("remote_public_key", Value::string("nBxGmUf2Fa4rYqgFpFyPq6KTTsqfPxDeUuQmuAxHXwM=")),
        ("key_secret_name", Value::string("other-keys")),
        ("server.service_annotations", Value::string_map([("a", "b")])),
        ("server.service_labels", Value::string_map([("a", "b")])),
        ("server.template_name", Value::string("wireguard-server-gpu")),
    ] {
        let r = plan_update(&prior, &with(config("server"), path, v));
        assert!(r.replace.is_empty(), "{path} must update in place");
        assert_eq!(
            r.planned.get(attr::endpoint_addresses),
            prior.get(attr::endpoint_addresses),
            "{path} keeps the endpoint"
        );
        assert_eq!(r.planned.get(attr::endpoint_port), prior.get(attr::endpoint_port));
        assert!(r.planned.get(attr::connection_status).is_unknown(), "{path} re-reads the Connection");
        assert_eq!(r.planned.get(attr::id), prior.get(attr::id));
    }
    let prior = applied(&config("client"));
    for (path, v) in [
        ("client.addresses", Value::string_list(["10.0.0.9"])),
        ("client.port", Value::Number(31000.0)),
        ("client.template_name", Value::string("wireguard-client-gpu")),
    ] {
        let r = plan_update(&prior, &with(config("client"), path, v));
        assert!(r.replace.is_empty(), "{path} must update in place");
    }
}

#[test]
fn removing_an_argument_returns_to_its_default() {
    let prior = applied(&with(config("server"), "mtu", Value::Number(1400.0)));
    // Terraform proposes the prior value for an optional+computed attribute removed from the config.
    let proposed = with(config("server"), "mtu", Value::Number(1400.0));
    let r = plan(&prior, proposed, &config("server"));
    assert_eq!(r.planned.get(attr::mtu), &Value::Number(1340.0));
}

#[test]
fn server_service_shape_changes_recreate_the_server_in_place() {
    let prior = applied(&config("server"));
    for (path, v) in [
        ("server.service_type", Value::string("LoadBalancer")),
        ("server.port", Value::Number(51841.0)),
        ("server.node_port", Value::Number(30800.0)),
    ] {
        let planned_cfg = with(config("server"), path, v);
        let r = plan_update(&prior, &planned_cfg);
        assert!(r.replace.is_empty(), "{path}: the GatewayServer is recreated inside the update");
        assert!(
            r.planned.get(attr::endpoint_addresses).is_unknown() && r.planned.get(attr::endpoint_port).is_unknown(),
            "{path} moves the endpoint"
        );
        assert!(server_needs_recreate(&prior, &r.planned), "{path}");
    }
    let r = plan_update(&prior, &with(config("server"), "mtu", Value::Number(1400.0)));
    assert!(!server_needs_recreate(&prior, &r.planned));
}

#[test]
fn identity_and_role_changes_replace() {
    let prior = applied(&config("server"));
    let r = plan_update(&prior, &with(config("server"), "remote_cluster_id", Value::string("paris")));
    assert_eq!(paths_of(&r.replace), [attr::remote_cluster_id]);
    let r = plan_update(&prior, &with(config("server"), "tenant_namespace", Value::string("other")));
    assert_eq!(paths_of(&r.replace), [attr::tenant_namespace]);
    let r = plan_update(&prior, &config("client"));
    assert_eq!(paths_of(&r.replace), [attr::server, attr::client]);
    assert!(r.planned.get(attr::connection_status).is_unknown());
    let r = plan_update(&prior, &with(config("server"), "remote_cluster_id", Value::Unknown));
    assert_eq!(paths_of(&r.replace), [attr::remote_cluster_id], "unknown may differ");
    assert!(r.planned.get(attr::id).is_unknown());
}

fn paths_of(p: &[AttributePath]) -> Vec<String> {
    p.iter().map(|p| p.to_string()).collect()
}

// --- objects ---------------------------------------------------------------------------------------------

fn spec(role: &str) -> GatewaySpec {
    GatewaySpec::from_value(&plan_create(&config(role)).planned).unwrap()
}

fn to_json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap()
}

#[test]
fn configuration_carries_only_the_peer_cidrs() {
    assert_eq!(
        to_json(&spec("server").configuration()),
        json!({
            "apiVersion": "networking.liqo.io/v1beta1", "kind": "Configuration",
            "metadata": {"name": "rome", "namespace": "liqo-tenant-rome", "labels": {"liqo.io/remote-cluster-id": "rome"}},
            "spec": {"remote": {"cidr": {"pod": ["10.243.0.0/16"], "external": ["10.70.0.0/16"]}}}
        }),
        "no spec.local (Liqo's) and no status"
    );
}

#[test]
fn public_key_is_labelled_for_the_gateway() {
    assert_eq!(
        to_json(&spec("server").public_key()),
        json!({
            "apiVersion": "networking.liqo.io/v1beta1", "kind": "PublicKey",
            "metadata": {"name": "rome", "namespace": "liqo-tenant-rome",
                         "labels": {"liqo.io/remote-cluster-id": "rome", "networking.liqo.io/gateway-resource": "true"}},
            "spec": {"publicKey": KEY}
        })
    );
}

#[test]
fn gateway_server_references_key_secret_and_template() {
    let s = spec("server");
    let Role::Server(ss) = &s.role else { panic!() };
    assert_eq!(
        to_json(&s.gateway_server(ss, "liqo")),
        json!({
            "apiVersion": "networking.liqo.io/v1beta1", "kind": "GatewayServer",
            "metadata": {"name": "rome", "namespace": "liqo-tenant-rome", "labels": {"liqo.io/remote-cluster-id": "rome"}},
            "spec": {
                "serverTemplateRef": {"apiVersion": "networking.liqo.io/v1beta1", "kind": "WgGatewayServerTemplate",
                                      "name": "wireguard-server", "namespace": "liqo"},
                "mtu": 1340,
                "endpoint": {"port": 51840, "serviceType": "NodePort", "nodePort": 30742},
                "secretRef": {"name": "gw-keys"}
            }
        })
    );
}

/// A gateway names the template Liqo renders it from, Liqo's own unless configured; a read shows the one named.
#[test]
fn gateways_name_their_template() {
    for (role, kind, default) in [
        ("server", "WgGatewayServerTemplate", "wireguard-server"),
        ("client", "WgGatewayClientTemplate", "wireguard-client"),
    ] {
        let template = format!("{role}.template_name");
        let planned = plan_create(&config(role)).planned;
        assert_eq!(planned.get_named(role).get_named("template_name"), &Value::string(default));
        let custom = plan_create(&with(config(role), &template, Value::string("gpu-gateway"))).planned;
        let s = GatewaySpec::from_value(&custom).unwrap();
        let object = match &s.role {
            Role::Server(ss) => to_json(&s.gateway_server(ss, "liqo")),
            Role::Client(cs) => to_json(&s.gateway_client(cs, "liqo")),
        };
        let reference = &object["spec"][format!("{role}TemplateRef")];
        assert_eq!(reference["kind"], kind);
        assert_eq!((reference["name"].as_str(), reference["namespace"].as_str()), (Some("gpu-gateway"), Some("liqo")));
        let read = state_from_observed(
            &attr::Gateway::of(&custom),
            &observed(&s, Some("Connected")),
            "liqo-tenant-rome",
            "rome",
        )
        .value();
        assert_eq!(read.get_named(role).get_named("template_name"), &Value::string("gpu-gateway"), "{role}");

        let d = validate(&with(config(role), &template, Value::string("GPU_gateway")));
        let paths: Vec<String> = d.iter().map(|d| d.attribute.as_ref().unwrap().to_string()).collect();
        assert_eq!(paths, [template.as_str()]);
        assert!(d.0[0].summary.contains("Invalid template name"), "{:?}", d.0[0]);
    }
}

/// A gateway `liqoctl peer` made names no key Secret (Liqo generated `gw-<gateway>`): the imported state
/// keeps none, and an update never points the gateway at a `gw-keys` that does not exist.
#[test]
fn a_gateway_with_liqo_generated_keys_keeps_them() {
    let imported = with(applied(&config("client")), "key_secret_name", Value::Null);
    let p = plan_update(&imported, &config("client")).planned;
    assert!(p.get(attr::key_secret_name).is_null(), "{p:?}");
    let resized = plan_update(&imported, &with(config("client"), "mtu", Value::Number(1420.0))).planned;
    assert!(resized.get(attr::key_secret_name).is_null());
    let s = GatewaySpec::from_value(&resized).unwrap();
    let Role::Client(c) = &s.role else { panic!() };
    assert!(to_json(&s.gateway_client(c, "liqo"))["spec"].get("secretRef").is_none());
    // Set explicitly, it is the user's choice again; a new gateway gets this provider's Secret.
    let chosen = plan_update(&imported, &with(config("client"), "key_secret_name", Value::string("gw-keys")));
    assert_eq!(chosen.planned.get(attr::key_secret_name), &Value::string("gw-keys"));
    assert_eq!(plan_create(&config("client")).planned.get(attr::key_secret_name), &Value::string("gw-keys"));
}

#[test]
fn gateway_client_dials_the_endpoint() {
    let s = spec("client");
    let Role::Client(cs) = &s.role else { panic!() };
    assert_eq!(
        to_json(&s.gateway_client(cs, "liqo-system")),
        json!({
            "apiVersion": "networking.liqo.io/v1beta1", "kind": "GatewayClient",
            "metadata": {"name": "rome", "namespace": "liqo-tenant-rome", "labels": {"liqo.io/remote-cluster-id": "rome"}},
            "spec": {
                "clientTemplateRef": {"apiVersion": "networking.liqo.io/v1beta1", "kind": "WgGatewayClientTemplate",
                                      "name": "wireguard-client", "namespace": "liqo-system"},
                "mtu": 1340,
                "endpoint": {"addresses": ["192.168.1.10"], "port": 30742, "protocol": "UDP"},
                "secretRef": {"name": "gw-keys"}
            }
        })
    );
}

// --- read / import ---------------------------------------------------------------------------------------

fn observed(s: &GatewaySpec, status_value: Option<&str>) -> Observed {
    let gateway = match &s.role {
        Role::Server(ss) => {
            let mut g = s.gateway_server(ss, "liqo");
            g.metadata.uid = Some("uid-1".into());
            g.status = Some(GatewayServerStatus {
                endpoint: Some(EndpointStatus {
                    addresses: Some(vec!["10.0.0.5".into()]),
                    port: Some(30742),
                    protocol: Some("UDP".into()),
                }),
                ..Default::default()
            });
            GatewayObj::Server(g)
        }
        Role::Client(cs) => GatewayObj::Client(s.gateway_client(cs, "liqo")),
    };
    let mut configuration = s.configuration();
    configuration.status =
        Some(ConfigurationStatus { remote: Some(ClusterConfig { cidr: Some(remapped()) }), conditions: None });
    Observed {
        configuration,
        public_key: s.public_key(),
        gateway,
        connection: status_value.map(|v| conn("gw-rome", Some("uid-1"), v)),
    }
}

#[test]
fn read_of_unchanged_objects_matches_the_state() {
    for role in ["server", "client"] {
        let prior = applied(&config(role));
        let s = GatewaySpec::from_value(&prior).unwrap();
        let state = owned(
            state_from_observed(
                &attr::Gateway::of(&prior),
                &observed(&s, Some("Connected")),
                "liqo-tenant-rome",
                "rome",
            )
            .value(),
            prior.get(TIMEOUTS),
        );
        let want = if role == "client" {
            with(prior.clone(), "connection_status", Value::string("Connected"))
        } else {
            prior.clone()
        };
        assert_eq!(state, want, "{role}: read must not invent drift");
        // And the config still plans nothing after the read (import → empty plan).
        let r = plan_update(&state, &config(role));
        assert!(r.replace.is_empty());
        assert_eq!(r.planned, state, "{role}");
    }
}

#[test]
fn import_builds_a_state_that_plans_empty() {
    let s = spec("server");
    let state = owned(
        state_from_observed(&attr::Gateway::defaults(), &observed(&s, None), "liqo-tenant-rome", "rome").value(),
        &Value::Null,
    );
    assert_eq!(state.get(attr::connection_status), &Value::string(""));
    assert_eq!(state.get(attr::endpoint_addresses), &Value::string_list(["10.0.0.5"]));
    let r = plan_update(&state, &config("server"));
    assert!(r.replace.is_empty());
    assert_eq!(r.planned, state);
}

#[test]
fn out_of_band_changes_show_as_drift() {
    let prior = applied(&config("server"));
    let s = GatewaySpec::from_value(&prior).unwrap();
    let mut obs = observed(&s, None);
    obs.public_key.spec.public_key = Some(ByteString(vec![7; 32]));
    if let GatewayObj::Server(g) = &mut obs.gateway {
        g.spec.mtu = Some(1200);
        g.status = None; // gateway restarting: endpoint outputs keep their last known value
    }
    let state = state_from_observed(&attr::Gateway::of(&prior), &obs, "liqo-tenant-rome", "rome").value();
    assert_eq!(state.get(attr::mtu), &Value::Number(1200.0));
    assert_ne!(state.get(attr::remote_public_key), prior.get(attr::remote_public_key));
    assert_eq!(state.get(attr::endpoint_addresses), prior.get(attr::endpoint_addresses));
    let r = plan_update(&state, &config("server"));
    assert_eq!(r.planned.get(attr::mtu), &Value::Number(1340.0), "apply re-asserts the configured value");
    assert_eq!(r.planned.get(attr::remote_public_key), &Value::string(KEY));
}

#[test]
fn a_liqoctl_gateway_with_an_empty_secret_ref_imports_without_a_key_secret() {
    let s = spec("server");
    let mut obs = observed(&s, None);
    if let GatewayObj::Server(g) = &mut obs.gateway {
        g.spec.secret_ref = Some(SecretReference { name: Some(String::new()) });
    }
    let state = state_from_observed(&attr::Gateway::defaults(), &obs, "liqo-tenant-rome", "rome").value();
    assert!(state.get(attr::key_secret_name).is_null(), "{state:?}");
}

#[test]
fn empty_service_maps_keep_the_configured_form() {
    let cfg = with(config("server"), "server.service_labels", Value::Map(BTreeMap::new()));
    let prior = applied(&cfg);
    let s = GatewaySpec::from_value(&prior).unwrap();
    let state =
        state_from_observed(&attr::Gateway::of(&prior), &observed(&s, None), "liqo-tenant-rome", "rome").value();
    assert_eq!(state.get(attr::server).get(attr::server::service_labels), &Value::Map(BTreeMap::new()));
    assert!(state.get(attr::server).get(attr::server::service_annotations).is_null());
}

#[test]
fn import_ids() {
    assert_eq!(parse_import_id("liqo-tenant-rome/rome").unwrap(), ["liqo-tenant-rome", "rome"]);
    for bad in ["rome", "a/b/c", "/rome", "ns/", "NS/rome"] {
        let d = parse_import_id(bad).unwrap_err();
        assert!(d.detail.contains("<tenant_namespace>/<name>"), "{bad}");
    }
}

// --- waits -----------------------------------------------------------------------------------------------

fn conn(name: &str, owner_uid: Option<&str>, value: &str) -> Connection {
    let mut c = Connection::new(name, Default::default());
    c.metadata.owner_references = owner_uid.map(|uid| {
        vec![OwnerReference {
            uid: uid.into(),
            name: "rome".into(),
            kind: "GatewayClient".into(),
            api_version: "networking.liqo.io/v1beta1".into(),
            ..Default::default()
        }]
    });
    c.status = Some(ConnectionStatus { value: Some(value.into()), latency: None });
    c
}

fn is_ready<T>(c: &Verdict<T>) -> bool {
    matches!(c, Verdict::Ready(_))
}

#[test]
fn connection_phases() {
    let check = |value: &str, mode| {
        let mut c = conn("gw-rome", Some("uid-1"), value);
        c.metadata.uid = Some("conn-1".into());
        connection_check(&[c], Some("uid-1"), "ns", mode)
    };
    let ready = |c: Verdict<ConnPhase>| match c {
        Verdict::Ready(p) => Some(p),
        _ => None,
    };
    let connected = Some(ConnPhase::Connected { uid: Some("conn-1".into()), measured_at: None });
    // Waiting: Connecting pends, Connected is done, Error starts the grace period.
    assert!(matches!(connection_check(&[], Some("uid-1"), "ns", WaitPhase::Await), Verdict::Pending(_)));
    assert!(matches!(check("Connecting", WaitPhase::Await), Verdict::Pending(_)));
    assert_eq!(ready(check("Connected", WaitPhase::Await)), connected);
    assert_eq!(
        ready(check("Error", WaitPhase::Await)),
        Some(ConnPhase::Error { name: "gw-rome".into(), latency: None })
    );
    // Grace period: still Error pends; Connecting starts over; Connected is done.
    assert!(matches!(check("Error", WaitPhase::Grace), Verdict::Pending(_)));
    assert_eq!(ready(check("Connecting", WaitPhase::Grace)), Some(ConnPhase::Recovering));
    assert_eq!(ready(check("Connected", WaitPhase::Grace)), connected);
    assert_eq!(ready(connection_check(&[], Some("uid-1"), "ns", WaitPhase::Grace)), Some(ConnPhase::Recovering));
    // Settling a pre-existing Connected: staying Connected pends (the timeout is success), Error fails over
    // to the grace period, anything else starts over.
    let settle = WaitPhase::Settle { fresh_after: Timestamp::now() };
    assert!(matches!(check("Connected", settle), Verdict::Pending(_)));
    assert!(matches!(ready(check("Error", settle)), Some(ConnPhase::Error { .. })));
    assert_eq!(ready(check("Connecting", settle)), Some(ConnPhase::Recovering));
}

#[test]
fn after_a_change_only_a_fresh_measurement_confirms_connected() {
    let change = Timestamp::now();
    let measured = |at: Timestamp| {
        let mut c = conn("gw-rome", Some("uid-1"), "Connected");
        c.status = Some(ConnectionStatus {
            value: Some("Connected".into()),
            latency: Some(ConnectionLatency { value: Some("1ms".into()), timestamp: Some(Time(at)) }),
        });
        connection_check(&[c], Some("uid-1"), "ns", WaitPhase::Settle { fresh_after: change })
    };
    let before = change - std::time::Duration::from_secs(5);
    let after = change + std::time::Duration::from_secs(1);
    assert!(matches!(measured(before), Verdict::Pending(_)), "a measurement from before the change");
    assert!(
        matches!(measured(after), Verdict::Ready(ConnPhase::Connected { measured_at: Some(at), .. }) if at == after),
        "a measurement after the change confirms the tunnel"
    );
}

#[test]
fn stale_connections_of_an_old_gateway_are_ignored() {
    let all = [conn("gw-old", Some("uid-0"), "Error"), conn("gw-rome", Some("uid-1"), "Connected")];
    assert_eq!(pick_connection(&all, Some("uid-1")).unwrap().unwrap().metadata.name.as_deref(), Some("gw-rome"));
    assert!(pick_connection(&all[..1], Some("uid-1")).unwrap().is_none());
    let unowned = [conn("a", None, "Connected"), conn("b", None, "Connected")];
    assert!(pick_connection(&unowned, Some("uid-1")).unwrap_err().contains("2 Connections"));
    assert!(matches!(connection_check(&unowned, Some("uid-1"), "ns", WaitPhase::Await), Verdict::Failed { .. }));
}

#[test]
fn connection_error_names_endpoint_and_key_mismatch() {
    let OpError::Failed { object, reason, hint } = connection_error(
        "ns",
        "gw-rome",
        Some("3ms".into()),
        "10.0.0.5:30742/UDP",
        &["ConnectionError: handshake fails".into()],
    ) else {
        panic!()
    };
    assert_eq!(object, "Connection ns/gw-rome");
    assert!(
        reason.contains("Error")
            && reason.contains("10.0.0.5:30742/UDP")
            && reason.contains("3ms")
            && reason.contains("Liqo reported: ConnectionError: handshake fails")
    );
    assert!(
        hint.contains("Key mismatch") && hint.contains("wireguard_public_key") && hint.contains("UDP reachability")
    );
}

#[test]
fn configuration_readiness() {
    let mut c = spec("server").configuration();
    assert!(matches!(configuration_check(None), Verdict::Pending(_)));
    assert!(matches!(configuration_check(Some(&c)), Verdict::Pending(ref s) if s.contains("NetworkCIDRsConfigured")));
    c.metadata.generation = Some(2);
    c.status = serde_json::from_value(json!({"conditions": [{"type": "NetworkCIDRsConfigured", "status": "True",
        "observedGeneration": 1, "reason": "NetworkCIDRsConfigured", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}))
    .unwrap();
    assert!(
        matches!(configuration_check(Some(&c)), Verdict::Pending(ref s) if s.contains("observedGeneration Some(1)"))
    );
    c.metadata.generation = Some(1);
    assert!(is_ready(&configuration_check(Some(&c))));
    // Ready with what Liqo's IPAM made of the peer's CIDRs: the outputs of the apply.
    c.status.as_mut().unwrap().remote = Some(ClusterConfig { cidr: Some(remapped()) });
    assert!(matches!(configuration_check(Some(&c)), Verdict::Ready(r) if r == remapped()));
}

/// The remapped CIDRs are planned unknown on create and whenever the peer's CIDRs change (Liqo maps them anew),
/// kept on any other update, filled by the apply from the Configuration's status and read back from it.
#[test]
fn remapped_cidrs_follow_the_peers_cidrs() {
    let prior = applied(&config("client"));
    assert_eq!(prior.get(attr::remapped_pod_cidrs), &Value::string_list(["10.71.0.0/18"]));
    assert_eq!(prior.get(attr::remapped_external_cidr), &Value::string("10.70.0.0/16"));
    for (path, v) in [
        ("remote_pod_cidrs", Value::string_list(["10.244.0.0/16"])),
        ("remote_external_cidr", Value::string("10.72.0.0/16")),
    ] {
        let r = plan_update(&prior, &with(config("client"), path, v));
        assert!(r.replace.is_empty(), "{path} updates in place");
        assert!(r.planned.get(attr::remapped_pod_cidrs).is_unknown(), "{path}: Liqo remaps the peer's CIDRs");
        assert!(r.planned.get(attr::remapped_external_cidr).is_unknown(), "{path}");
    }
    let r = plan_update(&prior, &with(config("client"), "mtu", Value::Number(1400.0)));
    assert_eq!(r.planned.get(attr::remapped_pod_cidrs), prior.get(attr::remapped_pod_cidrs), "an MTU keeps them");
    assert_eq!(r.planned.get(attr::remapped_external_cidr), prior.get(attr::remapped_external_cidr));

    let s = GatewaySpec::from_value(&prior).unwrap();
    let mut obs = observed(&s, Some("Connected"));
    obs.configuration.status.as_mut().unwrap().remote = Some(ClusterConfig {
        cidr: Some(ClusterConfigCidr { pod: Some(vec!["10.72.0.0/18".into()]), external: None }),
    });
    let read = state_from_observed(&attr::Gateway::of(&prior), &obs, "liqo-tenant-rome", "rome").value();
    assert_eq!(read.get(attr::remapped_pod_cidrs), &Value::string_list(["10.72.0.0/18"]), "read from the status");
    assert_eq!(read.get(attr::remapped_external_cidr), &Value::Null, "none written yet");
}

/// The endpoint Liqo wrote counts only when the Service the API server holds serves its port: a node port for a
/// NodePort Service, the Service's port otherwise (what Liqo's `handleEndpointStatus` reads).
#[test]
fn endpoint_counts_only_when_its_service_serves_the_port() {
    let endpoint = EndpointStatus { addresses: Some(vec!["10.0.0.5".into()]), port: Some(32158), protocol: None };
    let service = |type_: &str, port: i32, node_port: Option<i32>| -> Service {
        serde_json::from_value(json!({"metadata": {"name": "gw-rome"}, "spec": {"type": type_,
            "ports": [{"port": port, "nodePort": node_port, "protocol": "UDP"}]}}))
        .unwrap()
    };
    let missing = endpoint_served(&endpoint, None, "rome").unwrap_err();
    assert!(missing.contains("Service gw-rome does not exist"), "{missing}");
    let other = endpoint_served(&endpoint, Some(&service("NodePort", 51840, Some(31007))), "rome").unwrap_err();
    assert!(other.contains("serves Some(31007)") && other.contains("Some(32158)"), "{other}");
    assert_eq!(endpoint_served(&endpoint, Some(&service("NodePort", 51840, Some(32158))), "rome"), Ok(()));
    // A NodePort Service whose port (not node port) happens to match does not count.
    assert!(endpoint_served(&endpoint, Some(&service("NodePort", 32158, Some(31007))), "rome").is_err());
    assert_eq!(endpoint_served(&endpoint, Some(&service("LoadBalancer", 32158, None)), "rome"), Ok(()));
    assert_eq!(endpoint_served(&endpoint, Some(&service("ClusterIP", 32158, None)), "rome"), Ok(()));
    assert!(endpoint_served(&endpoint, Some(&service("ClusterIP", 51840, None)), "rome").is_err());
}

#[test]
fn endpoint_needs_an_address_and_a_port() {
    let s = spec("server");
    let Role::Server(ss) = &s.role else { panic!() };
    let mut g = s.gateway_server(ss, "liqo");
    assert!(matches!(endpoint_check(Some(&g), "NodePort"), Verdict::Pending(ref m) if m.contains("template")));
    g.status = Some(GatewayServerStatus {
        endpoint: Some(EndpointStatus { addresses: Some(vec!["".into()]), port: Some(30742), protocol: None }),
        ..Default::default()
    });
    assert!(matches!(endpoint_check(Some(&g), "NodePort"), Verdict::Pending(ref m) if m.contains("NotReady")));
    g.status.as_mut().unwrap().endpoint.as_mut().unwrap().addresses = Some(vec!["".into(), "10.0.0.5".into()]);
    assert!(is_ready(&endpoint_check(Some(&g), "NodePort")));
    // Only the non-empty addresses become outputs.
    let out = Outputs {
        endpoint: g.status.unwrap().endpoint,
        connection_status: String::new(),
        remapped: ClusterConfigCidr::default(),
    };
    let state = fill_outputs(&plan_create(&config("server")).planned, &out);
    assert_eq!(state.get(attr::endpoint_addresses), &Value::string_list(["10.0.0.5"]));
    assert!(state.is_wholly_known());
}

#[test]
fn key_secret_must_belong_to_this_peer() {
    let secret = |label: Option<&str>, keys: &[&str]| Secret {
        metadata: ObjectMeta {
            labels: label.map(|l| BTreeMap::from([(labels::REMOTE_CLUSTER_ID.to_string(), l.to_string())])),
            ..Default::default()
        },
        data: Some(keys.iter().map(|k| (k.to_string(), ByteString(vec![1; 32]))).collect()),
        ..Default::default()
    };
    assert!(matches!(key_secret_check(None, "rome"), Verdict::Pending(_)));
    assert!(is_ready(&key_secret_check(Some(&secret(None, &["privateKey", "publicKey"])), "rome")));
    assert!(is_ready(&key_secret_check(Some(&secret(Some("rome"), &["privateKey", "publicKey"])), "rome")));
    assert!(matches!(key_secret_check(Some(&secret(Some("paris"), &["privateKey", "publicKey"])), "rome"),
        Verdict::Failed { ref reason, .. } if reason.contains("paris")));
    assert!(matches!(key_secret_check(Some(&secret(None, &["publicKey"])), "rome"),
        Verdict::Failed { ref reason, .. } if reason.contains("privateKey")));
}

#[test]
fn failed_create_state_is_wholly_known() {
    let planned = plan_create(&config("server")).planned;
    assert!(!planned.is_wholly_known());
    let partial = unknown_as_null(&planned);
    assert!(partial.is_wholly_known());
    assert_eq!(partial.get(attr::remote_cluster_id), planned.get(attr::remote_cluster_id));
}
