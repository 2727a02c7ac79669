//! Liqo's networking controllers: Configuration, GatewayServer/GatewayClient (with their rendered
//! WgGatewayServer/WgGatewayClient and key Secret), and the Connection a gateway pod would create.
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use base64::Engine;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ObjectReference, Pod, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, OwnerReference, Time};
use kube::api::ListParams;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use liqo_schema::liqo::labels::{self, GATEWAY_RESOURCE, REMOTE_CLUSTER_ID};
use liqo_schema::liqo::{
    CONNECTION_CONNECTED, CONNECTION_CONNECTING, CONNECTION_ERROR, ClusterConfig, ClusterConfigCidr, Configuration,
    ConfigurationStatus, Connection, ConnectionSpec, EndpointStatus, GatewayClient, GatewayClientStatus, GatewayServer,
    GatewayServerStatus, NETWORK_CIDRS_CONFIGURED, Network, PublicKey, SecretReference, WgGatewayClient,
    WgGatewayClientSpec, WgGatewayServer, WgGatewayServerSpec, published_port,
};
use serde_json::json;
use x25519_dalek::{PublicKey as WgPublicKey, StaticSecret};

use super::context::{Ctx, Topic};
use super::ops::{self, describe, is_deleting, label};
use super::supervisor::drive;

/// While a gateway waits for something no watch reports (an unlabelled key Secret), look again this often.
const WAIT_RETRY: Duration = Duration::from_secs(1);
const NODE_PORT_RANGE: std::ops::RangeInclusive<i32> = 30000..=32767;
/// The gateway endpoint every simulated cluster advertises: the ground is on loopback.
const LOOPBACK: &str = "127.0.0.1";
const SERVER: &str = "Server";
const CLIENT: &str = "Client";

// ---------------------------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------------------------

pub async fn configurations(ctx: Arc<Ctx>) {
    let controller = Controller::new(Api::<Configuration>::all(ctx.cluster.client.clone()), watcher::Config::default());
    drive(ctx, controller, reconcile_configuration).await
}

async fn reconcile_configuration(conf: Arc<Configuration>, ctx: Arc<Ctx>) -> Result<Action> {
    let cluster = &ctx.cluster;
    if is_deleting(&*conf) {
        return Ok(Action::await_change());
    }
    if label(&*conf, REMOTE_CLUSTER_ID).is_none() {
        let note =
            format!("missing label {REMOTE_CLUSTER_ID}: Liqo ignores this Configuration until it names the peer");
        cluster.events.warning(&conf.object_ref(&()), "MissingLabel", &note).await;
        return Ok(Action::await_change());
    }
    let api: Api<Configuration> = Api::namespaced(cluster.client.clone(), &conf.namespace().unwrap_or_default());
    let mut conf = (*conf).clone();
    if conf.spec.local.is_none()
        && let Some(own) = own_cidrs(&ctx).await?
    {
        // Liqo fills spec.local by Update; peering tools must not own or diff it.
        let local = ClusterConfig { cidr: Some(own) };
        conf = ops::merge_patch(&api, &conf, json!({"spec": {"local": local}})).await?;
    }

    let remote = conf.spec.remote.as_ref().and_then(|r| r.cidr.clone()).unwrap_or_default();
    let filled =
        |cidrs: &Option<Vec<String>>| cidrs.as_ref().is_some_and(|v| !v.is_empty() && v.iter().all(|c| !c.is_empty()));
    let configured = filled(&remote.pod) && filled(&remote.external);
    let (status, reason, message) = if configured {
        ("True", "NetworkCIDRsConfigured", "the remote network CIDRs are configured")
    } else {
        ("False", "NetworkCIDRsNotConfigured", "waiting for spec.remote.cidr.pod and spec.remote.cidr.external")
    };
    let mut conditions = conf.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default();
    upsert_condition(
        &mut conditions,
        Condition {
            type_: NETWORK_CIDRS_CONFIGURED.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            observed_generation: conf.metadata.generation,
            last_transition_time: now(),
        },
    );
    let desired = ConfigurationStatus {
        remote: configured.then_some(ClusterConfig { cidr: Some(remote) }),
        conditions: Some(conditions),
    };
    if ops::status_json(conf.status.as_ref()) != serde_json::to_value(&desired)? {
        ops::apply_status(cluster, &api, &conf, serde_json::to_value(&desired)?).await?;
        log_line!(cluster.name, "{}: NetworkCIDRsConfigured={status}", describe(&conf));
    }
    Ok(Action::await_change())
}

/// The cluster's own pod and external CIDRs (`status.cidr` of its Networks in the Liqo namespace), if known.
async fn own_cidrs(ctx: &Ctx) -> Result<Option<ClusterConfigCidr>> {
    let api: Api<Network> = Api::namespaced(ctx.cluster.client.clone(), labels::DEFAULT_LIQO_NAMESPACE);
    let networks = api.list(&ListParams::default().labels(labels::NETWORK_TYPE)).await.context("listing Networks")?;
    let of_type = |kind: &str| -> Vec<String> {
        networks
            .items
            .iter()
            .filter(|n| label(*n, labels::NETWORK_TYPE) == Some(kind))
            .filter_map(|n| n.status.as_ref()?.cidr.clone())
            .collect()
    };
    let (pod, external) = (of_type(labels::NETWORK_TYPE_POD_CIDR), of_type(labels::NETWORK_TYPE_EXTERNAL_CIDR));
    Ok((!pod.is_empty() && !external.is_empty())
        .then_some(ClusterConfigCidr { pod: Some(pod), external: Some(external) }))
}

