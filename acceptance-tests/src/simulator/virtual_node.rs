//! Liqo's VirtualNodeCreator (VirtualNode from an accepted ResourceSlice), virtual-node controller (conditions,
//! finalizer) and the virtual kubelet's core Node, kept alive with a node Lease so that kube-controller-manager's
//! node lifecycle controller keeps it Ready. As in Liqo, the Node is NotReady while networking with the provider
//! is configured but its Connection is not Connected.
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use liqo_schema::liqo::labels::{self, REMOTE_CLUSTER_ID};
use liqo_schema::liqo::{
    CONNECTION_CONNECTED, Configuration, Connection, GatewayClient, GatewayServer, LiqoCondition, ResourceQuotaSpec,
    ResourceSlice, ResourceSliceStatus, VIRTUAL_NODE_CONDITION_NODE, VIRTUAL_NODE_CONDITION_VIRTUAL_KUBELET,
    VIRTUAL_NODE_CREATING, VIRTUAL_NODE_DELETING, VIRTUAL_NODE_NONE, VIRTUAL_NODE_RUNNING, VirtualNode,
    VirtualNodeSpec, VirtualNodeStatus, upsert_liqo_condition,
};
use serde_json::json;

use super::context::{Cluster, Ctx, Topic};
use super::ops::{self, annotation, describe, has_finalizer, is_deleting, label};
use super::supervisor::drive;

/// The taint Liqo's virtual kubelet puts on virtual nodes, so only pods that tolerate offloading land there.
const VIRTUAL_NODE_TAINT: &str = "virtual-node.liqo.io/not-allowed";
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
const LEASE_DURATION_SECONDS: i32 = 40;
/// Renewal period of the node Leases (the kubelet's default is a quarter of the lease duration).
const HEARTBEAT: Duration = Duration::from_secs(10);
const GONE_RETRY: Duration = Duration::from_millis(200);

// ---------------------------------------------------------------------------------------------------------------
// From ResourceSlice to VirtualNode (consumer side)
// ---------------------------------------------------------------------------------------------------------------

/// Creates VirtualNode `<slice>` once the slice asks for one and both conditions are Accepted, and keeps its
/// resource quota equal to the accepted resources.
pub async fn ensure_for_slice(ctx: &Ctx, rs: &ResourceSlice, status: Option<&ResourceSliceStatus>) -> Result<()> {
    if annotation(rs, labels::CREATE_VIRTUAL_NODE) != Some(labels::TRUE) || !status.is_some_and(|s| s.is_accepted()) {
        return Ok(());
    }
    let Some(provider) = rs.spec.provider_cluster_id.clone() else { return Ok(()) };
    let ns = rs.namespace().unwrap_or_default();
    let api: Api<VirtualNode> = Api::namespaced(ctx.cluster.client.clone(), &ns);
    let quota = ResourceQuotaSpec { hard: status.and_then(|s| s.resources.clone()) };
    match api.get_opt(&rs.name_any()).await.with_context(|| format!("reading VirtualNode {ns}/{}", rs.name_any()))? {
        Some(vn) if vn.spec.resource_quota.as_ref() == Some(&quota) => {}
        Some(vn) => {
            ops::merge_patch(&api, &vn, json!({"spec": {"resourceQuota": quota}})).await?;
            log_line!(ctx.cluster.name, "{}: resource quota now {:?}", describe(&vn), quota.hard);
        }
        None => {
            let vn = VirtualNode {
                metadata: ObjectMeta {
                    name: Some(rs.name_any()),
                    namespace: Some(ns.clone()),
                    labels: Some(BTreeMap::from([
                        (REMOTE_CLUSTER_ID.to_owned(), provider.clone()),
                        (labels::RESOURCE_SLICE_NAME.to_owned(), rs.name_any()),
                    ])),
                    annotations: Some(ops::simulated_annotations()),
                    owner_references: rs.controller_owner_ref(&()).map(|o| vec![o]),
                    ..Default::default()
                },
                spec: VirtualNodeSpec {
                    cluster_id: Some(provider),
                    create_node: Some(true),
                    resource_quota: Some(quota),
                    ..Default::default()
                },
                status: None,
            };
            let vn = ops::create_or_get(&api, &vn).await?;
            log_line!(ctx.cluster.name, "{}: created for ResourceSlice {ns}/{}", describe(&vn), rs.name_any());
        }
    }
    Ok(())
}

