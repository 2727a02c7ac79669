//! `liqo_gateway` on the cluster: write the objects in Liqo's order and wait as Liqo documents, delete them in
//! Liqo's order, read them back, import them.
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ObjectReference, Secret, Service};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use liqo_schema::liqo::{
    CONNECTION_CONNECTED, Configuration, Connection, EndpointStatus, GatewayClient, GatewayServer, PublicKey,
    WgGatewayClient, WgGatewayClientTemplate, WgGatewayServer, WgGatewayServerTemplate, labels,
};
use liqo_schema::tf::{Diagnostic, Value};

use super::objects::{
    GatewayObj, GatewaySpec, Observed, Outputs, Role, Side, fill_outputs, side_of, state_from_observed, unknown_as_null,
};
use super::schema::attr;
use super::status::{
    ConnPhase, ERROR_GRACE, FRESH_MEASUREMENT, PING_INTERVAL, SETTLE, WaitPhase, client_rendered_check,
    configuration_check, connection_check, connection_error, endpoint_check, endpoint_served, key_secret_check,
    pick_connection, status_value,
};
use super::{GatewayResource, plan, schema};
use crate::attributes::Key;
use crate::cluster_api::ClusterApi;
use crate::import_id::{Found, ImportId, TENANT_NAMESPACE_PART, by_peer, label, namespaced_id};
use crate::kube::events::{regarding, warnings_about};
use crate::kube::{OpError, WaitTarget};
use crate::protocol::Ctx;
use crate::resources::lifecycle::{Deadline, Declared, Done, Failure, Lifecycle, Op, Timeouts};

/// How long to wait for the key Secret to appear (it may be created concurrently by liqo_generate when the
/// configuration passes names as literals rather than references).
const SECRET_WAIT: Duration = Duration::from_secs(30);

/// How often a wait for a server's endpoint looks for a gateway Liqo left half-made.
const HALF_MADE_CHECK: Duration = Duration::from_secs(15);
/// How often a server's endpoint that names no port of its Service (see [`endpoint_served`]) is read again.
const STALE_ENDPOINT_RECHECK: Duration = Duration::from_secs(1);

/// Kube handles for the tenant namespace.
struct Apis {
    configurations: Api<Configuration>,
    public_keys: Api<PublicKey>,
    servers: Api<GatewayServer>,
    clients: Api<GatewayClient>,
    wg_servers: Api<WgGatewayServer>,
    wg_clients: Api<WgGatewayClient>,
    connections: Api<Connection>,
    secrets: Api<Secret>,
    events: Api<Event>,
    deployments: Api<Deployment>,
    services: Api<Service>,
    namespace: String,
}

impl Apis {
    fn new(client: kube::Client, namespace: &str) -> Apis {
        Apis {
            configurations: Api::namespaced(client.clone(), namespace),
            public_keys: Api::namespaced(client.clone(), namespace),
            servers: Api::namespaced(client.clone(), namespace),
            clients: Api::namespaced(client.clone(), namespace),
            wg_servers: Api::namespaced(client.clone(), namespace),
            wg_clients: Api::namespaced(client.clone(), namespace),
            connections: Api::namespaced(client.clone(), namespace),
            secrets: Api::namespaced(client.clone(), namespace),
            deployments: Api::namespaced(client.clone(), namespace),
            services: Api::namespaced(client.clone(), namespace),
            events: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
        }
    }
}

/// How long a gateway server's Deployment may exist without its Service before it counts as half-made (Liqo writes
/// the Service right after the Deployment, in the same reconcile).
const HALF_MADE_AFTER: Duration = Duration::from_secs(10);

