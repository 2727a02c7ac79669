//! Verdicts on what Liqo reports while an apply waits: the ResourceSlice's conditions and grant, the VirtualNode
//! and its Node, and — when the Node stays NotReady — the network Connection that may be the cause. Pure
//! functions of the objects, so every verdict is unit-tested.
use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use liqo_schema::liqo::{
    CONNECTION_CONNECTED, Connection, RESOURCE_SLICE_CONDITION_AUTHENTICATION, RESOURCE_SLICE_CONDITION_RESOURCES,
    RESOURCE_SLICE_DENIED, ResourceSlice, VIRTUAL_NODE_CONDITION_NODE, VIRTUAL_NODE_CONDITION_VIRTUAL_KUBELET,
    VIRTUAL_NODE_RUNNING, VirtualNode, labels,
};

use super::objects::Peering;
use crate::kube::{Verdict, is_terminating};
use crate::quantity;

fn condition_summary(rs: &ResourceSlice) -> String {
    let status = rs.status.as_ref();
    let show = |t: &str| {
        status.and_then(|s| s.condition(t)).map(|c| c.status.clone()).unwrap_or_else(|| "not reported".into())
    };
    format!(
        "Authentication = {}, Resources = {}",
        show(RESOURCE_SLICE_CONDITION_AUTHENTICATION),
        show(RESOURCE_SLICE_CONDITION_RESOURCES)
    )
}

fn denied_hint(condition: &str, peer: &Peering) -> String {
    if condition == RESOURCE_SLICE_CONDITION_AUTHENTICATION {
        format!(
            "The provider cluster `{}` did not accept this consumer's credentials for the slice. Check that the \
             liqo_tenant for this consumer exists in the provider's tenant namespace `{}`, that this namespace is \
             labelled for this consumer cluster, and that the provider runs Liqo 1.0.3 or later (1.0.2 denies \
             slices of TolerateNoHandshake tenants). Then run apply again.",
            peer.provider_cluster_id, peer.provider_tenant_namespace
        )
    } else {
        format!(
            "The provider cluster `{}` refused the requested resources: its Tenant for this consumer may be \
             Cordoned or Drained (liqo_tenant `tenant_condition`), or the controller of ResourceSlice class `{}` \
             declined the request. Fix that (or ask for less), then run apply again.",
            peer.provider_cluster_id, peer.class
        )
    }
}

/// How long the wait goes on through `Authentication=Denied` once it has failed on it ([`OnAuthDenial::Wait`]).
/// Liqo's provider writes that denial also when forging the slice's credentials fails on an error it retries
/// (`remoteresourceslice_controller.go`: `AuthParamsFailed`, same reason `ResourceSliceAuthenticationDenied`; seen
/// on a loaded machine right after a tenant namespace was made anew: a Secret its cache did not hold yet), and its
/// next reconcile accepts the slice; `liqoctl peer` waits through any denial. Its other denials (an invalid CSR,
/// the slice in another tenant's namespace) stay, and fail this long later.
pub const AUTHENTICATION_DENIAL_GRACE: Duration = Duration::from_secs(20);

/// What [`slice_check`] makes of `Authentication=Denied` (`Resources=Denied`, a Cordoned or Drained tenant,
/// always fails: Liqo writes it without retrying).
#[derive(Clone, Copy)]
pub enum OnAuthDenial {
    Fail,
    /// Keep waiting: see [`AUTHENTICATION_DENIAL_GRACE`].
    Wait,
}

/// Slice accepted (and, for the built-in class, granting the current request) → the granted resources.
pub fn slice_check(
    rs: Option<&ResourceSlice>,
    peer: &Peering,
    on_auth_denial: OnAuthDenial,
) -> Verdict<BTreeMap<String, String>> {
    let Some(rs) = rs else {
        return Verdict::Pending("the ResourceSlice does not exist".into());
    };
    let status = rs.status.clone().unwrap_or_default();
    for t in [RESOURCE_SLICE_CONDITION_AUTHENTICATION, RESOURCE_SLICE_CONDITION_RESOURCES] {
        if let Some(c) = status.condition(t).filter(|c| c.status == RESOURCE_SLICE_DENIED) {
            let reason = format!(
                "Condition {t} is Denied (reason: {}; message: {}).",
                c.reason.as_deref().unwrap_or("none given"),
                c.message.as_deref().unwrap_or("none given")
            );
            if t == RESOURCE_SLICE_CONDITION_AUTHENTICATION && matches!(on_auth_denial, OnAuthDenial::Wait) {
                return Verdict::Pending(format!("{reason} Liqo retries some denials; waiting for it to clear"));
            }
            return Verdict::Failed { reason, hint: denied_hint(t, peer) };
        }
    }
    if !status.is_accepted() {
        return Verdict::Pending(condition_summary(rs));
    }
    let granted: BTreeMap<String, String> =
        status.resources.iter().flatten().map(|(k, q)| (k.clone(), q.0.clone())).collect();
    if peer.grants_request() {
        for (key, wanted) in peer.resources.iter().flatten() {
            let got = granted.get(key);
            if !got.is_some_and(|g| quantity::same(g, wanted)) {
                return Verdict::Pending(format!(
                    "both conditions Accepted, but status.resources[{key}] is {} while {wanted} is requested \
                     (the provider has not processed the current request yet)",
                    got.map(|g| format!("`{g}`")).unwrap_or_else(|| "absent".into())
                ));
            }
        }
    }
    Verdict::Ready(granted)
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
