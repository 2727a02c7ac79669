//! Serialisation of minimal objects against the YAML shapes of the reference (Liqo v1.2.0).
use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{NodeSelector, ObjectReference};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Resource;
use kube::api::ObjectMeta;
use serde_json::json;

use super::*;

fn meta(name: &str, ns: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(ns.into()),
        labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
        ..Default::default()
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap()
}

#[test]
fn api_resources_match_the_crds() {
    assert_eq!(PublicKey::plural(&()), "publickeies");
    assert_eq!(PublicKey::api_version(&()), "networking.liqo.io/v1beta1");
    assert_eq!(Network::api_version(&()), "ipam.liqo.io/v1alpha1");
    assert_eq!(Tenant::api_version(&()), "authentication.liqo.io/v1beta1");
    assert_eq!(VirtualNode::api_version(&()), "offloading.liqo.io/v1beta1");
    assert_eq!(ForeignCluster::api_version(&()), "core.liqo.io/v1beta1");
    assert_eq!(NamespaceOffloading::plural(&()), "namespaceoffloadings");
    assert_eq!(WgGatewayServer::plural(&()), "wggatewayservers");
}

#[test]
fn configuration_minimal() {
    let mut c = Configuration::new(
        "rome",
        ConfigurationSpec {
            remote: Some(ClusterConfig {
                cidr: Some(ClusterConfigCidr {
                    pod: Some(vec!["10.243.0.0/16".into()]),
                    external: Some(vec!["10.70.0.0/16".into()]),
                }),
            }),
            ..Default::default()
        },
    );
    c.metadata = meta("rome", "liqo-tenant-rome", &[(labels::REMOTE_CLUSTER_ID, "rome")]);
    assert_eq!(
        to_json(&c),
        json!({
            "apiVersion": "networking.liqo.io/v1beta1", "kind": "Configuration",
            "metadata": {"name": "rome", "namespace": "liqo-tenant-rome",
                         "labels": {"liqo.io/remote-cluster-id": "rome"}},
            "spec": {"remote": {"cidr": {"pod": ["10.243.0.0/16"], "external": ["10.70.0.0/16"]}}}
        })
    );
}