fn upsert_condition(conditions: &mut Vec<Condition>, mut new: Condition) {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(existing) => {
            if existing.status == new.status {
                new.last_transition_time = existing.last_transition_time.clone();
            }
            *existing = new;
        }
        None => conditions.push(new),
    }
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

// ---------------------------------------------------------------------------------------------------------------
// Gateways
// ---------------------------------------------------------------------------------------------------------------

pub async fn gateway_servers(ctx: Arc<Ctx>) {
    let client = ctx.cluster.client.clone();
    let controller = Controller::new(Api::<GatewayServer>::all(client.clone()), watcher::Config::default())
        .owns(Api::<Connection>::all(client), watcher::Config::default())
        .reconcile_all_on(ctx.cluster.subscribe(Topic::Network));
    drive(ctx, controller, reconcile_server).await
}

pub async fn gateway_clients(ctx: Arc<Ctx>) {
    let client = ctx.cluster.client.clone();
    let controller = Controller::new(Api::<GatewayClient>::all(client.clone()), watcher::Config::default())
        .owns(Api::<Connection>::all(client), watcher::Config::default())
        .reconcile_all_on(ctx.cluster.subscribe(Topic::Network));
    drive(ctx, controller, reconcile_client).await
}

/// What both gateway kinds share for key handling and the Connection.
struct Gateway {
    role: &'static str,
    namespace: String,
    name: String,
    peer: String,
    owner: OwnerReference,
    regarding: ObjectReference,
    secret_ref: Option<String>,
}

impl Gateway {
    fn of<K: Resource<DynamicType = ()>>(
        gw: &K,
        role: &'static str,
        secret_ref: Option<&SecretReference>,
    ) -> Option<Gateway> {
        Some(Gateway {
            role,
            namespace: gw.namespace()?,
            name: gw.name_any(),
            peer: label(gw, REMOTE_CLUSTER_ID)?.to_owned(),
            owner: gw.controller_owner_ref(&())?,
            regarding: gw.object_ref(&()),
            secret_ref: secret_ref.and_then(|r| r.name.clone()).filter(|n| !n.is_empty()),
        })
    }

    fn child_meta(&self, name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(self.namespace.clone()),
            labels: Some(BTreeMap::from([(REMOTE_CLUSTER_ID.to_owned(), self.peer.clone())])),
            annotations: Some(ops::simulated_annotations()),
            owner_references: Some(vec![self.owner.clone()]),
            ..Default::default()
        }
    }
}

async fn missing_label<K: Resource<DynamicType = ()>>(ctx: &Ctx, gw: &K) -> Action {
    let note = format!("missing label {REMOTE_CLUSTER_ID}: Liqo's gateway controller refuses a gateway without it");
    ctx.cluster.events.warning(&gw.object_ref(&()), "MissingLabel", &note).await;
    Action::await_change()
}

async fn reconcile_server(gs: Arc<GatewayServer>, ctx: Arc<Ctx>) -> Result<Action> {
    if is_deleting(&*gs) {
        return Ok(Action::await_change());
    }
    let Some(gw) = Gateway::of(&*gs, SERVER, gs.spec.secret_ref.as_ref()) else {
        return Ok(missing_label(&ctx, &*gs).await);
    };
    let Some(secret) = resolve_key_secret(&ctx, &gw).await? else {
        return Ok(Action::requeue(WAIT_RETRY));
    };
    let shape = match service_shape(&gs) {
        Ok(shape) => shape,
        Err(problem) => {
            ctx.cluster.events.warning(&gw.regarding, "InvalidEndpoint", &problem).await;
            return Ok(Action::await_change());
        }
    };
    let api: Api<WgGatewayServer> = Api::namespaced(ctx.cluster.client.clone(), &gw.namespace);
    let service = json!({"spec": {
        "type": gs.spec.endpoint.as_ref().and_then(|e| e.service_type.clone()).unwrap_or_else(|| "ClusterIP".into()),
        "ports": [{"name": "wireguard", "port": gs.spec.endpoint.as_ref().and_then(|e| e.port), "protocol": "UDP"}],
    }});
    let wg = WgGatewayServer {
        metadata: gw.child_meta(&gw.name),
        spec: WgGatewayServerSpec {
            deployment: Some(deployment_template(&gw)),
            service: Some(service),
            secret_ref: Some(SecretReference { name: secret.metadata.name.clone() }),
        },
        status: None,
    };
    let wg = ensure_wg(&api, wg, |w| &w.spec.secret_ref).await?;
    let wg_owner = wg.controller_owner_ref(&()).context("WgGatewayServer without UID")?;
    let service = ensure_server_service(&ctx, &gw, &shape, wg_owner.clone()).await?;
    let endpoint = server_endpoint(&shape, &service)?;
    let secret_ref = secret_object_ref(&secret);
    let wg_status = json!({"endpoint": endpoint, "secretRef": secret_ref});
    if ops::status_json(wg.status.as_ref()) != wg_status {
        ops::apply_status(&ctx.cluster, &api, &wg, wg_status).await?;
    }

    let desired = GatewayServerStatus {
        server_ref: Some(wg.object_ref(&())),
        endpoint: Some(endpoint),
        secret_ref: Some(secret_ref),
        internal_endpoint: None,
    };
    let gs_api: Api<GatewayServer> = Api::namespaced(ctx.cluster.client.clone(), &gw.namespace);
    if ops::status_json(gs.status.as_ref()) != serde_json::to_value(&desired)? {
        ops::apply_status(&ctx.cluster, &gs_api, &*gs, serde_json::to_value(&desired)?).await?;
        log_line!(ctx.cluster.name, "{}: endpoint {:?}", describe(&*gs), desired.endpoint);
    }
    ensure_gateway_pod(&ctx, &gw, &secret, wg_owner).await?;
    reconcile_connection(&ctx, &gw, &secret, wg.object_ref(&())).await
}