/// Deletes the VirtualNode Liqo created for a slice that is being deleted.
pub async fn delete_for_slice(ctx: &Ctx, ns: &str, slice: &str) -> Result<()> {
    let api: Api<VirtualNode> = Api::namespaced(ctx.cluster.client.clone(), ns);
    if let Some(vn) = api.get_opt(slice).await.with_context(|| format!("reading VirtualNode {ns}/{slice}"))?
        && label(&vn, labels::RESOURCE_SLICE_NAME) == Some(slice)
        && !is_deleting(&vn)
    {
        ops::delete_and_check(&api, slice).await?;
        log_line!(ctx.cluster.name, "{}: deleting with its ResourceSlice", describe(&vn));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// VirtualNode controller
// ---------------------------------------------------------------------------------------------------------------

pub async fn virtual_nodes(ctx: Arc<Ctx>) {
    // Network too: the Node's readiness follows the Connection to the provider.
    let controller = Controller::new(Api::<VirtualNode>::all(ctx.cluster.client.clone()), watcher::Config::default())
        .reconcile_all_on(ctx.cluster.subscribe(Topic::Offloading))
        .reconcile_all_on(ctx.cluster.subscribe(Topic::Network));
    drive(ctx, controller, reconcile_virtual_node).await
}

async fn reconcile_virtual_node(vn: Arc<VirtualNode>, ctx: Arc<Ctx>) -> Result<Action> {
    let cluster = &ctx.cluster;
    let api: Api<VirtualNode> = Api::namespaced(cluster.client.clone(), &vn.namespace().unwrap_or_default());
    let nodes: Api<Node> = Api::all(cluster.client.clone());
    let finalizer = labels::VIRTUAL_NODE_FINALIZER;
    if is_deleting(&*vn) {
        if !has_finalizer(&*vn, finalizer) {
            return Ok(Action::await_change());
        }
        let vn = set_conditions(cluster, &api, &vn, VIRTUAL_NODE_DELETING, VIRTUAL_NODE_DELETING).await?;
        let node_gone = match nodes.get_opt(&vn.name_any()).await? {
            Some(node) if label(&node, labels::NODE_TYPE) == Some(labels::NODE_TYPE_VIRTUAL_NODE) => {
                ops::delete_and_check(&nodes, &vn.name_any()).await?
            }
            _ => true,
        };
        if !node_gone {
            return Ok(Action::requeue(GONE_RETRY));
        }
        ops::remove_finalizer(&api, &vn, finalizer).await?;
        log_line!(cluster.name, "{}: Node gone; released finalizer {finalizer}", describe(&vn));
        return Ok(Action::await_change());
    }
    let mut vn = ops::add_finalizer(&api, &*vn, finalizer).await?;
    let create_node = vn.spec.create_node != Some(false);
    if vn.status.as_ref().and_then(|s| s.conditions.as_ref()).is_none_or(|c| c.is_empty()) {
        let node = if create_node { VIRTUAL_NODE_CREATING } else { VIRTUAL_NODE_NONE };
        vn = set_conditions(cluster, &api, &vn, VIRTUAL_NODE_CREATING, node).await?;
    }
    if create_node {
        ensure_node(cluster, &vn).await?;
    }
    let node = if create_node { VIRTUAL_NODE_RUNNING } else { VIRTUAL_NODE_NONE };
    set_conditions(cluster, &api, &vn, VIRTUAL_NODE_RUNNING, node).await?;
    Ok(Action::await_change())
}

/// Sets both conditions; returns the VirtualNode as it is now.
async fn set_conditions(
    cluster: &Cluster,
    api: &Api<VirtualNode>,
    vn: &VirtualNode,
    kubelet: &str,
    node: &str,
) -> Result<VirtualNode> {
    let mut conditions = vn.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default();
    for (type_, status) in [(VIRTUAL_NODE_CONDITION_VIRTUAL_KUBELET, kubelet), (VIRTUAL_NODE_CONDITION_NODE, node)] {
        upsert_liqo_condition(
            &mut conditions,
            LiqoCondition {
                type_: type_.into(),
                status: status.into(),
                last_transition_time: Some(Time(k8s_openapi::jiff::Timestamp::now())),
                ..Default::default()
            },
        );
    }
    let desired = VirtualNodeStatus { conditions: Some(conditions) };
    if ops::status_json(vn.status.as_ref()) == serde_json::to_value(&desired)? {
        return Ok(vn.clone());
    }
    let written = ops::apply_status(cluster, api, vn, serde_json::to_value(&desired)?).await?;
    log_line!(cluster.name, "{}: VirtualKubelet={kubelet}, Node={node}", describe(vn));
    Ok(written)
}

/// The core Node the virtual kubelet registers: labelled and tainted like Liqo's, capacity = the quota.
async fn ensure_node(cluster: &Cluster, vn: &VirtualNode) -> Result<()> {
    let name = vn.name_any();
    let nodes: Api<Node> = Api::all(cluster.client.clone());
    let mut node_labels: BTreeMap<String, String> = vn.spec.labels.clone().unwrap_or_default();
    node_labels.insert(labels::NODE_TYPE.into(), labels::NODE_TYPE_VIRTUAL_NODE.into());
    node_labels.insert("kubernetes.io/hostname".into(), name.clone());
    node_labels.insert("kubernetes.io/role".into(), "agent".into());
    if let Some(provider) = &vn.spec.cluster_id {
        node_labels.insert(REMOTE_CLUSTER_ID.into(), provider.clone());
    }
    let mut annotations = vn.spec.annotations.clone().unwrap_or_default();
    annotations.extend(ops::simulated_annotations());
    let body = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels, "annotations": annotations},
        "spec": {"taints": [{"key": VIRTUAL_NODE_TAINT, "value": labels::TRUE, "effect": "NoExecute"}]},
    });
    let node = nodes
        .patch(&name, &PatchParams::apply(ops::MANAGER).force(), &Patch::Apply(&body))
        .await
        .with_context(|| format!("applying Node {name}"))?;
    ensure_lease(cluster, &node).await?;

    let capacity = vn.spec.resource_quota.as_ref().and_then(|q| q.hard.clone()).unwrap_or_default();
    let network_ready = match &vn.spec.cluster_id {
        Some(provider) => network_ready(cluster, provider).await?,
        None => true,
    };
    let ready = crate::observe::node_ready(&node);
    let status = node.status.clone().unwrap_or_default();
    if ready == network_ready
        && status.capacity.as_ref() == Some(&capacity)
        && status.allocatable.as_ref() == Some(&capacity)
    {
        return Ok(());
    }
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let (ready, reason, message) = if network_ready {
        ("True", "KubeletReady", "simulated virtual kubelet is ready")
    } else {
        ("False", "KubeletNotReady", "The Liqo Virtual Kubelet is currently not ready")
    };
    let status = json!({
        "capacity": capacity,
        "allocatable": capacity,
        "conditions": [{
            "type": "Ready", "status": ready, "reason": reason,
            "message": message, "lastHeartbeatTime": now, "lastTransitionTime": now,
        }, {
            "type": "NetworkUnavailable", "status": if network_ready { "False" } else { "True" },
            "reason": if network_ready { "LiqoNetworkingReady" } else { "LiqoNetworkingNotReady" },
            "lastHeartbeatTime": now, "lastTransitionTime": now,
        }],
        "nodeInfo": {
            "architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "v1.34.0-liqo-simulated",
            "bootID": "", "containerRuntimeVersion": "", "kernelVersion": "", "kubeProxyVersion": "",
            "machineID": "", "osImage": "", "systemUUID": "",
        },
    });
    ops::apply_status(cluster, &nodes, &node, status).await?;
    log_line!(cluster.name, "Node {name}: Ready={ready}, capacity {capacity:?}");
    Ok(())
}