/// Liqo 1.2.0's WgGatewayServer controller (`wggatewayserver_controller.go`, Reconcile) reads the gateway's Service
/// to fill `status.endpoint` *before* it ensures the Deployment and the Service, and returns on that read's error.
/// Once the Deployment `gw-<name>` exists without its Service (the reconcile that made the Deployment failed before
/// the Service, e.g. across an API server restart, or the Service was deleted), every reconcile fails on the missing
/// Service and never creates it: the endpoint never comes. `Some(what is seen)` when the server is in that state.
async fn half_made(ctx: &Ctx, apis: &Apis, name: &str) -> Result<Option<String>, OpError> {
    let rendered = format!("gw-{name}");
    let Some(deployment) = crate::kube::get_opt(ctx, &apis.deployments, &rendered).await? else {
        return Ok(None);
    };
    let age = deployment
        .metadata
        .creation_timestamp
        .map(|t| Timestamp::now().duration_since(t.0).unsigned_abs())
        .unwrap_or_default();
    if age < HALF_MADE_AFTER || crate::kube::get_opt(ctx, &apis.services, &rendered).await?.is_some() {
        return Ok(None);
    }
    Ok(Some(format!(
        "Liqo left the gateway half-made: Deployment {ns}/{rendered} exists without its Service {ns}/{rendered}, and \
         Liqo's WgGatewayServer controller reads that Service before it creates it, so it never will (Liqo 1.2.0)",
        ns = apis.namespace
    )))
}

/// The repair Liqo's code allows: delete the rendered Deployment. With no Deployment the controller skips the
/// Service read and renders both again from the WgGatewayServer (the gateway pod restarts; without its Service the
/// server was unreachable anyway). Liqo recreates it at once under the same name; the wait is for this one (by UID).
async fn repair_half_made(ctx: &Ctx, apis: &Apis, name: &str, deadline: &Deadline) -> Result<(), OpError> {
    crate::kube::delete_and_wait(ctx, &apis.deployments, &format!("gw-{name}"), deadline.left()).await
}

/// Adds Liqo's warnings about the awaited object to a timeout, so the error says why it never got ready.
async fn explain_timeout(ctx: &Ctx, apis: &Apis, err: OpError, about: impl Fn(&ObjectReference) -> bool) -> OpError {
    match err {
        OpError::Timeout { object, waiting_for, last_seen, after } => {
            let warnings = warnings_about(ctx, &apis.events, about).await;
            let last_seen = if warnings.is_empty() {
                last_seen
            } else {
                format!("{last_seen}; Liqo reported: {}", warnings.join(" | "))
            };
            OpError::Timeout { object, waiting_for, last_seen, after }
        }
        other => other,
    }
}

impl GatewayResource {
    async fn apis(&self, namespace: &str) -> Result<Apis, Failure> {
        Ok(Apis::new(self.cluster.client().await?, namespace))
    }

    /// The template the gateway names must exist in Liqo's namespace: Liqo renders the gateway from it, and with
    /// none its reconciler fails ("unable to get the server template") and the gateway never comes up. Read only,
    /// before anything is written.
    async fn check_template(&self, ctx: &Ctx, spec: &GatewaySpec) -> Result<(), Failure> {
        let client = self.cluster.client().await?;
        let liqo_ns = self.cluster.liqo_namespace();
        let (path, name, found, kind, plural, default) = match &spec.role {
            Role::Server(s) => {
                let api: Api<WgGatewayServerTemplate> = Api::namespaced(client, &liqo_ns);
                let name = s.template_name.as_deref().unwrap_or_default();
                let found = crate::kube::get_opt(ctx, &api, name).await?.is_some();
                let default = labels::WIREGUARD_SERVER_TEMPLATE;
                let path = attr::server.path().attr(attr::server::template_name);
                (path, name, found, "WgGatewayServerTemplate", "wggatewayservertemplates", default)
            }
            Role::Client(c) => {
                let api: Api<WgGatewayClientTemplate> = Api::namespaced(client, &liqo_ns);
                let name = c.template_name.as_deref().unwrap_or_default();
                let found = crate::kube::get_opt(ctx, &api, name).await?.is_some();
                let default = labels::WIREGUARD_CLIENT_TEMPLATE;
                let path = attr::client.path().attr(attr::client::template_name);
                (path, name, found, "WgGatewayClientTemplate", "wggatewayclienttemplates", default)
            }
        };
        if found {
            return Ok(());
        }
        Err(Diagnostic::error(
            format!("Gateway template {name} not found for `{path}`"),
            format!(
                "{kind} {liqo_ns}/{name} does not exist on this cluster, and Liqo renders the gateway from it. Name \
                 an existing one (`kubectl get {plural} -n {liqo_ns}`), create it first, or remove `template_name` \
                 to use Liqo's own (`{default}`). Nothing was written."
            ),
        )
        .at(path)
        .into())
    }