/// Liqo's WgGatewayServer controller renders Service `gw-<gateway>` beside the Deployment from the server's
/// template (the provider checks for it: a Deployment without its Service is the half-made render Liqo 1.2.0 never
/// repairs) and publishes the endpoint from that Service. The simulator does both the same way, so the endpoint
/// names a port the Service serves: the API server allocates the node port unless `spec.endpoint.nodePort` asks
/// for one. A Service of another shape (the server's endpoint changed) is made again.
async fn ensure_server_service(
    ctx: &Ctx,
    gw: &Gateway,
    shape: &ServiceShape,
    wg_owner: OwnerReference,
) -> Result<Service> {
    let name = format!("gw-{}", gw.name);
    let services: Api<Service> = Api::namespaced(ctx.cluster.client.clone(), &gw.namespace);
    if let Some(existing) = services.get_opt(&name).await.with_context(|| format!("reading Service {name}"))? {
        if shape.fits(&existing) {
            return Ok(existing);
        }
        ops::delete_and_check(&services, &name).await?;
    }
    let service = json!({
        "metadata": {"name": name, "namespace": gw.namespace, "ownerReferences": [wg_owner],
                     "annotations": ops::simulated_annotations(), "labels": {REMOTE_CLUSTER_ID: gw.peer}},
        "spec": {"type": shape.type_, "selector": gateway_selector(gw),
                 "ports": [{"name": "wireguard", "port": shape.port, "nodePort": shape.node_port, "protocol": "UDP"}]},
    });
    ops::create_or_get(&services, &serde_json::from_value(service)?).await
}

async fn reconcile_client(gc: Arc<GatewayClient>, ctx: Arc<Ctx>) -> Result<Action> {
    if is_deleting(&*gc) {
        return Ok(Action::await_change());
    }
    let Some(gw) = Gateway::of(&*gc, CLIENT, gc.spec.secret_ref.as_ref()) else {
        return Ok(missing_label(&ctx, &*gc).await);
    };
    let Some(secret) = resolve_key_secret(&ctx, &gw).await? else {
        return Ok(Action::requeue(WAIT_RETRY));
    };
    let api: Api<WgGatewayClient> = Api::namespaced(ctx.cluster.client.clone(), &gw.namespace);
    let wg = WgGatewayClient {
        metadata: gw.child_meta(&gw.name),
        spec: WgGatewayClientSpec {
            deployment: Some(deployment_template(&gw)),
            secret_ref: Some(SecretReference { name: secret.metadata.name.clone() }),
        },
        status: None,
    };
    let wg = ensure_wg(&api, wg, |w| &w.spec.secret_ref).await?;
    let secret_ref = secret_object_ref(&secret);
    let wg_status = json!({"secretRef": secret_ref});
    if ops::status_json(wg.status.as_ref()) != wg_status {
        ops::apply_status(&ctx.cluster, &api, &wg, wg_status).await?;
    }

    let desired = GatewayClientStatus {
        client_ref: Some(wg.object_ref(&())),
        secret_ref: Some(secret_ref),
        internal_endpoint: None,
    };
    let gc_api: Api<GatewayClient> = Api::namespaced(ctx.cluster.client.clone(), &gw.namespace);
    if ops::status_json(gc.status.as_ref()) != serde_json::to_value(&desired)? {
        ops::apply_status(&ctx.cluster, &gc_api, &*gc, serde_json::to_value(&desired)?).await?;
        log_line!(ctx.cluster.name, "{}: client ready", describe(&*gc));
    }
    ensure_gateway_pod(&ctx, &gw, &secret, wg.controller_owner_ref(&()).context("WgGatewayClient without UID")?)
        .await?;
    reconcile_connection(&ctx, &gw, &secret, wg.object_ref(&())).await
}

