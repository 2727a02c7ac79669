//! Liqo's ForeignCluster controller: one cluster-scoped ForeignCluster per peer named by any peering object,
//! with the role, API server URL, tenant namespaces and module conditions that `liqoctl info` reads. Never
//! deleted (as in Liqo).
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::ListParams;
use kube::{Api, Resource, ResourceExt};
use liqo_schema::liqo::core as fc;
use liqo_schema::liqo::labels::{self, REMOTE_CLUSTER_ID};
use liqo_schema::liqo::{
    CONNECTION_CONNECTED, CONNECTION_CONNECTING, Configuration, Connection, ForeignCluster, ForeignClusterSpec,
    ForeignClusterStatus, GatewayClient, GatewayServer, LiqoCondition, Module, Modules, Tenant, TenantNamespaces,
    VIRTUAL_NODE_CONDITION_VIRTUAL_KUBELET, VIRTUAL_NODE_RUNNING, VirtualNode, upsert_liqo_condition,
};
use serde::de::DeserializeOwned;

use super::context::{Ctx, Topic};
use super::ops::{self, label};

/// Resynchronisation period for what no topic reports (API server reachability).
const RESYNC: Duration = Duration::from_secs(10);
/// Changes come in bursts during a peering; wait this long after the first before recomputing.
const DEBOUNCE: Duration = Duration::from_millis(100);

pub async fn foreign_clusters(ctx: Arc<Ctx>) {
    let mut triggers = futures::stream::select_all([
        ctx.cluster.subscribe(Topic::Network).boxed(),
        ctx.cluster.subscribe(Topic::Authentication).boxed(),
        ctx.cluster.subscribe(Topic::Offloading).boxed(),
    ]);
    let mut ticker = tokio::time::interval(RESYNC);
    loop {
        tokio::select! {
            _ = triggers.next() => tokio::time::sleep(DEBOUNCE).await,
            _ = ticker.tick() => {}
        }
        if let Err(err) = sync(&ctx).await {
            log_line!(ctx.cluster.name, "ForeignClusters: {err:#}");
        }
    }
}

/// Everything on this cluster that names peers.
struct Peering {
    configurations: Vec<Configuration>,
    servers: Vec<GatewayServer>,
    clients: Vec<GatewayClient>,
    connections: Vec<Connection>,
    tenants: Vec<Tenant>,
    secrets: Vec<Secret>,
    virtual_nodes: Vec<VirtualNode>,
    nodes: Vec<Node>,
}

async fn list<K>(ctx: &Ctx, selector: &str) -> Result<Vec<K>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let api: Api<K> = Api::all(ctx.cluster.client.clone());
    Ok(api
        .list(&ListParams::default().labels(selector))
        .await
        .with_context(|| format!("listing {}", K::plural(&())))?
        .items)
}

fn of_peer<'a, K: Resource>(items: &'a [K], peer: &str) -> Vec<&'a K> {
    items.iter().filter(|o| label(*o, REMOTE_CLUSTER_ID) == Some(peer)).collect()
}

async fn sync(ctx: &Ctx) -> Result<()> {
    let control_plane =
        format!("{},{}={}", REMOTE_CLUSTER_ID, labels::IDENTITY_TYPE, labels::IDENTITY_TYPE_CONTROL_PLANE);
    let peering = Peering {
        configurations: list(ctx, REMOTE_CLUSTER_ID).await?,
        servers: list(ctx, REMOTE_CLUSTER_ID).await?,
        clients: list(ctx, REMOTE_CLUSTER_ID).await?,
        connections: list(ctx, REMOTE_CLUSTER_ID).await?,
        tenants: list(ctx, REMOTE_CLUSTER_ID).await?,
        secrets: list(ctx, &control_plane).await?,
        virtual_nodes: list(ctx, REMOTE_CLUSTER_ID).await?,
        nodes: list(ctx, &format!("{}={}", labels::NODE_TYPE, labels::NODE_TYPE_VIRTUAL_NODE)).await?,
    };
    let mut peers = BTreeSet::new();
    let ids = |items: Vec<Option<&str>>| items.into_iter().flatten().map(str::to_owned).collect::<Vec<_>>();
    peers.extend(ids(peering.configurations.iter().map(|o| label(o, REMOTE_CLUSTER_ID)).collect()));
    peers.extend(ids(peering.servers.iter().map(|o| label(o, REMOTE_CLUSTER_ID)).collect()));
    peers.extend(ids(peering.clients.iter().map(|o| label(o, REMOTE_CLUSTER_ID)).collect()));
    peers.extend(ids(peering.tenants.iter().map(|o| label(o, REMOTE_CLUSTER_ID)).collect()));
    peers.extend(ids(peering.secrets.iter().map(|o| label(o, REMOTE_CLUSTER_ID)).collect()));
    peers.extend(ids(peering.virtual_nodes.iter().map(|o| label(o, REMOTE_CLUSTER_ID)).collect()));
    peers.remove(&ctx.cluster.id);

    let api: Api<ForeignCluster> = Api::all(ctx.cluster.client.clone());
    for peer in peers {
        let existing = match api.get_opt(&peer).await.with_context(|| format!("reading ForeignCluster {peer}"))? {
            Some(fc) => fc,
            None => {
                let fc = ForeignCluster {
                    metadata: ObjectMeta {
                        name: Some(peer.clone()),
                        labels: Some(BTreeMap::from([(REMOTE_CLUSTER_ID.to_owned(), peer.clone())])),
                        annotations: Some(ops::simulated_annotations()),
                        ..Default::default()
                    },
                    spec: ForeignClusterSpec { cluster_id: Some(peer.clone()) },
                    status: None,
                };
                let created = ops::create_or_get(&api, &fc).await?;
                log_line!(ctx.cluster.name, "ForeignCluster {peer}: created");
                created
            }
        };
        let desired = desired_status(ctx, &peering, &peer, &existing).await;
        if ops::status_json(existing.status.as_ref()) != serde_json::to_value(&desired)? {
            ops::apply_status(&ctx.cluster, &api, &existing, serde_json::to_value(&desired)?).await?;
            log_line!(ctx.cluster.name, "ForeignCluster {peer}: status updated (role {})", desired.role);
        }
    }
    Ok(())
}