#[test]
fn configuration_readiness_follows_condition_generation() {
    let mut c: Configuration = serde_json::from_value(json!({
        "apiVersion": "networking.liqo.io/v1beta1", "kind": "Configuration",
        "metadata": {"name": "x", "generation": 2},
        "spec": {},
        "status": {
            "remote": {"cidr": {"pod": ["10.0.0.0/16"], "external": ["10.1.0.0/16"]}},
            "conditions": [{"type": "NetworkCIDRsConfigured", "status": "True", "observedGeneration": 1,
                            "reason": "NetworkCIDRsConfigured", "message": "",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        }
    }))
    .unwrap();
    assert!(!c.cidrs_configured(), "stale generation must not count as configured");
    c.metadata.generation = Some(1);
    assert!(c.cidrs_configured());
    c.status.as_mut().unwrap().conditions = None;
    assert!(c.cidrs_configured(), "1.0–1.1 fallback on status.remote");
}

#[test]
fn public_key_bytes_are_base64() {
    let key = [7u8; 32];
    let mut pk = PublicKey::new("milan", PublicKeySpec { public_key: Some(ByteString(key.to_vec())) });
    pk.metadata = meta("milan", "t", &[(labels::REMOTE_CLUSTER_ID, "milan"), (labels::GATEWAY_RESOURCE, "true")]);
    let v = to_json(&pk);
    assert_eq!(v["spec"], json!({"publicKey": "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="}));
    assert!(v.get("status").is_none());
}

#[test]
fn gateway_server_minimal() {
    let gs = GatewayServer::new(
        "server",
        GatewayServerSpec {
            endpoint: Some(GatewayServerEndpoint {
                port: Some(51840),
                service_type: Some("NodePort".into()),
                node_port: Some(30742),
                load_balancer_ip: None,
            }),
            mtu: Some(1340),
            secret_ref: Some(SecretReference { name: Some("gw-keys".into()) }),
            server_template_ref: Some(ObjectReference {
                api_version: Some("networking.liqo.io/v1beta1".into()),
                kind: Some("WgGatewayServerTemplate".into()),
                name: Some(labels::WIREGUARD_SERVER_TEMPLATE.into()),
                namespace: Some("liqo".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    assert_eq!(
        to_json(&gs)["spec"],
        json!({
            "endpoint": {"port": 51840, "serviceType": "NodePort", "nodePort": 30742},
            "mtu": 1340,
            "secretRef": {"name": "gw-keys"},
            "serverTemplateRef": {"apiVersion": "networking.liqo.io/v1beta1", "kind": "WgGatewayServerTemplate",
                                  "name": "wireguard-server", "namespace": "liqo"}
        })
    );
    let lb = GatewayServerEndpoint { load_balancer_ip: Some("1.2.3.4".into()), ..Default::default() };
    assert_eq!(to_json(&lb), json!({"loadBalancerIP": "1.2.3.4"}));
}

#[test]
fn gateway_client_and_status_round_trip() {
    let gc: GatewayClient = serde_json::from_value(json!({
        "apiVersion": "networking.liqo.io/v1beta1", "kind": "GatewayClient",
        "metadata": {"name": "client", "namespace": "t"},
        "spec": {"endpoint": {"addresses": ["127.0.0.1"], "port": 30742, "protocol": "UDP"}, "mtu": 1340,
                 "secretRef": {"name": "gw-keys"}},
        "status": {"clientRef": {"name": "client"}, "secretRef": {"name": "gw-keys"}}
    }))
    .unwrap();
    let st = gc.status.as_ref().unwrap();
    assert_eq!(st.client_ref.as_ref().and_then(|r| r.name.as_deref()), Some("client"));
    assert!(gc.spec.endpoint.as_ref().unwrap().is_ready());
    assert!(!EndpointStatus { addresses: Some(vec!["".into()]), port: Some(1), protocol: None }.is_ready());
}

#[test]
fn tenant_minimal() {
    let t = Tenant::new(
        "rome",
        TenantSpec {
            cluster_id: Some("rome".into()),
            authz_policy: Some(AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE.into()),
            tenant_condition: Some(TENANT_CONDITION_ACTIVE.into()),
            ..Default::default()
        },
    );
    assert_eq!(
        to_json(&t)["spec"],
        json!({"clusterID": "rome", "authzPolicy": "TolerateNoHandshake", "tenantCondition": "Active"})
    );
}

#[test]
fn resource_slice_minimal_and_conditions() {
    let resources: BTreeMap<String, Quantity> =
        [("cpu", "4"), ("memory", "8Gi"), ("pods", "110")].map(|(k, v)| (k.to_string(), Quantity(v.into()))).into();
    let rs = ResourceSlice::new(
        "milan",
        ResourceSliceSpec {
            class: Some(RESOURCE_SLICE_CLASS_DEFAULT.into()),
            provider_cluster_id: Some("milan".into()),
            resources: Some(resources),
            ..Default::default()
        },
    );
    assert_eq!(
        to_json(&rs)["spec"],
        json!({"class": "default", "providerClusterID": "milan",
               "resources": {"cpu": "4", "memory": "8Gi", "pods": "110"}})
    );
    let st: ResourceSliceStatus = serde_json::from_value(json!({
        "conditions": [
            {"type": "Authentication", "status": "Accepted", "reason": "ResourceSliceAuthenticationAccepted"},
            {"type": "Resources", "status": "Denied", "reason": "ResourceSliceResourcesDenied", "message": "no"}
        ]
    }))
    .unwrap();
    assert!(!st.is_accepted());
    assert_eq!(st.condition(RESOURCE_SLICE_CONDITION_RESOURCES).unwrap().message.as_deref(), Some("no"));
}

#[test]
fn namespace_offloading_sends_empty_terms_not_null() {
    let nso = NamespaceOffloading::new(
        labels::NAMESPACE_OFFLOADING_NAME,
        NamespaceOffloadingSpec {
            namespace_mapping_strategy: Some(MAPPING_DEFAULT_NAME.into()),
            pod_offloading_strategy: Some(POD_OFFLOADING_LOCAL_AND_REMOTE.into()),
            cluster_selector: Some(NodeSelector { node_selector_terms: vec![] }),
            ..Default::default()
        },
    );
    assert_eq!(
        to_json(&nso)["spec"],
        json!({"namespaceMappingStrategy": "DefaultName", "podOffloadingStrategy": "LocalAndRemote",
               "clusterSelector": {"nodeSelectorTerms": []}})
    );
}

#[test]
fn virtual_node_and_foreign_cluster_parse() {
    let vn: VirtualNode = serde_json::from_value(json!({
        "apiVersion": "offloading.liqo.io/v1beta1", "kind": "VirtualNode",
        "metadata": {"name": "milan", "namespace": "t"},
        "spec": {"clusterID": "milan", "createNode": true, "resourceQuota": {"hard": {"cpu": "4"}},
                 "template": {"spec": {}}},
        "status": {"conditions": [{"type": "VirtualKubelet", "status": "Running"}, {"type": "Node", "status": "Running"}]}
    }))
    .unwrap();
    assert_eq!(vn.status.unwrap().condition(VIRTUAL_NODE_CONDITION_NODE).unwrap().status, VIRTUAL_NODE_RUNNING);
    let fc: ForeignCluster = serde_json::from_value(json!({
        "apiVersion": "core.liqo.io/v1beta1", "kind": "ForeignCluster",
        "metadata": {"name": "milan"}, "spec": {"clusterID": "milan"},
        "status": {"role": "Provider", "modules": {
            "networking": {"enabled": true, "conditions": [{"type": "NetworkConnectionStatus", "status": "Established"}]},
            "authentication": {"enabled": true},
            "offloading": {"enabled": false}}}
    }))
    .unwrap();
    let modules = fc.status.unwrap().modules.unwrap();
    assert!(modules.networking.is_healthy());
    assert!(!modules.offloading.is_healthy());
}

#[test]
fn an_image_tag_is_its_release() {
    assert_eq!(super::image_tag("ghcr.io/liqotech/liqo-controller-manager:v1.2.0"), Some("v1.2.0"));
    assert_eq!(super::image_tag("localhost:5000/liqo/cm:v1.0.3@sha256:abcd"), Some("v1.0.3"));
    assert_eq!(super::image_tag("localhost:5000/liqo/cm"), None);
    assert_eq!(super::image_tag("cm@sha256:abcd"), None);
}