    /// Liqo allows one gateway per tenant namespace and finds it by label: refuse to add a second one.
    async fn check_single_gateway(ctx: &Ctx, apis: &Apis, spec: &GatewaySpec) -> Result<(), OpError> {
        let selector = spec.selector();
        let mut others: Vec<String> = crate::kube::list(ctx, &apis.servers, &selector)
            .await?
            .into_iter()
            .filter(|g| !(matches!(spec.role, Role::Server(_)) && g.metadata.name.as_deref() == Some(spec.name())))
            .map(|g| format!("GatewayServer {}/{}", apis.namespace, g.metadata.name.unwrap_or_default()))
            .collect();
        others.extend(
            crate::kube::list(ctx, &apis.clients, &selector)
                .await?
                .into_iter()
                .filter(|g| !(matches!(spec.role, Role::Client(_)) && g.metadata.name.as_deref() == Some(spec.name())))
                .map(|g| format!("GatewayClient {}/{}", apis.namespace, g.metadata.name.unwrap_or_default())),
        );
        if others.is_empty() {
            return Ok(());
        }
        Err(OpError::Failed {
            object: format!("{} {}/{}", if matches!(spec.role, Role::Server(_)) { "GatewayServer" } else { "GatewayClient" }, apis.namespace, spec.name()),
            reason: format!(
                "Another gateway for peer `{}` already exists in the namespace: {}. Liqo supports exactly one gateway per peer and tenant namespace.",
                spec.planned.remote_cluster_id,
                others.join(", ")
            ),
            hint: "Delete it (`liqoctl network disconnect`, or destroy the liqo_gateway that owns it), or import it with `terraform import` instead of creating a new one.".into(),
        })
    }

    async fn wait_key_secret(ctx: &Ctx, apis: &Apis, spec: &GatewaySpec, deadline: &Deadline) -> Result<(), OpError> {
        let Some(key_secret_name) = &spec.planned.key_secret_name else {
            return Ok(());
        };
        let budget = SECRET_WAIT.min(deadline.left());
        let remote = spec.planned.remote_cluster_id.clone();
        let res =
            crate::kube::wait_for(ctx, &apis.secrets, key_secret_name, "the WireGuard key Secret", budget, move |s| {
                key_secret_check(s, &remote)
            })
            .await;
        match res {
            Err(OpError::Timeout { object, .. }) => Err(OpError::Failed {
                object,
                reason: format!("The WireGuard key Secret `{key_secret_name}` does not exist in namespace {}.", spec.planned.tenant_namespace),
                hint: "Create it with liqo_generate (pass its `key_secret_name` and `tenant_namespace` to this resource so Terraform orders them), or set key_secret_name to the existing key Secret.".into(),
            }),
            other => other,
        }
    }

    /// The first step of an apply, up to its first write: the checks, then the Configuration. Returns the UIDs of
    /// the Connections present before anything was written: they may still report the state from before this
    /// apply.
    async fn write_configuration(ctx: &Ctx, apis: &Apis, spec: &GatewaySpec) -> Result<Vec<String>, OpError> {
        Self::check_single_gateway(ctx, apis, spec).await?;
        let preexisting = crate::kube::list(ctx, &apis.connections, &spec.selector())
            .await?
            .into_iter()
            .filter_map(|c| c.metadata.uid)
            .collect();
        crate::kube::apply(ctx, &apis.configurations, &spec.configuration()).await?;
        Ok(preexisting)
    }