/// Annotation on a simulated gateway pod: the public key (base64) of the pair its WireGuard container loaded.
const LOADED_KEY_ANNOTATION: &str = "liqo-simulator/loaded-public-key";
/// Labels of Liqo's gateway pods (and their Deployment's selector), as its templates set them.
const GATEWAY_COMPONENT: &str = "networking.liqo.io/component";
const GATEWAY_NAME: &str = "networking.liqo.io/gateway-name";

fn gateway_selector(gw: &Gateway) -> BTreeMap<String, String> {
    BTreeMap::from([(GATEWAY_COMPONENT.to_owned(), "gateway".to_owned()), (GATEWAY_NAME.to_owned(), gw.name.clone())])
}

/// Liqo's WgGateway controller renders Deployment `gw-<gateway>`, whose `wireguard-config` volume holds the key
/// Secret, and the wireguard container reads the private key once, at start (`keys.go`). The simulator plays the
/// Deployment and its ReplicaSet: one pod (never scheduled: no kubelet here) that records the public key of the
/// pair as it was when the pod was created; a deleted pod is replaced by one that reads the Secret again.
async fn ensure_gateway_pod(ctx: &Ctx, gw: &Gateway, secret: &Secret, wg_owner: OwnerReference) -> Result<()> {
    let client = ctx.cluster.client.clone();
    let name = format!("gw-{}", gw.name);
    let selector = gateway_selector(gw);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &gw.namespace);
    let deployment = match deployments.get_opt(&name).await.with_context(|| format!("reading Deployment {name}"))? {
        Some(d) => d,
        None => {
            let template = json!({
                "metadata": {"name": name, "namespace": gw.namespace, "ownerReferences": [wg_owner],
                             "annotations": ops::simulated_annotations(), "labels": {REMOTE_CLUSTER_ID: gw.peer}},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": selector},
                    "template": {"metadata": {"labels": selector}, "spec": {
                        "containers": [{"name": "wireguard", "image": "liqo-simulator/gateway-wireguard"}],
                        "volumes": [{"name": "wireguard-config", "secret": {"secretName": secret.name_any()}}],
                    }},
                },
            });
            ops::create_or_get(&deployments, &serde_json::from_value(template)?).await?
        }
    };
    let pods: Api<Pod> = Api::namespaced(client, &gw.namespace);
    let list_selector = selector.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",");
    let running = pods.list(&ListParams::default().labels(&list_selector)).await.context("listing gateway pods")?;
    if running.items.iter().any(|p| !is_deleting(p)) {
        return Ok(());
    }
    let public = secret.data.as_ref().and_then(|d| d.get(labels::WIREGUARD_PUBLIC_KEY)).map(|b| b.0.clone());
    let Some(public) = public else { return Ok(()) };
    let mut pod_labels = selector.clone();
    pod_labels.insert(REMOTE_CLUSTER_ID.to_owned(), gw.peer.clone());
    let mut annotations = ops::simulated_annotations();
    annotations.insert(LOADED_KEY_ANNOTATION.to_owned(), base64::engine::general_purpose::STANDARD.encode(&public));
    let pod = json!({
        "metadata": {
            "name": format!("{name}-{:08x}", rand::random::<u32>()),
            "namespace": gw.namespace,
            "labels": pod_labels,
            "annotations": annotations,
            "ownerReferences": [deployment.controller_owner_ref(&()).context("Deployment without UID")?],
        },
        "spec": {
            "automountServiceAccountToken": false,
            "containers": [{"name": "wireguard", "image": "liqo-simulator/gateway-wireguard"}],
        },
    });
    let pod = ops::create_or_get(&pods, &serde_json::from_value(pod)?).await?;
    log_line!(
        ctx.cluster.name,
        "{}: gateway started with the key pair of Secret {}",
        describe(&pod),
        secret.name_any()
    );
    Ok(())
}

/// The public key the running gateway for `peer` in `namespace` loaded at start; `None` while none runs.
async fn loaded_public_key(client: &kube::Client, namespace: &str, peer: &str) -> Result<Option<Vec<u8>>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let selector = format!("{GATEWAY_COMPONENT}=gateway,{REMOTE_CLUSTER_ID}={peer}");
    let list = pods.list(&ListParams::default().labels(&selector)).await.context("listing gateway pods")?;
    Ok(list
        .items
        .iter()
        .filter(|p| !is_deleting(*p))
        .filter_map(|p| p.annotations().get(LOADED_KEY_ANNOTATION))
        .find_map(|k| base64::engine::general_purpose::STANDARD.decode(k).ok()))
}

/// A placeholder for the gateway Deployment Liqo renders from its template (no pod runs on the ground).
fn deployment_template(gw: &Gateway) -> serde_json::Value {
    let selector = json!({"networking.liqo.io/component": "gateway", "networking.liqo.io/active": gw.name});
    json!({"spec": {
        "replicas": 0,
        "selector": {"matchLabels": selector},
        "template": {"metadata": {"labels": selector}, "spec": {"containers": [{"name": "gateway"}]}},
    }})
}

