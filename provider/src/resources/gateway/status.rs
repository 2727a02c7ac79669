//! Verdicts on the status Liqo writes, for the waits of `liqo_gateway` (pure, so they are unit-tested), and the
//! failure reported for a Connection that stays in `Error`.
use std::time::Duration;

use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::jiff::Timestamp;
use liqo_schema::liqo::{
    CONNECTION_CONNECTED, CONNECTION_ERROR, ClusterConfigCidr, Configuration, Connection, EndpointStatus,
    GatewayClient, GatewayServer, NETWORK_CIDRS_CONFIGURED, find_condition, labels, published_port,
};

use crate::kube::{OpError, Verdict};

/// A Connection may go Connecting → Error → Connected while the tunnel comes up; only an `Error` lasting
/// longer than this fails the apply. Measured on real Liqo v1.2.0 on a loaded 2-core machine: a client gateway
/// recreated after its Configuration was deleted out of band stayed in `Error` for 29 s in one run and more than
/// 30 s in another before its pings went through again (10 s, then 30 s, were too short).
pub const ERROR_GRACE: Duration = Duration::from_secs(60);
/// A `Connected` that predates the apply must hold this long before an update counts as done: Liqo's ping-based
/// checker needs about this long to notice that a changed key, endpoint or MTU broke the tunnel. For a
/// Connection without latency measurements (nothing tells a fresh `Connected` from the one before the change).
pub const SETTLE: Duration = Duration::from_secs(10);
/// Liqo's gateway writes the latency it measured at least every `--ping-update-status-interval` (10 s) while
/// Connected, and turns the Connection to `Error` after `--ping-loss-threshold` lost pings (5 × 2 s): within this
/// window after a change, one or the other shows whether the tunnel survived it.
pub const FRESH_MEASUREMENT: Duration = Duration::from_secs(30);
/// A measurement counts as taken after the change only if it is this much younger than the change (Liqo's
/// `--ping-interval`): a ping sent just before Liqo's wireguard applied the change proves nothing.
pub const PING_INTERVAL: Duration = Duration::from_secs(2);

pub fn configuration_check(c: Option<&Configuration>) -> Verdict<ClusterConfigCidr> {
    let Some(c) = c else {
        return Verdict::Pending("the Configuration does not exist".into());
    };
    if c.cidrs_configured() {
        return Verdict::Ready(c.remapped());
    }
    let conditions = c.status.as_ref().and_then(|s| s.conditions.as_deref());
    let seen = match find_condition(conditions, NETWORK_CIDRS_CONFIGURED) {
        Some(cond) => format!(
            "condition {NETWORK_CIDRS_CONFIGURED} = {} (reason {:?}, message {:?}, observedGeneration {:?} vs generation {:?})",
            cond.status, cond.reason, cond.message, cond.observed_generation, c.metadata.generation
        ),
        None => "no NetworkCIDRsConfigured condition and no status.remote CIDRs yet (Liqo's Configuration controller remaps the peer's CIDRs)".into(),
    };
    Verdict::Pending(seen)
}

/// Server endpoint: at least one non-empty address and a non-zero port.
pub fn endpoint_check(g: Option<&GatewayServer>, service_type: &str) -> Verdict<EndpointStatus> {
    let Some(g) = g else {
        return Verdict::Pending("the GatewayServer does not exist".into());
    };
    match g.status.as_ref().and_then(|s| s.endpoint.as_ref()) {
        Some(e) if e.is_ready() => Verdict::Ready(e.clone()),
        Some(e) => Verdict::Pending(format!(
            "status.endpoint = addresses {:?}, port {:?}{}",
            e.addresses.clone().unwrap_or_default(),
            e.port,
            match service_type {
                "NodePort" => " (an empty address means the node running the gateway pod is NotReady)",
                "LoadBalancer" => " (the cloud load balancer has not been provisioned yet)",
                _ => "",
            }
        )),
        None => Verdict::Pending(
            "no status.endpoint yet: Liqo renders the WgGatewayServerTemplate into a gateway Deployment and Service `gw-<name>`; check they exist and the template is installed".into(),
        ),
    }
}