    /// The rest of an apply after [`Self::write_configuration`]: waits for the Configuration, writes the PublicKey
    /// and the gateway in Liqo's order and waits as the contract says. `recreate_server` deletes the existing
    /// GatewayServer first (its Service shape changed).
    async fn write_gateway(
        &self,
        ctx: &Ctx,
        apis: &Apis,
        spec: &GatewaySpec,
        preexisting: &[String],
        recreate_server: bool,
        deadline: &Deadline,
    ) -> Result<Outputs, OpError> {
        let liqo_ns = self.cluster.liqo_namespace();
        let configured = crate::kube::wait_for(
            ctx,
            &apis.configurations,
            spec.name(),
            "the peer's CIDRs to be configured (condition NetworkCIDRsConfigured=True for the current generation, or status.remote on Liqo < 1.2)",
            deadline.left(),
            configuration_check,
        )
        .await;
        let remapped = match configured {
            Ok(remapped) => remapped,
            Err(e) => {
                let about = regarding("Configuration", spec.name().to_string());
                return Err(explain_timeout(ctx, apis, e, about).await);
            }
        };

        crate::kube::apply(ctx, &apis.public_keys, &spec.public_key()).await?;
        Self::wait_key_secret(ctx, apis, spec, deadline).await?;

        match &spec.role {
            Role::Server(s) => {
                if recreate_server {
                    crate::kube::delete_and_wait(ctx, &apis.servers, spec.name(), deadline.left()).await?;
                }
                let applied = crate::kube::apply(ctx, &apis.servers, &spec.gateway_server(s, &liqo_ns)).await?;
                // A Connection already there means a client was connected: a repair of a half-made render restarts
                // the server, and the apply ends once the tunnel is back, as it did before.
                let had_connection = !crate::kube::list(ctx, &apis.connections, &spec.selector()).await?.is_empty();
                let (endpoint, repaired) =
                    match Self::wait_endpoint(ctx, apis, spec.name(), &s.service_type, deadline).await {
                        Ok(e) => e,
                        Err(e) => {
                            let about = regarding("GatewayServer", spec.name().to_string());
                            return Err(explain_timeout(ctx, apis, e, about).await);
                        }
                    };
                if repaired && had_connection {
                    let target = WaitTarget::labelled(
                        &apis.connections,
                        &spec.selector(),
                        "status.value == Connected after the gateway's repair",
                    );
                    crate::kube::wait_until(ctx, &apis.connections, target, deadline.left(), |all: &[Connection]| {
                        match all.iter().find(|c| status_value(c) == CONNECTION_CONNECTED) {
                            Some(_) => crate::kube::Verdict::Ready(()),
                            None => crate::kube::Verdict::Pending(
                                all.iter().map(status_value).collect::<Vec<_>>().join(", "),
                            ),
                        }
                    })
                    .await?;
                }
                let conns = crate::kube::list(ctx, &apis.connections, &spec.selector()).await?;
                let connection_status = pick_connection(&conns, applied.metadata.uid.as_deref())
                    .ok()
                    .flatten()
                    .map(status_value)
                    .unwrap_or_default();
                Ok(Outputs { endpoint: Some(endpoint), connection_status, remapped })
            }
            Role::Client(c) => {
                let applied = crate::kube::apply(ctx, &apis.clients, &spec.gateway_client(c, &liqo_ns)).await?;
                let uid = applied.metadata.uid.clone();
                if spec.planned.wait_for_connection {
                    let endpoint = format!(
                        "{}:{}/{}",
                        c.addresses.first().cloned().unwrap_or_default(),
                        c.port.unwrap_or_default(),
                        c.protocol.as_deref().unwrap_or_default()
                    );
                    Self::wait_connected(ctx, apis, spec, uid.as_deref(), preexisting, &endpoint, deadline).await?;
                    return Ok(Outputs { endpoint: None, connection_status: CONNECTION_CONNECTED.into(), remapped });
                }
                let rendered = crate::kube::wait_for(
                    ctx,
                    &apis.clients,
                    spec.name(),
                    "status.clientRef (the gateway rendered from the template)",
                    deadline.left(),
                    client_rendered_check,
                )
                .await;
                if let Err(e) = rendered {
                    let about = regarding("GatewayClient", spec.name().to_string());
                    return Err(explain_timeout(ctx, apis, e, about).await);
                }
                let conns = crate::kube::list(ctx, &apis.connections, &spec.selector()).await?;
                let connection_status =
                    pick_connection(&conns, uid.as_deref()).ok().flatten().map(status_value).unwrap_or_default();
                Ok(Outputs { endpoint: None, connection_status, remapped })
            }
        }
    }