/// Liqo's virtual kubelet (`--node-check-network`, on by default) reports the Node Ready only when networking
/// with the provider is not configured on this cluster, or its Connection is Connected (`liqoNodeProvider`).
async fn network_ready(cluster: &Cluster, provider: &str) -> Result<bool> {
    let for_provider = ListParams::default().labels(&format!("{REMOTE_CLUSTER_ID}={provider}"));
    let client = cluster.client.clone();
    let configured = !Api::<Configuration>::all(client.clone()).list(&for_provider).await?.items.is_empty()
        || !Api::<GatewayServer>::all(client.clone()).list(&for_provider).await?.items.is_empty()
        || !Api::<GatewayClient>::all(client.clone()).list(&for_provider).await?.items.is_empty();
    if !configured {
        return Ok(true);
    }
    let connections = Api::<Connection>::all(client).list(&for_provider).await.context("listing Connections")?;
    Ok(connections
        .items
        .iter()
        .any(|c| c.status.as_ref().and_then(|s| s.value.as_deref()) == Some(CONNECTION_CONNECTED)))
}

/// The node Lease the kubelet would renew; without it kube-controller-manager marks the Node NotReady.
async fn ensure_lease(cluster: &Cluster, node: &Node) -> Result<()> {
    let api: Api<Lease> = Api::namespaced(cluster.client.clone(), NODE_LEASE_NAMESPACE);
    let name = node.name_any();
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(NODE_LEASE_NAMESPACE.into()),
            annotations: Some(ops::simulated_annotations()),
            owner_references: node.owner_ref(&()).map(|o| vec![o]),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(name.clone()),
            lease_duration_seconds: Some(LEASE_DURATION_SECONDS),
            renew_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            ..Default::default()
        }),
    };
    api.patch(&name, &PatchParams::apply(ops::MANAGER).force(), &Patch::Apply(&lease))
        .await
        .with_context(|| format!("renewing Lease {NODE_LEASE_NAMESPACE}/{name}"))?;
    Ok(())
}

/// Renews the Lease of every simulated virtual Node of the cluster until the process ends.
pub async fn heartbeat(cluster: Arc<Cluster>) {
    let nodes: Api<Node> = Api::all(cluster.client.clone());
    let selector = format!("{}={}", labels::NODE_TYPE, labels::NODE_TYPE_VIRTUAL_NODE);
    let mut ticker = tokio::time::interval(HEARTBEAT);
    loop {
        ticker.tick().await;
        let list = match nodes.list(&ListParams::default().labels(&selector)).await {
            Ok(list) => list,
            Err(err) => {
                log_line!(cluster.name, "listing virtual Nodes for their heartbeat: {err}");
                continue;
            }
        };
        for node in list.items.iter().filter(|n| annotation(*n, ops::SIMULATED_ANNOTATION).is_some()) {
            if let Err(err) = ensure_lease(&cluster, node).await {
                log_line!(cluster.name, "{err:#}");
            }
        }
    }
}