/// Creates the rendered WgGateway object (owned by the gateway, with Liqo's finalizer) or keeps its key Secret
/// reference current.
async fn ensure_wg<K>(api: &Api<K>, mut desired: K, secret_ref: fn(&K) -> &Option<SecretReference>) -> Result<K>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let name = desired.name_any();
    match api.get_opt(&name).await.with_context(|| format!("reading {} {name}", K::kind(&())))? {
        Some(existing) if secret_ref(&existing) == secret_ref(&desired) => Ok(existing),
        Some(existing) => {
            let patch = json!({"spec": {"secretRef": secret_ref(&desired)}});
            ops::merge_patch(api, &existing, patch).await
        }
        None => {
            desired.meta_mut().finalizers = Some(vec![labels::GATEWAY_CLUSTERROLEBINDING_FINALIZER.to_owned()]);
            ops::create_or_get(api, &desired).await
        }
    }
}

fn secret_object_ref(secret: &Secret) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Secret".into()),
        name: secret.metadata.name.clone(),
        namespace: secret.metadata.namespace.clone(),
        uid: secret.metadata.uid.clone(),
        ..Default::default()
    }
}

/// Liqo's key Secret handling: check the referenced Secret (adding missing labels) or generate `gw-<name>`,
/// then find the unique Secret labelled for the peer. `None` = not ready (an Event says why).
async fn resolve_key_secret(ctx: &Ctx, gw: &Gateway) -> Result<Option<Secret>> {
    let events = &ctx.cluster.events;
    let api: Api<Secret> = Api::namespaced(ctx.cluster.client.clone(), &gw.namespace);
    match &gw.secret_ref {
        Some(name) => {
            let Some(secret) =
                api.get_opt(name).await.with_context(|| format!("reading Secret {}/{name}", gw.namespace))?
            else {
                let note = format!("key Secret {}/{name} named in spec.secretRef does not exist", gw.namespace);
                events.warning(&gw.regarding, "KeysSecretNotFound", &note).await;
                return Ok(None);
            };
            let data = secret.data.clone().unwrap_or_default();
            let missing: Vec<&str> = [labels::WIREGUARD_PRIVATE_KEY, labels::WIREGUARD_PUBLIC_KEY]
                .into_iter()
                .filter(|k| !data.contains_key(*k))
                .collect();
            if !missing.is_empty() {
                let note = format!("key Secret {}/{name} lacks data keys {missing:?}", gw.namespace);
                events.warning(&gw.regarding, "InvalidKeysSecret", &note).await;
                return Ok(None);
            }
            match label(&secret, REMOTE_CLUSTER_ID) {
                Some(id) if id != gw.peer => {
                    let note = format!(
                        "key Secret {}/{name} has label {REMOTE_CLUSTER_ID}={id} but the gateway is for {}",
                        gw.namespace, gw.peer
                    );
                    events.warning(&gw.regarding, "InvalidKeysSecret", &note).await;
                    return Ok(None);
                }
                Some(_) if label(&secret, GATEWAY_RESOURCE) == Some(labels::TRUE) => {}
                _ => {
                    // Liqo ≥1.0.1 enforces its labels on a referenced Secret.
                    let patch =
                        json!({"metadata": {"labels": {REMOTE_CLUSTER_ID: gw.peer, GATEWAY_RESOURCE: labels::TRUE}}});
                    ops::merge_patch(&api, &secret, patch).await?;
                    log_line!(ctx.cluster.name, "Secret {}/{name}: added Liqo's gateway labels", gw.namespace);
                }
            }
        }
        None => {
            let name = format!("gw-{}", gw.name);
            if api.get_opt(&name).await.with_context(|| format!("reading Secret {}/{name}", gw.namespace))?.is_none() {
                ops::create_or_get(&api, &generated_keys(gw, &name)).await?;
                log_line!(ctx.cluster.name, "Secret {}/{name}: generated WireGuard keys", gw.namespace);
            }
        }
    }
    let selector = format!("{GATEWAY_RESOURCE}={},{REMOTE_CLUSTER_ID}={}", labels::TRUE, gw.peer);
    let mut found = api.list(&ListParams::default().labels(&selector)).await.context("listing key Secrets")?.items;
    match found.len() {
        1 => Ok(found.pop()),
        0 => Ok(None),
        n => {
            let note = format!("{n} Secrets labelled {selector} in namespace {}; Liqo needs exactly one", gw.namespace);
            events.warning(&gw.regarding, "MultipleKeysSecrets", &note).await;
            Ok(None)
        }
    }
}

/// The Secret Liqo generates when a gateway names none: a clamped X25519 key pair, raw bytes.
fn generated_keys(gw: &Gateway, name: &str) -> Secret {
    let private = StaticSecret::from(rand::random::<[u8; 32]>());
    let public = WgPublicKey::from(&private);
    let mut meta = gw.child_meta(name);
    meta.labels.get_or_insert_default().insert(GATEWAY_RESOURCE.into(), labels::TRUE.into());
    Secret {
        metadata: meta,
        data: Some(BTreeMap::from([
            (labels::WIREGUARD_PRIVATE_KEY.to_owned(), ByteString(private.to_bytes().to_vec())),
            (labels::WIREGUARD_PUBLIC_KEY.to_owned(), ByteString(public.as_bytes().to_vec())),
        ])),
        ..Default::default()
    }
}