    /// Waits for `Connected`. An `Error` that persists for [`ERROR_GRACE`] fails (it may flip
    /// Connecting → Error → Connected while the tunnel starts). A Connection that already existed before this
    /// apply (`preexisting` UIDs) may still show the state from before the change, so its `Connected` must hold
    /// for [`SETTLE`].
    async fn wait_connected(
        ctx: &Ctx,
        apis: &Apis,
        spec: &GatewaySpec,
        gateway_uid: Option<&str>,
        preexisting: &[String],
        endpoint: &str,
        deadline: &Deadline,
    ) -> Result<(), OpError> {
        let selector = spec.selector();
        let ns = apis.namespace.clone();
        // The objects were just applied: only a measurement taken after this shows the tunnel as changed.
        let fresh_after = Timestamp::now() + PING_INTERVAL;
        let mut mode = WaitPhase::Await;
        let mut settle = SETTLE;
        let mut last_error: Option<(String, Option<String>)> = None;
        loop {
            let (budget, waiting_for) = match mode {
                WaitPhase::Await => (deadline.left(), "status.value == Connected"),
                WaitPhase::Grace => (ERROR_GRACE.min(deadline.left()), "the Connection to leave Error"),
                WaitPhase::Settle { .. } => (settle.min(deadline.left()), "a fresh measurement of the tunnel"),
            };
            let target = WaitTarget::labelled(&apis.connections, &selector, waiting_for);
            let res = crate::kube::wait_until(ctx, &apis.connections, target, budget, |all: &[Connection]| {
                connection_check(all, gateway_uid, &ns, mode)
            })
            .await;
            match (mode, res) {
                (_, Ok(ConnPhase::Connected { uid, measured_at })) => {
                    let stale = uid.is_some_and(|u| preexisting.contains(&u));
                    if mode == WaitPhase::Await && stale {
                        settle = if measured_at.is_some() { FRESH_MEASUREMENT } else { SETTLE };
                        mode = WaitPhase::Settle { fresh_after };
                    } else {
                        return Ok(());
                    }
                }
                (_, Ok(ConnPhase::Error { name, latency })) => {
                    last_error = Some((name, latency));
                    mode = WaitPhase::Grace;
                }
                (_, Ok(ConnPhase::Recovering)) => mode = WaitPhase::Await,
                // Connected throughout the settle window.
                (WaitPhase::Settle { .. }, Err(OpError::Timeout { .. })) => return Ok(()),
                (WaitPhase::Grace, Err(OpError::Timeout { .. })) => {
                    let (name, latency) = last_error.take().unwrap_or_default();
                    let warnings = warnings_about(ctx, &apis.events, regarding("Connection", name.clone())).await;
                    return Err(connection_error(&ns, &name, latency, endpoint, &warnings));
                }
                (WaitPhase::Await, Err(e)) => {
                    // Still Connecting (or no Connection) at the deadline: quote what Liqo said about the
                    // gateway and its Connection.
                    let gateway = spec.name().to_string();
                    let about = move |r: &ObjectReference| {
                        r.kind.as_deref() == Some("Connection")
                            || (r.kind.as_deref() == Some("GatewayClient")
                                && r.name.as_deref() == Some(gateway.as_str()))
                    };
                    return Err(explain_timeout(ctx, apis, e, about).await);
                }
                (_, Err(e)) => return Err(e),
            }
        }
    }