/// Liqo's WgGatewayServer controller fills `status.endpoint` from its informer's copy of the Service `gw-<name>`
/// (`handleEndpointStatus` in Liqo 1.2.0): the first port's node port for a NodePort Service, else its port. After
/// the cluster's API server restarts, that copy may be a Service that is gone until the controller's watch of
/// Services comes back (client-go backs off for up to a minute): seen on real Liqo, a server made in a tenant
/// namespace deleted and recreated meanwhile got the deleted Service's node port, its updates of the Service
/// failed with 409, and the peer's client dialled a port nothing served. An endpoint counts only once the Service
/// the API server holds offers that port; `Err` says what is seen instead.
pub fn endpoint_served(endpoint: &EndpointStatus, service: Option<&Service>, name: &str) -> Result<(), String> {
    let Some(service) = service else {
        return Err(format!(
            "status.endpoint names port {:?}, but Service gw-{name} does not exist (Liqo's cache of Services lags \
             behind the API server, e.g. after it restarted)",
            endpoint.port
        ));
    };
    let served = published_port(service);
    if served.is_some() && served == endpoint.port {
        return Ok(());
    }
    Err(format!(
        "status.endpoint names port {:?}, but Service gw-{name} serves {:?} (Liqo's cache of Services lags behind \
         the API server, e.g. after it restarted)",
        endpoint.port, served
    ))
}

pub fn client_rendered_check(g: Option<&GatewayClient>) -> Verdict<()> {
    match g {
        None => Verdict::Pending("the GatewayClient does not exist".into()),
        Some(g) if g.status.as_ref().is_some_and(|s| s.client_ref.is_some()) => Verdict::Ready(()),
        Some(_) => Verdict::Pending(
            "no status.clientRef yet: Liqo renders the WgGatewayClientTemplate into a WgGatewayClient".into(),
        ),
    }
}

/// The key Secret exists, holds both keys and, if labelled for a peer, for this one.
pub fn key_secret_check(s: Option<&Secret>, remote_cluster_id: &str) -> Verdict<()> {
    let Some(s) = s else {
        return Verdict::Pending("the Secret does not exist".into());
    };
    if let Some(owner) = s.metadata.labels.as_ref().and_then(|l| l.get(labels::REMOTE_CLUSTER_ID))
        && owner != remote_cluster_id
    {
        return Verdict::Failed {
            reason: format!(
                "The Secret is labelled {}={owner}: it holds the keys for peer `{owner}`, not `{remote_cluster_id}`.",
                labels::REMOTE_CLUSTER_ID
            ),
            hint: format!(
                "Set key_secret_name to the `key_secret_name` of the liqo_generate whose remote_cluster_id is `{remote_cluster_id}`."
            ),
        };
    }
    let data = s.data.as_ref();
    let missing: Vec<&str> = [labels::WIREGUARD_PRIVATE_KEY, labels::WIREGUARD_PUBLIC_KEY]
        .into_iter()
        .filter(|k| !data.is_some_and(|d| d.contains_key(*k)))
        .collect();
    if !missing.is_empty() {
        return Verdict::Failed {
            reason: format!(
                "The Secret has no data key(s) {missing:?}; Liqo's gateway needs `privateKey` and `publicKey` (raw 32-byte WireGuard keys)."
            ),
            hint: "Let liqo_generate create the key Secret and pass its `key_secret_name` here.".into(),
        };
    }
    Verdict::Ready(())
}

/// The gateway's Connection among those labelled for the peer: the one owned by the gateway (by UID), or an
/// unowned one. Connections owned by an earlier gateway object are being garbage-collected and are ignored.
pub fn pick_connection<'a>(all: &'a [Connection], gateway_uid: Option<&str>) -> Result<Option<&'a Connection>, String> {
    let owned_by = |c: &Connection, uid: &str| {
        c.metadata.owner_references.as_ref().is_some_and(|o| o.iter().any(|r| r.uid == uid))
    };
    let mut mine: Vec<&Connection> = match gateway_uid {
        Some(uid) => all.iter().filter(|c| owned_by(c, uid)).collect(),
        None => Vec::new(),
    };
    if mine.is_empty() {
        mine = all.iter().filter(|c| c.metadata.owner_references.as_ref().is_none_or(|o| o.is_empty())).collect();
    }
    match mine.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        many => Err(format!(
            "{} Connections match ({}); Liqo expects exactly one per peer",
            many.len(),
            many.iter().map(|c| c.metadata.name.clone().unwrap_or_default()).collect::<Vec<_>>().join(", ")
        )),
    }
}

pub fn status_value(c: &Connection) -> String {
    c.status.as_ref().and_then(|s| s.value.clone()).unwrap_or_default()
}

fn connection_name(c: &Connection, namespace: &str) -> String {
    format!("Connection {namespace}/{}", c.metadata.name.clone().unwrap_or_default())
}

