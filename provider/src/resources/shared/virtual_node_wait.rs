//! Waiting for a VirtualNode and its core Node: `liqo_peer` waits so for the node Liqo makes, `liqo_virtual_node`
//! for its own. The verdicts are pure functions of the objects (unit-tested in `peer/tests.rs`); the wait reads
//! them through `kube::wait_for`.
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use liqo_schema::liqo::{
    CONNECTION_CONNECTED, Connection, VIRTUAL_NODE_CONDITION_NODE, VIRTUAL_NODE_CONDITION_VIRTUAL_KUBELET,
    VIRTUAL_NODE_RUNNING, VirtualNode, labels,
};

use crate::kube::{OpError, Verdict, is_terminating};
use crate::resources::lifecycle::Op;

/// The VirtualNode `name` running, then (if Liqo makes one) its Node `Ready`; a Node that stays NotReady is
/// explained by the Connection to `provider` when that is the cause. liqo_peer waits so for Liqo's node,
/// liqo_virtual_node for its own.
pub(crate) async fn wait_for_virtual_node(
    op: &Op<'_>,
    client: &kube::Client,
    namespace: &str,
    name: &str,
    provider: &str,
) -> Result<(), OpError> {
    let vns: Api<VirtualNode> = Api::namespaced(client.clone(), namespace);
    let create_node = crate::kube::wait_for(
        op.ctx,
        &vns,
        name,
        "conditions VirtualKubelet and Node = Running",
        op.deadline.left(),
        virtual_node_check,
    )
    .await?;
    if !create_node {
        return Ok(());
    }
    let nodes: Api<Node> = Api::all(client.clone());
    let ready =
        crate::kube::wait_for(op.ctx, &nodes, name, "condition Ready = True", op.deadline.left(), node_check).await;
    if let Err(OpError::Timeout { object, waiting_for, last_seen, after }) = ready {
        // Name the Connection in the error: the most common reason a new virtual node stays NotReady.
        let connections: Api<Connection> = Api::all(client.clone());
        let selector = format!("{}={}", labels::REMOTE_CLUSTER_ID, provider);
        let last_seen = match crate::kube::list(op.ctx, &connections, &selector).await {
            Ok(found) => match network_note(&found, provider) {
                Some(note) => format!("{last_seen}. {note}"),
                None => last_seen,
            },
            Err(_) => last_seen,
        };
        return Err(OpError::Timeout { object, waiting_for, last_seen, after });
    }
    ready
}

/// VirtualNode running → whether Liqo also creates a core Node for it.
pub fn virtual_node_check(vn: Option<&VirtualNode>) -> Verdict<bool> {
    let Some(vn) = vn else {
        return Verdict::Pending("the VirtualNode does not exist (Liqo creates it once the slice is accepted)".into());
    };
    if is_terminating(vn) {
        return Verdict::Pending("the previous VirtualNode of this name is being deleted".into());
    }
    let create_node = vn.spec.create_node.unwrap_or(true);
    let status = vn.status.clone().unwrap_or_default();
    let show = |t: &str| status.condition(t).map(|c| c.status.clone()).unwrap_or_else(|| "not reported".into());
    let kubelet = show(VIRTUAL_NODE_CONDITION_VIRTUAL_KUBELET);
    let node = show(VIRTUAL_NODE_CONDITION_NODE);
    if kubelet == VIRTUAL_NODE_RUNNING && (!create_node || node == VIRTUAL_NODE_RUNNING) {
        Verdict::Ready(create_node)
    } else {
        Verdict::Pending(format!("VirtualKubelet = {kubelet}, Node = {node}"))
    }
}

pub fn node_check(node: Option<&Node>) -> Verdict<()> {
    let Some(node) = node else {
        return Verdict::Pending("the Node does not exist (the virtual kubelet registers it)".into());
    };
    if is_terminating(node) {
        return Verdict::Pending("the previous Node of this name is being deleted".into());
    }
    let ready =
        node.status.as_ref().and_then(|s| s.conditions.as_ref()).and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
    match ready {
        Some(c) if c.status == "True" => Verdict::Ready(()),
        Some(c) => Verdict::Pending(format!(
            "Ready = {} ({})",
            c.status,
            c.message.as_deref().or(c.reason.as_deref()).unwrap_or("no message")
        )),
        None => Verdict::Pending("no Ready condition yet".into()),
    }
}

/// Why a virtual node may stay NotReady, from the Connections to the provider on this cluster: with networking
/// configured Liqo's virtual kubelet (`--node-check-network`, on by default) keeps the node NotReady until the
/// Connection is `Connected`. `None` when a Connection is Connected (the tunnel is not the cause).
pub fn network_note(connections: &[Connection], provider: &str) -> Option<String> {
    let because = format!(
        "With networking to {provider} configured, Liqo keeps the virtual node NotReady until the network Connection \
         is {CONNECTION_CONNECTED} (virtual kubelet --node-check-network)"
    );
    if connections.is_empty() {
        return Some(format!(
            "{because}, and no Connection labelled {}={provider} exists on this cluster yet: if this peering uses \
             liqo_gateway, make this liqo_peer depend on the client gateway (depends_on), whose create waits for \
             {CONNECTION_CONNECTED}",
            labels::REMOTE_CLUSTER_ID
        ));
    }
    if connections.iter().any(|c| c.status.as_ref().and_then(|s| s.value.as_deref()) == Some(CONNECTION_CONNECTED)) {
        return None;
    }
    let states: Vec<String> = connections
        .iter()
        .map(|c| {
            format!(
                "{} is {}",
                crate::kube::describe::<Connection>(
                    c.metadata.namespace.as_deref(),
                    c.metadata.name.as_deref().unwrap_or("")
                ),
                c.status.as_ref().and_then(|s| s.value.as_deref()).unwrap_or("without status")
            )
        })
        .collect();
    Some(format!(
        "{because}; {}. Fix the tunnel (see the liqo_gateway resources of this peering and the Connection's events)",
        states.join(", ")
    ))
}