    /// Waits for the server's endpoint, and says whether it repaired the render. A server Liqo left half-made
    /// ([`half_made`]) is repaired once; if it is half-made again, or still at the timeout, the error says so.
    async fn wait_endpoint(
        ctx: &Ctx,
        apis: &Apis,
        name: &str,
        service_type: &str,
        deadline: &Deadline,
    ) -> Result<(EndpointStatus, bool), OpError> {
        let mut repaired = false;
        let start = std::time::Instant::now();
        // Found half-made before the wait (a refresh planned this apply for it): its status still shows the
        // endpoint of the Service that is gone, so repair first and wait for Liqo to render the Service again.
        if half_made(ctx, apis, name).await?.is_some() {
            repair_half_made(ctx, apis, name, deadline).await?;
            repaired = true;
            let rendered = format!("gw-{name}");
            let present = |s: Option<&Service>| match s {
                Some(_) => crate::kube::Verdict::Ready(()),
                None => crate::kube::Verdict::Pending("not rendered again yet".into()),
            };
            crate::kube::wait_for(
                ctx,
                &apis.services,
                &rendered,
                "Liqo to render the gateway's Service again",
                deadline.left(),
                present,
            )
            .await?;
        }
        loop {
            let left = deadline.left();
            let last = left <= HALF_MADE_CHECK;
            let service_type = service_type.to_string();
            let waited = crate::kube::wait_for(
                ctx,
                &apis.servers,
                name,
                "status.endpoint with a non-empty address and a port",
                left.min(HALF_MADE_CHECK),
                move |g| endpoint_check(g, &service_type),
            )
            .await;
            let Err(OpError::Timeout { object, waiting_for, last_seen, .. }) = waited else {
                let endpoint = waited?;
                let service = crate::kube::get_opt(ctx, &apis.services, &format!("gw-{name}")).await?;
                match endpoint_served(&endpoint, service.as_ref(), name) {
                    Ok(()) => return Ok((endpoint, repaired)),
                    Err(seen) if deadline.left().is_zero() => {
                        return Err(OpError::Timeout {
                            object: format!("GatewayServer {}/{name}", apis.namespace),
                            waiting_for: "status.endpoint to name the port of the gateway's Service".into(),
                            last_seen: seen,
                            after: start.elapsed(),
                        });
                    }
                    // Liqo writes the status again once its watch of Services is back.
                    Err(_) => {
                        tokio::time::sleep(STALE_ENDPOINT_RECHECK.min(deadline.left())).await;
                        continue;
                    }
                }
            };
            let after = start.elapsed();
            match half_made(ctx, apis, name).await? {
                Some(seen) if repaired || last => {
                    return Err(OpError::Failed {
                        object,
                        reason: format!(
                            "{seen}; the provider deleted the Deployment once so that Liqo renders both again, and it is half-made again."
                        ),
                        hint: format!(
                            "Delete the Deployment yourself (`kubectl delete deployment -n {} gw-{name}`) and check the \
                             liqo-controller-manager's log for the WgGatewayServer {name}; then apply again.",
                            apis.namespace
                        ),
                    });
                }
                Some(_) => {
                    repair_half_made(ctx, apis, name, deadline).await?;
                    repaired = true;
                }
                None if last => return Err(OpError::Timeout { object, waiting_for, last_seen, after }),
                None => {}
            }
        }
    }

    /// Reads the owned objects; `None` when any of them is gone.
    async fn observe_gateway(ctx: &Ctx, apis: &Apis, name: &str, side: Side) -> Result<Option<Observed>, OpError> {
        let gateway = match side {
            Side::Server(()) => crate::kube::get_opt(ctx, &apis.servers, name).await?.map(GatewayObj::Server),
            Side::Client(()) => crate::kube::get_opt(ctx, &apis.clients, name).await?.map(GatewayObj::Client),
        };
        let Some(gateway) = gateway else {
            return Ok(None);
        };
        let Some(public_key) = crate::kube::get_opt(ctx, &apis.public_keys, name).await? else {
            return Ok(None);
        };
        let Some(configuration) = crate::kube::get_opt(ctx, &apis.configurations, name).await? else {
            return Ok(None);
        };
        let remote = gateway.remote_cluster_id(name);
        let conns =
            crate::kube::list(ctx, &apis.connections, &format!("{}={remote}", labels::REMOTE_CLUSTER_ID)).await?;
        let connection = pick_connection(&conns, gateway.uid()).ok().flatten().cloned();
        Ok(Some(Observed { configuration, public_key, gateway, connection }))
    }

    /// Deletes in Liqo's order (reference §6): gateway (and what Liqo rendered from it), PublicKey,
    /// Configuration, each waited for so finalizers are honoured.
    async fn delete_all(ctx: &Ctx, apis: &Apis, name: &str, side: Side, deadline: &Deadline) -> Result<(), OpError> {
        let uid = match side {
            Side::Server(()) => crate::kube::get_opt(ctx, &apis.servers, name).await?.and_then(|g| g.metadata.uid),
            Side::Client(()) => crate::kube::get_opt(ctx, &apis.clients, name).await?.and_then(|g| g.metadata.uid),
        };
        match side {
            Side::Server(()) => {
                crate::kube::delete_and_wait(ctx, &apis.servers, name, deadline.left()).await?;
                // Garbage collection would remove it too; deleting it here waits for Liqo's
                // clusterrolebinding finalizer and names it if Liqo never releases it.
                crate::kube::delete_and_wait(ctx, &apis.wg_servers, name, deadline.left()).await?;
            }
            Side::Client(()) => {
                crate::kube::delete_and_wait(ctx, &apis.clients, name, deadline.left()).await?;
                crate::kube::delete_and_wait(ctx, &apis.wg_clients, name, deadline.left()).await?;
            }
        }
        // The gateway's Connection is owned by it; delete it now rather than leaving it to the garbage collector
        // so nothing of this peering remains when destroy returns.
        if let Some(uid) = uid {
            let conns =
                crate::kube::list(ctx, &apis.connections, &format!("{}={name}", labels::REMOTE_CLUSTER_ID)).await?;
            let owned = conns
                .into_iter()
                .filter(|c| c.metadata.owner_references.as_ref().is_some_and(|o| o.iter().any(|r| r.uid == uid)));
            for c in owned {
                let cname = c.metadata.name.unwrap_or_default();
                crate::kube::delete_and_wait(ctx, &apis.connections, &cname, deadline.left()).await?;
            }
        }
        crate::kube::delete_and_wait(ctx, &apis.public_keys, name, deadline.left()).await?;
        crate::kube::delete_and_wait(ctx, &apis.configurations, name, deadline.left()).await?;
        Ok(())
    }
}