/// The gateway Service a server's `spec.endpoint` asks Liqo's template for.
struct ServiceShape {
    type_: String,
    port: i32,
    node_port: Option<i32>,
    load_balancer_ip: Option<String>,
}

impl ServiceShape {
    /// Whether `service` is of this shape (a node port the API server allocated fits any).
    fn fits(&self, service: &Service) -> bool {
        let spec = service.spec.as_ref();
        let first = spec.and_then(|s| s.ports.as_ref()).and_then(|p| p.first());
        spec.and_then(|s| s.type_.as_deref()) == Some(self.type_.as_str())
            && first.map(|p| p.port) == Some(self.port)
            && (self.node_port.is_none() || first.and_then(|p| p.node_port) == self.node_port)
    }
}

fn service_shape(gs: &GatewayServer) -> Result<ServiceShape, String> {
    let spec = gs.spec.endpoint.clone().unwrap_or_default();
    let port = spec
        .port
        .filter(|p| *p > 0)
        .ok_or_else(|| "spec.endpoint.port is not set; Liqo's template cannot render the gateway Service".to_owned())?;
    let type_ = spec.service_type.unwrap_or_else(|| "ClusterIP".into());
    match type_.as_str() {
        "NodePort" | "LoadBalancer" | "ClusterIP" => {}
        other => return Err(format!("spec.endpoint.serviceType {other} is not supported by Liqo's gateway")),
    }
    let node_port = spec.node_port.filter(|_| type_ == "NodePort");
    if let Some(p) = node_port.filter(|p| !NODE_PORT_RANGE.contains(p)) {
        return Err(format!("spec.endpoint.nodePort {p} is outside the node port range 30000-32767"));
    }
    Ok(ServiceShape { type_, port, node_port, load_balancer_ip: spec.load_balancer_ip.filter(|ip| !ip.is_empty()) })
}

/// What Liqo's `handleEndpointStatus` publishes for the gateway Service, on a loopback ground: its published port,
/// at the load balancer's address or at loopback (the node's address on this ground).
fn server_endpoint(shape: &ServiceShape, service: &Service) -> Result<EndpointStatus> {
    let port = published_port(service).with_context(|| format!("Service {} has no port yet", service.name_any()))?;
    let address = match shape.type_.as_str() {
        "LoadBalancer" => shape.load_balancer_ip.clone().unwrap_or_else(|| LOOPBACK.into()),
        _ => LOOPBACK.to_owned(),
    };
    Ok(EndpointStatus { addresses: Some(vec![address]), port: Some(port), protocol: Some("UDP".into()) })
}

// ---------------------------------------------------------------------------------------------------------------
// Connection
// ---------------------------------------------------------------------------------------------------------------

/// Creates the Connection once a PublicKey for the peer exists, then sets Connecting and the verdict.
async fn reconcile_connection(ctx: &Ctx, gw: &Gateway, own_secret: &Secret, wg_ref: ObjectReference) -> Result<Action> {
    let client = ctx.cluster.client.clone();
    let api: Api<Connection> = Api::namespaced(client.clone(), &gw.namespace);
    let name = format!("gw-{}", gw.name);
    let connection =
        match api.get_opt(&name).await.with_context(|| format!("reading Connection {}/{name}", gw.namespace))? {
            Some(existing) => existing,
            None => {
                if own_public_key(ctx, gw).await?.is_none() {
                    return Ok(Action::await_change());
                }
                let desired = Connection {
                    metadata: gw.child_meta(&name),
                    spec: ConnectionSpec { type_: Some(gw.role.into()), gateway_ref: Some(wg_ref) },
                    status: None,
                };
                ops::create_or_get(&api, &desired).await?
            }
        };
    let current = connection.status.as_ref().and_then(|s| s.value.clone());
    let connection = if current.is_none() {
        let written =
            ops::apply_status(&ctx.cluster, &api, &connection, json!({"value": CONNECTION_CONNECTING})).await?;
        log_line!(ctx.cluster.name, "{}: {CONNECTION_CONNECTING}", describe(&connection));
        written
    } else {
        connection
    };
    let (value, why) = verdict(ctx, gw, own_secret).await?;
    if connection.status.as_ref().and_then(|s| s.value.as_deref()) != Some(value) {
        ops::apply_status(&ctx.cluster, &api, &connection, json!({"value": value})).await?;
        let regarding = connection.object_ref(&());
        match value {
            CONNECTION_ERROR => ctx.cluster.events.warning(&regarding, "ConnectionError", &why).await,
            _ => ctx.cluster.events.normal(&regarding, &format!("Connection{value}"), &why).await,
        }
    }
    Ok(Action::await_change())
}

async fn own_public_key(ctx: &Ctx, gw: &Gateway) -> Result<Option<PublicKey>> {
    let api: Api<PublicKey> = Api::namespaced(ctx.cluster.client.clone(), &gw.namespace);
    let selector = format!("{REMOTE_CLUSTER_ID}={}", gw.peer);
    let list = api.list(&ListParams::default().labels(&selector)).await.context("listing PublicKeys")?;
    Ok(list.items.into_iter().next())
}