/// Appends a condition, keeping the previous transition time when the status is unchanged.
fn push(
    list: &mut Vec<LiqoCondition>,
    previous: Option<&Vec<LiqoCondition>>,
    type_: &str,
    status: &str,
    message: String,
) {
    let mut merged = previous.cloned().unwrap_or_default();
    upsert_liqo_condition(
        &mut merged,
        LiqoCondition {
            type_: type_.into(),
            status: status.into(),
            reason: Some(type_.into()),
            message: Some(message),
            last_transition_time: Some(Time(k8s_openapi::jiff::Timestamp::now())),
        },
    );
    list.push(merged.into_iter().find(|c| c.type_ == type_).expect("just inserted"));
}

async fn desired_status(ctx: &Ctx, p: &Peering, peer: &str, existing: &ForeignCluster) -> ForeignClusterStatus {
    let previous = existing.status.as_ref();
    let prev_module = |pick: fn(&fc::Modules) -> &Module| {
        previous.and_then(|s| s.modules.as_ref()).map(pick).and_then(|m| m.conditions.as_ref())
    };
    let ready = |ok: bool| if ok { fc::STATUS_READY } else { fc::STATUS_NOT_READY };

    // Networking.
    let configurations = of_peer(&p.configurations, peer);
    let servers = of_peer(&p.servers, peer);
    let clients = of_peer(&p.clients, peer);
    let mut networking = Vec::new();
    let prev = prev_module(|m| &m.networking);
    if let Some(conf) = configurations.first() {
        let ok = conf.cidrs_configured();
        push(
            &mut networking,
            prev,
            fc::NETWORK_CONFIGURATION_STATUS,
            ready(ok),
            format!("Configuration {} configured: {ok}", conf.name_any()),
        );
    }
    if let Some(server) = servers.first() {
        let ok = server.status.as_ref().and_then(|s| s.endpoint.as_ref()).is_some_and(|e| e.is_ready());
        push(
            &mut networking,
            prev,
            fc::NETWORK_GATEWAY_SERVER_STATUS,
            ready(ok),
            format!("GatewayServer {} endpoint ready: {ok}", server.name_any()),
        );
    }
    if let Some(client) = clients.first() {
        let ok = client.status.as_ref().is_some_and(|s| s.client_ref.is_some());
        push(
            &mut networking,
            prev,
            fc::NETWORK_GATEWAY_CLIENT_STATUS,
            ready(ok),
            format!("GatewayClient {} ready: {ok}", client.name_any()),
        );
    }
    if !servers.is_empty() || !clients.is_empty() {
        let value = of_peer(&p.connections, peer).first().and_then(|c| c.status.as_ref()?.value.clone());
        let status = match value.as_deref() {
            Some(CONNECTION_CONNECTED) => fc::STATUS_ESTABLISHED,
            Some(CONNECTION_CONNECTING) => fc::STATUS_PENDING,
            Some(_) => fc::STATUS_ERROR,
            None => fc::STATUS_NOT_READY,
        };
        push(
            &mut networking,
            prev,
            fc::NETWORK_CONNECTION_STATUS,
            status,
            format!("Connection {}", value.as_deref().unwrap_or("missing")),
        );
    }

    // Authentication.
    let tenants = of_peer(&p.tenants, peer);
    let secrets = of_peer(&p.secrets, peer);
    let mut authentication = Vec::new();
    let prev = prev_module(|m| &m.authentication);
    if let Some(tenant) = tenants.first() {
        let ok = tenant.status.as_ref().and_then(|s| s.tenant_namespace.as_deref()).is_some_and(|n| !n.is_empty());
        push(
            &mut authentication,
            prev,
            fc::AUTH_TENANT_STATUS,
            ready(ok),
            format!("Tenant {} ready: {ok}", tenant.name_any()),
        );
    }

    // Offloading.
    let virtual_nodes = of_peer(&p.virtual_nodes, peer);
    let mut offloading = Vec::new();
    let prev = prev_module(|m| &m.offloading);
    if !virtual_nodes.is_empty() {
        let running = virtual_nodes
            .iter()
            .filter(|vn| {
                vn.status
                    .as_ref()
                    .and_then(|s| s.condition(VIRTUAL_NODE_CONDITION_VIRTUAL_KUBELET))
                    .map(|c| c.status.as_str())
                    == Some(VIRTUAL_NODE_RUNNING)
            })
            .count();
        let nodes_ready = virtual_nodes
            .iter()
            .filter(|vn| p.nodes.iter().any(|n| n.name_any() == vn.name_any() && crate::observe::node_ready(n)))
            .count();
        let some = |n: usize| match n {
            n if n == virtual_nodes.len() => fc::STATUS_READY,
            0 => fc::STATUS_NOT_READY,
            _ => fc::STATUS_SOME_NOT_READY,
        };
        let total = virtual_nodes.len();
        push(
            &mut offloading,
            prev,
            fc::OFFLOADING_VIRTUAL_NODE_STATUS,
            some(running),
            format!("{running}/{total} virtual nodes running"),
        );
        push(
            &mut offloading,
            prev,
            fc::OFFLOADING_NODE_STATUS,
            some(nodes_ready),
            format!("{nodes_ready}/{total} nodes ready"),
        );
    }

    // The control-plane Secret gives the provider's API server, checked with the peer's own credentials.
    let mut conditions = Vec::new();
    let mut api_server_url = None;
    if let Some(secret) = secrets.first() {
        let kubeconfig =
            secret.data.as_ref().and_then(|d| d.get(labels::KUBECONFIG_KEY)).map(|b| b.0.clone()).unwrap_or_default();
        api_server_url = server_of(&kubeconfig);
        let key = format!("{}/{}", secret.namespace().unwrap_or_default(), secret.name_any());
        let (status, message) = match ctx.cluster.remote_client(&key, &kubeconfig).await {
            Ok(client) => match client.apiserver_version().await {
                Ok(_) => (fc::STATUS_ESTABLISHED, "the API server answers".to_owned()),
                Err(err) => (fc::STATUS_ERROR, format!("the API server does not answer: {err}")),
            },
            Err(err) => (fc::STATUS_ERROR, format!("unusable kubeconfig: {err:#}")),
        };
        push(&mut conditions, previous.and_then(|s| s.conditions.as_ref()), fc::API_SERVER_STATUS, status, message);
    }

    let is_consumer = !tenants.is_empty();
    let is_provider = !secrets.is_empty() || !virtual_nodes.is_empty();
    let role = match (is_consumer, is_provider) {
        (true, true) => fc::ROLE_CONSUMER_AND_PROVIDER,
        (true, false) => fc::ROLE_CONSUMER,
        (false, true) => fc::ROLE_PROVIDER,
        (false, false) => fc::ROLE_UNKNOWN,
    };
    // Liqo's status.go fills the tenant namespaces only from a Tenant's status.tenantNamespace (local) and from an
    // Identity resource (local and remote). A control-plane Secret alone (declarative peering) gives only the API
    // server URL; networking objects give none.
    let local_ns = tenants.first().and_then(|t| t.status.as_ref()?.tenant_namespace.clone()).filter(|n| !n.is_empty());
    let remote_ns = None;
    let module = |enabled: bool, conditions: Vec<LiqoCondition>| Module {
        enabled,
        conditions: (!conditions.is_empty()).then_some(conditions),
    };
    ForeignClusterStatus {
        role: role.into(),
        modules: Some(Modules {
            networking: module(!configurations.is_empty() || !servers.is_empty() || !clients.is_empty(), networking),
            authentication: module(is_consumer || !secrets.is_empty(), authentication),
            offloading: module(!virtual_nodes.is_empty(), offloading),
        }),
        conditions: (!conditions.is_empty()).then_some(conditions),
        api_server_url,
        foreign_proxy_url: None,
        tenant_namespace: (local_ns.is_some() || remote_ns.is_some())
            .then_some(TenantNamespaces { local: local_ns, remote: remote_ns }),
        observed_generation: existing.metadata.generation,
    }
}

/// The server URL of a kubeconfig's current context.
fn server_of(kubeconfig: &[u8]) -> Option<String> {
    let config = kube::config::Kubeconfig::from_yaml(std::str::from_utf8(kubeconfig).ok()?).ok()?;
    let context_name = config.current_context.as_ref()?;
    let context = config.contexts.iter().find(|c| &c.name == context_name)?.context.as_ref()?;
    let cluster = config.clusters.iter().find(|c| c.name == context.cluster)?.cluster.as_ref()?;
    cluster.server.clone()
}