/// The tenant namespace and the name of the objects a state records; `None` when it lacks them.
fn names(state: &attr::Gateway) -> Option<(&str, &str)> {
    let (ns, name) = (state.tenant_namespace.as_str(), state.remote_cluster_id.as_str());
    (!ns.is_empty() && !name.is_empty()).then_some((ns, name))
}

#[async_trait]
impl Lifecycle for GatewayResource {
    const TYPE_NAME: &'static str = "liqo_gateway";
    const TIMEOUTS: Timeouts = Timeouts {
        create: Duration::from_secs(600),
        update: Duration::from_secs(600),
        delete: Duration::from_secs(300),
    };
    const DECLARED: Declared = schema::DECLARED;
    const IMPORT_ID: ImportId = ImportId {
        parts: &[
            TENANT_NAMESPACE_PART,
            ("name", "Name of the GatewayServer or GatewayClient (the peer's cluster ID)."),
        ],
        attributes: &[attr::tenant_namespace, attr::remote_cluster_id],
        example: "liqo-tenant-rome/rome",
        names: "the namespace and name of the GatewayServer or GatewayClient, named after the peer's cluster ID",
    };
    const LISTED_FOR_PEER: &'static str = "the gateway to that peer";
    const PEER: Option<Key> = Some(attr::remote_cluster_id);
    const TENANT_NAMESPACE: Option<Key> = Some(attr::tenant_namespace);
    const OBJECTS: &'static str = "the Configuration, PublicKey and GatewayServer or GatewayClient (with what Liqo made of them) in the tenant namespace";

    fn new(cluster: Arc<ClusterApi>) -> GatewayResource {
        GatewayResource { cluster }
    }

    async fn create(&self, op: &Op<'_>, planned: &Value, _config: &Value) -> Result<Done, Failure> {
        let spec = GatewaySpec::from_value(planned)?;
        self.check_template(op.ctx, &spec).await?;
        let apis = self.apis(&spec.planned.tenant_namespace).await?;
        let preexisting = Self::write_configuration(op.ctx, &apis, &spec).await?;
        // From here on the Configuration exists: a failure records the planned state, its unknown outputs null (a
        // state must be wholly known), so Terraform taints the resource and the next apply or destroy cleans up
        // instead of orphaning the objects.
        let out = self
            .write_gateway(op.ctx, &apis, &spec, &preexisting, false, &op.deadline)
            .await
            .map_err(|e| Failure::from(e).after_writing(unknown_as_null(planned)))?;
        Ok(fill_outputs(planned, &out).into())
    }

    /// Converges the objects to the plan like a create; a failure keeps the prior state (nothing recorded), so the
    /// next plan shows the change again.
    async fn update(&self, op: &Op<'_>, prior: &Value, planned: &Value, _config: &Value) -> Result<Done, Failure> {
        let spec = GatewaySpec::from_value(planned)?;
        self.check_template(op.ctx, &spec).await?;
        let apis = self.apis(&spec.planned.tenant_namespace).await?;
        let preexisting = Self::write_configuration(op.ctx, &apis, &spec).await?;
        let recreate = plan::server_needs_recreate(prior, planned);
        let out = self.write_gateway(op.ctx, &apis, &spec, &preexisting, recreate, &op.deadline).await?;
        Ok(fill_outputs(planned, &out).into())
    }