/// The Connection value the tunnel would reach, and why.
async fn verdict(ctx: &Ctx, gw: &Gateway, own_secret: &Secret) -> Result<(&'static str, String)> {
    let me = &ctx.cluster;
    if me.faults().fail_connections {
        return Ok((CONNECTION_ERROR, "fault fail-connections is switched on in this cluster".into()));
    }
    let Some(own_key) = own_public_key(ctx, gw).await? else {
        let why = format!("no PublicKey labelled {REMOTE_CLUSTER_ID}={} in namespace {}", gw.peer, gw.namespace);
        return Ok((CONNECTION_ERROR, why));
    };
    let Some(peer) = ctx.world.by_id(&gw.peer) else {
        let why = format!("peer cluster {} is not part of the ground; no tunnel can come up", gw.peer);
        return Ok((CONNECTION_ERROR, why));
    };
    // The peer side: its gateway for this cluster, its key Secret and its PublicKey for this cluster.
    let for_me = ListParams::default().labels(&format!("{REMOTE_CLUSTER_ID}={}", me.id));
    let servers = Api::<GatewayServer>::all(peer.client.clone())
        .list(&for_me)
        .await
        .context("listing the peer's GatewayServers")?;
    let clients = Api::<GatewayClient>::all(peer.client.clone())
        .list(&for_me)
        .await
        .context("listing the peer's GatewayClients")?;
    let mut peer_gateways: Vec<(&str, Option<String>, Option<i32>)> = Vec::new();
    for s in &servers.items {
        peer_gateways.push((SERVER, s.namespace(), s.status.as_ref().and_then(|st| st.endpoint.as_ref()?.port)));
    }
    for c in &clients.items {
        peer_gateways.push((CLIENT, c.namespace(), c.spec.endpoint.as_ref().and_then(|e| e.port)));
    }
    let (peer_role, peer_ns, peer_port) = match peer_gateways.as_slice() {
        [] => return Ok((CONNECTION_CONNECTING, format!("waiting for a gateway for {} on {}", me.id, gw.peer))),
        [one] => one.clone(),
        _ => return Ok((CONNECTION_ERROR, format!("cluster {} has several gateways for {}", gw.peer, me.id))),
    };
    if peer_role == gw.role {
        let why = format!(
            "both {} and {} run a gateway {}; one side must be the server, the other the client",
            me.id, gw.peer, gw.role
        );
        return Ok((CONNECTION_ERROR, why));
    }
    if let Some(problem) = port_mismatch(ctx, gw, peer_port).await? {
        return Ok((CONNECTION_ERROR, problem));
    }
    let peer_ns = peer_ns.unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(peer.client.clone(), &peer_ns);
    let selector = format!("{GATEWAY_RESOURCE}={},{REMOTE_CLUSTER_ID}={}", labels::TRUE, me.id);
    let peer_secrets =
        secrets.list(&ListParams::default().labels(&selector)).await.context("listing the peer's key Secrets")?;
    let [peer_secret] = peer_secrets.items.as_slice() else {
        return Ok((
            CONNECTION_CONNECTING,
            format!("waiting for the key Secret of {} in its namespace {peer_ns}", gw.peer),
        ));
    };
    let peer_keys: Api<PublicKey> = Api::namespaced(peer.client.clone(), &peer_ns);
    let peer_key = peer_keys.list(&for_me).await.context("listing the peer's PublicKeys")?.items.into_iter().next();
    let Some(peer_key) = peer_key else {
        return Ok((CONNECTION_CONNECTING, format!("waiting for a PublicKey for {} on {}", me.id, gw.peer)));
    };
    // Each gateway uses the pair it loaded at start, which is the Secret's only until the Secret is rewritten.
    let Some(own_loaded) = loaded_public_key(&me.client, &gw.namespace, &gw.peer).await? else {
        return Ok((CONNECTION_CONNECTING, format!("waiting for this cluster's gateway for {} to start", gw.peer)));
    };
    let Some(peer_loaded) = loaded_public_key(&peer.client, &peer_ns, &me.id).await? else {
        return Ok((CONNECTION_CONNECTING, format!("waiting for the gateway of {} to start", gw.peer)));
    };
    let key_of = |k: &PublicKey| k.spec.public_key.as_ref().map(|b| b.0.clone());
    if key_of(&own_key) != Some(peer_loaded) {
        let why = format!(
            "{} does not hold the public key {}'s gateway runs with (the key pair it loaded at start from Secret \
             {peer_ns}/{}): the WireGuard handshake fails",
            describe(&own_key),
            gw.peer,
            peer_secret.name_any()
        );
        return Ok((CONNECTION_ERROR, why));
    }
    if key_of(&peer_key) != Some(own_loaded) {
        let why = format!(
            "{}'s PublicKey {peer_ns}/{} does not hold the public key this cluster's gateway runs with (the key pair \
             it loaded at start from Secret {}/{}; a pair rewritten since is read only after a restart): the \
             WireGuard handshake fails",
            gw.peer,
            peer_key.name_any(),
            gw.namespace,
            own_secret.name_any()
        );
        return Ok((CONNECTION_ERROR, why));
    }
    Ok((CONNECTION_CONNECTED, format!("WireGuard keys match on {} and {}", me.id, gw.peer)))
}