/// What a Connection check is looking for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WaitPhase {
    /// Waiting for `Connected` (or `Error`, which starts the grace period).
    Await,
    /// In `Error`: waiting for it to clear within [`ERROR_GRACE`].
    Grace,
    /// `Connected` was already there before this apply (it may predate the change): waiting for a latency Liqo
    /// measured after `fresh_after` (or, for a Connection without measurements, for it to stay so for
    /// [`SETTLE`], the time Liqo takes to report a broken tunnel).
    Settle { fresh_after: Timestamp },
}

/// Phase of the Connection wait as one check sees it.
#[derive(Debug, PartialEq)]
pub enum ConnPhase {
    /// `Connected` on the Connection with this UID, with the time of Liqo's latest latency measurement.
    Connected { uid: Option<String>, measured_at: Option<Timestamp> },
    /// `Error` seen on the Connection with this name (latency as Liqo reports it).
    Error { name: String, latency: Option<String> },
    /// Left `Error` (or `Connected` while settling) for something else, e.g. Connecting again: start over.
    Recovering,
}

pub fn connection_check(
    all: &[Connection],
    gateway_uid: Option<&str>,
    namespace: &str,
    mode: WaitPhase,
) -> Verdict<ConnPhase> {
    let conn = match pick_connection(all, gateway_uid) {
        Ok(c) => c,
        Err(why) => {
            return Verdict::Failed {
                reason: why,
                hint: "Delete the stale Connection(s) (they belong to gateways that no longer exist) and apply again."
                    .into(),
            };
        }
    };
    let Some(conn) = conn else {
        if mode != WaitPhase::Await {
            return Verdict::Ready(ConnPhase::Recovering);
        }
        return Verdict::Pending(
            "no Connection yet (the gateway creates it once WireGuard is configured with the peer's PublicKey)".into(),
        );
    };
    let object = connection_name(conn, namespace);
    let value = status_value(conn);
    let measured_at =
        conn.status.as_ref().and_then(|s| s.latency.as_ref()).and_then(|l| l.timestamp.as_ref()).map(|t| t.0);
    let connected = ConnPhase::Connected { uid: conn.metadata.uid.clone(), measured_at };
    match (value.as_str(), mode) {
        (CONNECTION_CONNECTED, WaitPhase::Settle { fresh_after }) if measured_at.is_some_and(|at| at > fresh_after) => {
            Verdict::Ready(connected)
        }
        (CONNECTION_CONNECTED, WaitPhase::Settle { .. }) => Verdict::Pending(format!(
            "{object} status.value = Connected; waiting for Liqo's gateway to measure the tunnel after the change"
        )),
        (CONNECTION_CONNECTED, _) => Verdict::Ready(connected),
        (CONNECTION_ERROR, WaitPhase::Grace) => Verdict::Pending(format!("{object} status.value = Error")),
        (CONNECTION_ERROR, _) => Verdict::Ready(ConnPhase::Error {
            name: conn.metadata.name.clone().unwrap_or_default(),
            latency: conn.status.as_ref().and_then(|s| s.latency.as_ref()).and_then(|l| l.value.clone()),
        }),
        (_, WaitPhase::Grace | WaitPhase::Settle { .. }) => Verdict::Ready(ConnPhase::Recovering),
        ("", WaitPhase::Await) => Verdict::Pending(format!("{object} has no status.value yet")),
        (other, WaitPhase::Await) => Verdict::Pending(format!("{object} status.value = {other}")),
    }
}

/// The failure reported when a Connection stays in `Error`: Liqo's own words (its Warning events, since the
/// Connection status has no message field), then the checks that find the usual causes.
pub fn connection_error(
    namespace: &str,
    name: &str,
    latency: Option<String>,
    endpoint: &str,
    warnings: &[String],
) -> OpError {
    let reported =
        if warnings.is_empty() { String::new() } else { format!("\nLiqo reported: {}", warnings.join(" | ")) };
    OpError::Failed {
        object: format!("Connection {namespace}/{name}"),
        reason: format!(
            "status.value has been Error for more than {}s: the WireGuard tunnel to the server endpoint {endpoint} passes no traffic{}.{reported}",
            ERROR_GRACE.as_secs(),
            latency.map(|l| format!(" (last latency {l})")).unwrap_or_default()
        ),
        hint: format!(
            "Check, in this order:\n\
             1. UDP reachability: the gateway pods of this cluster must reach {endpoint} (firewalls, NAT, security groups, NodePort/LoadBalancer exposure of the server).\n\
             2. Key mismatch: each side's `remote_public_key` must be the *peer's* liqo_generate `wireguard_public_key` (and key_secret_name this cluster's own key Secret); a wrong key on either side makes the WireGuard handshake fail silently.\n\
             3. MTU: `mtu` must be equal on both sides."
        ),
    }
}