    async fn delete(&self, op: &Op<'_>, prior: &Value) -> Result<(), Failure> {
        // A state without its names holds nothing this resource could find: it is simply forgotten.
        let prior = attr::Gateway::of(prior);
        let Some((ns, name)) = names(&prior) else {
            return Ok(());
        };
        let apis = self.apis(ns).await?;
        Ok(Self::delete_all(op.ctx, &apis, name, side_of(&prior), &op.deadline).await?)
    }

    async fn observe(&self, ctx: &Ctx, state: &Value) -> Result<Done, Failure> {
        let prior = attr::Gateway::of(state);
        let Some((ns, name)) = names(&prior) else {
            return Ok(Value::Null.into());
        };
        let apis = self.apis(ns).await?;
        let side = side_of(&prior);
        let Some(obs) = Self::observe_gateway(ctx, &apis, name, side).await? else {
            return Ok(Value::Null.into());
        };
        if matches!(side, Side::Server(()))
            && let Some(seen) = half_made(ctx, &apis, name).await?
        {
            // Planned as a create: its apply writes the same objects again and repairs the render while it waits
            // for the endpoint.
            let warning = Diagnostic::warning(
                format!("liqo_gateway {ns}/{name} is half-made and will be repaired"),
                format!(
                    "{seen}. The next apply deletes that Deployment so that Liqo renders it and its Service again."
                ),
            );
            return Ok(Done::from(Value::Null).with_warning(warning));
        }
        Ok(state_from_observed(&prior, &obs, ns, name).value().into())
    }

    async fn find(ctx: &Ctx, client: kube::Client, remote: Option<&str>) -> Result<Vec<Found>, OpError> {
        let selector = by_peer(labels::REMOTE_CLUSTER_ID, labels::REMOTE_CLUSTER_ID, remote);
        let servers: Api<GatewayServer> = Api::all(client.clone());
        let clients: Api<GatewayClient> = Api::all(client);
        let peer = |m: &kube::api::ObjectMeta| label(m, labels::REMOTE_CLUSTER_ID).map(str::to_string);
        let mut all: Vec<Found> = crate::kube::list(ctx, &servers, &selector)
            .await?
            .iter()
            .map(|g| Found::new(namespaced_id(&g.metadata), "GatewayServer", peer(&g.metadata).as_deref()))
            .collect();
        all.extend(
            crate::kube::list(ctx, &clients, &selector)
                .await?
                .iter()
                .map(|g| Found::new(namespaced_id(&g.metadata), "GatewayClient", peer(&g.metadata).as_deref())),
        );
        Ok(all)
    }

    async fn import(&self, ctx: &Ctx, id: &str) -> Result<Value, Failure> {
        let [ns, name] = Self::IMPORT_ID.parse(Self::TYPE_NAME, id)?;
        let apis = self.apis(&ns).await?;
        let mut found = None;
        for side in [Side::Server(()), Side::Client(())] {
            if let Some(obs) = Self::observe_gateway(ctx, &apis, &name, side).await? {
                found = Some(obs);
                break;
            }
        }
        let Some(obs) = found else {
            return Err(Diagnostic::error(
                format!("Cannot import liqo_gateway {id}"),
                format!(
                    "Expected a GatewayServer or GatewayClient, a PublicKey and a Configuration, all named `{name}` in namespace {ns} (the names liqoctl and this provider use); at least one is missing. List them with `kubectl get gatewayservers,gatewayclients,publickeies,configurations -n {ns}`."
                ),
            )
            .into());
        };
        let state = state_from_observed(&attr::Gateway::defaults(), &obs, &ns, &name);
        // Read looks objects up by the remote cluster ID, so it must be the name for the state to stay readable.
        if state.remote_cluster_id != name {
            return Err(Diagnostic::error(
                format!("Cannot import liqo_gateway {id}"),
                format!(
                    "The gateway `{name}` is labelled {}={}, but liqo_gateway manages objects named after the peer's cluster ID. Recreate the objects with that name (or let this resource create them after `liqoctl network disconnect`).",
                    labels::REMOTE_CLUSTER_ID,
                    state.remote_cluster_id
                ),
            )
            .into());
        }
        Ok(state.value())
    }
}