/// The client must dial the port the server publishes; returns the problem if it does not.
async fn port_mismatch(ctx: &Ctx, gw: &Gateway, peer_port: Option<i32>) -> Result<Option<String>> {
    let own_port = if gw.role == SERVER {
        let api: Api<GatewayServer> = Api::namespaced(ctx.cluster.client.clone(), &gw.namespace);
        api.get(&gw.name).await?.status.and_then(|s| s.endpoint?.port)
    } else {
        let api: Api<GatewayClient> = Api::namespaced(ctx.cluster.client.clone(), &gw.namespace);
        api.get(&gw.name).await?.spec.endpoint.and_then(|e| e.port)
    };
    Ok(match (own_port, peer_port) {
        (Some(a), Some(b)) if a != b => {
            let (server, client) = if gw.role == SERVER { (a, b) } else { (b, a) };
            Some(format!("the client dials port {client} but the server's endpoint port is {server}"))
        }
        _ => None,
    })
}

// ---------------------------------------------------------------------------------------------------------------
// WgGatewayServer / WgGatewayClient finalizers
// ---------------------------------------------------------------------------------------------------------------

pub async fn wg_gateway_servers(ctx: Arc<Ctx>) {
    let controller =
        Controller::new(Api::<WgGatewayServer>::all(ctx.cluster.client.clone()), watcher::Config::default());
    drive(ctx, controller, release_wg_finalizer).await
}

pub async fn wg_gateway_clients(ctx: Arc<Ctx>) {
    let controller =
        Controller::new(Api::<WgGatewayClient>::all(ctx.cluster.client.clone()), watcher::Config::default());
    drive(ctx, controller, release_wg_finalizer).await
}

/// Liqo removes the gateway's ClusterRoleBinding, then its finalizer; no binding exists on the ground.
async fn release_wg_finalizer<K>(wg: Arc<K>, ctx: Arc<Ctx>) -> Result<Action>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    if is_deleting(&*wg) && ops::has_finalizer(&*wg, labels::GATEWAY_CLUSTERROLEBINDING_FINALIZER) {
        let api: Api<K> = Api::namespaced(ctx.cluster.client.clone(), &wg.namespace().unwrap_or_default());
        ops::remove_finalizer(&api, &*wg, labels::GATEWAY_CLUSTERROLEBINDING_FINALIZER).await?;
        log_line!(
            ctx.cluster.name,
            "{}: released finalizer {}",
            describe(&*wg),
            labels::GATEWAY_CLUSTERROLEBINDING_FINALIZER
        );
    }
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_follows_service_type() {
        let mut gs = GatewayServer::new("s", Default::default());
        assert!(service_shape(&gs).is_err(), "no port");
        gs.spec.endpoint = Some(liqo_schema::liqo::GatewayServerEndpoint {
            port: Some(51840),
            service_type: Some("NodePort".into()),
            node_port: Some(30742),
            load_balancer_ip: None,
        });
        let shape = service_shape(&gs).unwrap();
        let service = |type_: &str, node_port: Option<i32>| -> Service {
            serde_json::from_value(json!({"metadata": {"name": "gw-s"}, "spec": {"type": type_,
                "ports": [{"port": 51840, "nodePort": node_port, "protocol": "UDP"}]}}))
            .unwrap()
        };
        assert!(shape.fits(&service("NodePort", Some(30742))));
        assert!(!shape.fits(&service("NodePort", Some(30001))), "another node port than asked for");
        assert!(!shape.fits(&service("ClusterIP", None)));
        let ep = server_endpoint(&shape, &service("NodePort", Some(30742))).unwrap();
        assert_eq!((ep.addresses.unwrap(), ep.port), (vec![LOOPBACK.to_owned()], Some(30742)));
        // A node port the API server allocated fits a shape that asks for none, and is the endpoint's port.
        gs.spec.endpoint.as_mut().unwrap().node_port = None;
        let allocated = service_shape(&gs).unwrap();
        assert!(allocated.fits(&service("NodePort", Some(31999))));
        assert_eq!(server_endpoint(&allocated, &service("NodePort", Some(31999))).unwrap().port, Some(31999));
        gs.spec.endpoint.as_mut().unwrap().node_port = Some(80);
        assert!(service_shape(&gs).err().unwrap().contains("node port range"));
        let e = gs.spec.endpoint.as_mut().unwrap();
        e.service_type = Some("LoadBalancer".into());
        e.load_balancer_ip = Some("10.0.0.9".into());
        let shape = service_shape(&gs).unwrap();
        let ep = server_endpoint(&shape, &service("LoadBalancer", Some(31000))).unwrap();
        assert_eq!((ep.addresses.unwrap(), ep.port), (vec!["10.0.0.9".to_owned()], Some(51840)));
    }
}
