//! Liqo's authentication controllers: Tenant, the crd-replicator (consumer ResourceSlices copied to the
//! provider with the control-plane kubeconfig, status copied back, finalizers on the slice and the Secret) and
//! the provider's ResourceSlice approval.
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use liqo_schema::liqo::labels::{self, REMOTE_CLUSTER_ID};
use liqo_schema::liqo::{
    AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE, LiqoCondition, RESOURCE_SLICE_ACCEPTED,
    RESOURCE_SLICE_AUTHENTICATION_ACCEPTED_REASON, RESOURCE_SLICE_AUTHENTICATION_DENIED_REASON,
    RESOURCE_SLICE_CLASS_DEFAULT, RESOURCE_SLICE_CONDITION_AUTHENTICATION, RESOURCE_SLICE_CONDITION_RESOURCES,
    RESOURCE_SLICE_DENIED, RESOURCE_SLICE_RESOURCES_ACCEPTED_REASON, RESOURCE_SLICE_RESOURCES_DENIED_REASON,
    ResourceList, ResourceSlice, ResourceSliceStatus, TENANT_CONDITION_ACTIVE, TENANT_CONDITION_CORDONED,
    TENANT_CONDITION_DRAINED, Tenant, upsert_liqo_condition,
};
use serde_json::json;

use super::context::{Ctx, Topic};
use super::ops::{self, annotation, describe, has_finalizer, is_deleting, is_not_found, label};
use super::supervisor::drive;
use super::virtual_node;

/// Retry delay while the remote API refuses or is unreachable (RBAC may be fixed, the cluster may come back).
const REMOTE_RETRY: Duration = Duration::from_secs(2);
/// Retry delay while waiting for something to disappear.
const GONE_RETRY: Duration = Duration::from_millis(200);
/// Field manager of the replicated copies on the provider, like Liqo's crd-replicator.
const REPLICATOR_MANAGER: &str = "simulated-liqo-crd-replicator";
/// Resources granted for keys a slice does not request (Liqo's Helm `offloading.defaultNodeResources`).
/// Liqo's `offloading.defaultNodeResources` (the same in the charts of v1.0.3, v1.1.2 and v1.2.0), which its
/// controller grants for every resource a default-class slice does not request.
const DEFAULT_RESOURCES: [(&str, &str); 4] =
    [("cpu", "4"), ("ephemeral-storage", "20Gi"), ("memory", "8Gi"), ("pods", "110")];

// ---------------------------------------------------------------------------------------------------------------
// Tenant
// ---------------------------------------------------------------------------------------------------------------

pub async fn tenants(ctx: Arc<Ctx>) {
    let controller = Controller::new(Api::<Tenant>::all(ctx.cluster.client.clone()), watcher::Config::default());
    drive(ctx, controller, reconcile_tenant).await
}

async fn reconcile_tenant(tenant: Arc<Tenant>, ctx: Arc<Ctx>) -> Result<Action> {
    let cluster = &ctx.cluster;
    let ns = tenant.namespace().unwrap_or_default();
    let api: Api<Tenant> = Api::namespaced(cluster.client.clone(), &ns);
    if is_deleting(&*tenant) {
        // Liqo removes the consumer's cluster-wide binding (never created on the ground), then its finalizer.
        if has_finalizer(&*tenant, labels::TENANT_FINALIZER) {
            ops::remove_finalizer(&api, &*tenant, labels::TENANT_FINALIZER).await?;
            log_line!(cluster.name, "{}: released finalizer {}", describe(&*tenant), labels::TENANT_FINALIZER);
        }
        return Ok(Action::await_change());
    }
    let tenant = ops::add_finalizer(&api, &*tenant, labels::TENANT_FINALIZER).await?;
    let regarding = tenant.object_ref(&());
    let Some(consumer) = tenant.spec.cluster_id.clone().filter(|id| !id.is_empty()) else {
        cluster.events.warning(&regarding, "InvalidTenant", "spec.clusterID is empty").await;
        return Ok(Action::await_change());
    };
    if label(&tenant, REMOTE_CLUSTER_ID).is_none() {
        // Liqo's mutating webhook adds the label; peering tools must not fight over it.
        ops::merge_patch(&api, &tenant, json!({"metadata": {"labels": {REMOTE_CLUSTER_ID: consumer}}})).await?;
        return Ok(Action::await_change());
    }
    if tenant.spec.authz_policy.as_deref() != Some(AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE) {
        let note = "authzPolicy KeysExchange needs the nonce handshake, which the simulator does not play; Liqo would \
                    stop with NonceNotFound/SignatureVerificationFailed here. Use TolerateNoHandshake";
        cluster.events.warning(&regarding, "SignatureVerificationFailed", note).await;
        return Ok(Action::await_change());
    }
    if let Err(problem) = check_tenant_namespace(&ctx, &ns, &consumer).await? {
        cluster.events.warning(&regarding, "InvalidTenantNamespace", &problem).await;
        return Ok(Action::await_change());
    }
    if tenant.spec.tenant_condition.as_deref() == Some(TENANT_CONDITION_DRAINED) {
        // Liqo's tenant controller returns early for a Drained Tenant: it unbinds the consumer and deletes its
        // ResourceSlices, and never writes status.tenantNamespace (tenant_controller.go).
        return drain(&ctx, &tenant, &ns, &consumer).await;
    }
    let current = tenant.status.as_ref().and_then(|s| s.tenant_namespace.as_deref());
    if current != Some(ns.as_str()) {
        ops::apply_status(cluster, &api, &tenant, json!({"tenantNamespace": ns})).await?;
        log_line!(cluster.name, "{}: tenantNamespace={ns}", describe(&tenant));
    }
    Ok(Action::await_change())
}

/// Liqo's handling of a Drained Tenant: delete the control-plane RoleBinding (`liqo-binding-<role>` for the
/// ClusterRole labelled `app.kubernetes.io/name=remote-controlplane`) and every ResourceSlice labelled for the
/// consumer in the tenant namespace.
async fn drain(ctx: &Ctx, tenant: &Tenant, ns: &str, consumer: &str) -> Result<Action> {
    let client = ctx.cluster.client.clone();
    let roles = Api::<ClusterRole>::all(client.clone())
        .list(&ListParams::default().labels(&format!("{}={}", labels::APP_NAME, labels::REMOTE_CONTROLPLANE_APP_NAME)))
        .await
        .context("listing the control-plane ClusterRoles")?;
    let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), ns);
    for role in &roles.items {
        let name = format!("liqo-binding-{}", role.name_any());
        if bindings.get_opt(&name).await.with_context(|| format!("reading RoleBinding {ns}/{name}"))?.is_some() {
            ops::delete_and_check(&bindings, &name).await?;
            log_line!(ctx.cluster.name, "{}: Drained, deleted RoleBinding {ns}/{name}", describe(tenant));
        }
    }
    let slices: Api<ResourceSlice> = Api::namespaced(client, ns);
    let selector = format!("{REMOTE_CLUSTER_ID}={consumer}");
    for rs in slices.list(&ListParams::default().labels(&selector)).await.context("listing ResourceSlices")?.items {
        if !is_deleting(&rs) {
            ops::delete_and_check(&slices, &rs.name_any()).await?;
            log_line!(ctx.cluster.name, "{}: Drained, deleted {}", describe(tenant), describe(&rs));
        }
    }
    Ok(Action::await_change())
}

/// Liqo's tenant-namespace rules: label `liqo.io/tenant-namespace` present (and not "false"), and
/// `liqo.io/remote-cluster-id` equal to the consumer. `Ok(Err(problem))` when broken.
async fn check_tenant_namespace(ctx: &Ctx, ns: &str, consumer: &str) -> Result<Result<(), String>> {
    let api: Api<Namespace> = Api::all(ctx.cluster.client.clone());
    let namespace = api.get(ns).await.with_context(|| format!("reading Namespace {ns}"))?;
    Ok(match (label(&namespace, labels::TENANT_NAMESPACE), label(&namespace, REMOTE_CLUSTER_ID)) {
        (None | Some("false"), _) => {
            Err(format!("namespace {ns} is not a tenant namespace (label {} missing)", labels::TENANT_NAMESPACE))
        }
        (_, id) if id != Some(consumer) => Err(format!(
            "namespace {ns} is the tenant namespace of {:?}, not of consumer {consumer} (label {REMOTE_CLUSTER_ID})",
            id.unwrap_or("nobody")
        )),
        _ => Ok(()),
    })
}

// ---------------------------------------------------------------------------------------------------------------
// ResourceSlices: one controller, two roles (local slice on the consumer, replicated copy on the provider)
// ---------------------------------------------------------------------------------------------------------------

pub async fn resource_slices(ctx: Arc<Ctx>) {
    let controller = Controller::new(Api::<ResourceSlice>::all(ctx.cluster.client.clone()), watcher::Config::default())
        .reconcile_all_on(ctx.cluster.subscribe(Topic::Authentication));
    drive(ctx, controller, reconcile_slice).await
}

async fn reconcile_slice(rs: Arc<ResourceSlice>, ctx: Arc<Ctx>) -> Result<Action> {
    if label(&*rs, labels::REPLICATED) == Some(labels::TRUE) {
        approve_replicated_slice(&ctx, &rs).await
    } else {
        replicate_local_slice(&ctx, &rs).await
    }
}

/// The control-plane kubeconfig Secret of a local slice's provider, the client it yields and the target namespace.
struct Replication {
    secret: Secret,
    remote: Client,
    target_namespace: String,
}

/// Finds the unique control-plane Secret for `provider` in `ns`. `Ok(Err(problem))` when there is none usable.
async fn replication(ctx: &Ctx, ns: &str, provider: &str) -> Result<Result<Replication, String>> {
    let api: Api<Secret> = Api::namespaced(ctx.cluster.client.clone(), ns);
    let selector =
        format!("{}={},{REMOTE_CLUSTER_ID}={provider}", labels::IDENTITY_TYPE, labels::IDENTITY_TYPE_CONTROL_PLANE);
    let mut secrets =
        api.list(&ListParams::default().labels(&selector)).await.context("listing control-plane Secrets")?.items;
    let secret = match secrets.len() {
        1 => secrets.pop().expect("one Secret"),
        0 => return Ok(Err(format!("no Secret labelled {selector} in namespace {ns}: nothing to replicate with"))),
        n => return Ok(Err(format!("{n} Secrets labelled {selector} in namespace {ns}; Liqo needs exactly one"))),
    };
    let Some(target_namespace) = annotation(&secret, labels::REMOTE_TENANT_NAMESPACE).map(str::to_owned) else {
        return Ok(Err(format!(
            "Secret {ns}/{} lacks annotation {}",
            secret.name_any(),
            labels::REMOTE_TENANT_NAMESPACE
        )));
    };
    let Some(kubeconfig) = secret.data.as_ref().and_then(|d| d.get(labels::KUBECONFIG_KEY)) else {
        return Ok(Err(format!("Secret {ns}/{} has no data.{}", secret.name_any(), labels::KUBECONFIG_KEY)));
    };
    let key = format!("{ns}/{}", secret.name_any());
    match ctx.cluster.remote_client(&key, &kubeconfig.0).await {
        Ok(remote) => Ok(Ok(Replication { secret, remote, target_namespace })),
        Err(err) => Ok(Err(format!("the kubeconfig in Secret {key} is unusable: {err:#}"))),
    }
}

/// Consumer side: fill the IDs, replicate with the control-plane identity, copy the status back, drive the
/// VirtualNode; on deletion remove the provider copy first.
async fn replicate_local_slice(ctx: &Ctx, rs: &ResourceSlice) -> Result<Action> {
    let cluster = &ctx.cluster;
    let ns = rs.namespace().unwrap_or_default();
    let api: Api<ResourceSlice> = Api::namespaced(cluster.client.clone(), &ns);
    let regarding = rs.object_ref(&());
    let provider = rs
        .spec
        .provider_cluster_id
        .clone()
        .or_else(|| label(rs, labels::REMOTE_ID).map(str::to_owned))
        .or_else(|| label(rs, REMOTE_CLUSTER_ID).map(str::to_owned));

    if is_deleting(rs) {
        virtual_node::delete_for_slice(ctx, &ns, &rs.name_any()).await?;
        if !has_finalizer(rs, labels::CRD_REPLICATOR_RESOURCE_FINALIZER) {
            return Ok(Action::await_change());
        }
        let replication = match provider.as_deref() {
            Some(p) => replication(ctx, &ns, p).await?,
            None => Err("the slice names no provider".to_owned()),
        };
        let replication = match replication {
            Ok(r) => r,
            Err(problem) => {
                let note = format!(
                    "cannot delete the provider's copy ({problem}); finalizer {} stays until it can",
                    labels::CRD_REPLICATOR_RESOURCE_FINALIZER
                );
                cluster.events.warning(&regarding, "ReplicationFailed", &note).await;
                return Ok(Action::requeue(REMOTE_RETRY));
            }
        };
        let remote: Api<ResourceSlice> = Api::namespaced(replication.remote, &replication.target_namespace);
        match ops::delete_and_check(&remote, &rs.name_any()).await {
            Ok(true) => {
                ops::remove_finalizer(&api, rs, labels::CRD_REPLICATOR_RESOURCE_FINALIZER).await?;
                log_line!(
                    cluster.name,
                    "{}: provider copy gone; released finalizer {}",
                    describe(rs),
                    labels::CRD_REPLICATOR_RESOURCE_FINALIZER
                );
                Ok(Action::await_change())
            }
            Ok(false) => Ok(Action::requeue(GONE_RETRY)),
            Err(err) => {
                let note =
                    format!("deleting the provider's copy in namespace {}: {err:#}", replication.target_namespace);
                cluster.events.warning(&regarding, "ReplicationFailed", &note).await;
                Ok(Action::requeue(REMOTE_RETRY))
            }
        }
    } else {
        let Some(provider) = provider else {
            let note =
                format!("no spec.providerClusterID and no label {}: the slice names no provider", labels::REMOTE_ID);
            cluster.events.warning(&regarding, "InvalidResourceSlice", &note).await;
            return Ok(Action::await_change());
        };
        let mut rs = rs.clone();
        if rs.spec.consumer_cluster_id.as_deref() != Some(cluster.id.as_str()) || rs.spec.provider_cluster_id.is_none()
        {
            // Liqo's consumer controller fills both IDs by Update; peering tools must not own them.
            let patch = json!({"spec": {"consumerClusterID": cluster.id, "providerClusterID": provider}});
            rs = ops::merge_patch(&api, &rs, patch).await?;
        }
        if label(&rs, labels::REPLICATION) != Some(labels::TRUE) {
            // Without the label the crd-replicator never sees the slice (liqotech/liqo#3046).
            return Ok(Action::await_change());
        }
        let replication = match replication(ctx, &ns, &provider).await? {
            Ok(r) => r,
            Err(problem) => {
                cluster.events.warning(&regarding, "ReplicationNotConfigured", &problem).await;
                return Ok(Action::await_change());
            }
        };
        if is_deleting(&replication.secret) {
            return Ok(Action::await_change());
        }
        let rs = ops::add_finalizer(&api, &rs, labels::CRD_REPLICATOR_RESOURCE_FINALIZER).await?;
        let copy = match push_copy(ctx, &rs, &replication).await {
            Ok(copy) => copy,
            Err(err) => {
                let note = format!(
                    "replicating to namespace {} of {provider} with the kubeconfig of Secret {ns}/{}: {err:#}",
                    replication.target_namespace,
                    replication.secret.name_any()
                );
                cluster.events.warning(&regarding, "ReplicationFailed", &note).await;
                return Ok(Action::requeue(REMOTE_RETRY));
            }
        };
        // Status is owned by the provider: mirror it exactly.
        let remote_status = ops::status_json(copy.status.as_ref());
        if remote_status != ops::status_json(rs.status.as_ref()) && !remote_status.is_null() {
            ops::apply_status(cluster, &api, &rs, remote_status).await?;
            log_line!(
                cluster.name,
                "{}: status copied from {provider}: {}",
                describe(&rs),
                summary(copy.status.as_ref())
            );
        }
        virtual_node::ensure_for_slice(ctx, &rs, copy.status.as_ref()).await?;
        Ok(Action::await_change())
    }
}

/// Server-side applies the provider copy (spec and Liqo's replication labels) with the control-plane identity.
async fn push_copy(ctx: &Ctx, rs: &ResourceSlice, replication: &Replication) -> Result<ResourceSlice> {
    let mut copy_labels: BTreeMap<String, String> = rs
        .labels()
        .iter()
        .filter(|(k, _)| k.as_str() != labels::REPLICATION && k.as_str() != labels::REMOTE_ID)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    copy_labels.insert(labels::REPLICATED.into(), labels::TRUE.into());
    copy_labels.insert(labels::ORIGIN_ID.into(), ctx.cluster.id.clone());
    copy_labels.insert(REMOTE_CLUSTER_ID.into(), ctx.cluster.id.clone());
    let body = json!({
        "apiVersion": ResourceSlice::api_version(&()),
        "kind": ResourceSlice::kind(&()),
        "metadata": {"name": rs.name_any(), "labels": copy_labels, "annotations": ops::simulated_annotations()},
        "spec": rs.spec,
    });
    let api: Api<ResourceSlice> = Api::namespaced(replication.remote.clone(), &replication.target_namespace);
    let copy = api.patch(&rs.name_any(), &PatchParams::apply(REPLICATOR_MANAGER).force(), &Patch::Apply(&body)).await?;
    Ok(copy)
}

fn summary(status: Option<&ResourceSliceStatus>) -> String {
    let conditions = status.and_then(|s| s.conditions.as_ref()).cloned().unwrap_or_default();
    conditions.iter().map(|c| format!("{}={}", c.type_, c.status)).collect::<Vec<_>>().join(", ")
}

/// Provider side (admin credentials, like Liqo's provider controller): check the namespace and Tenant, then
/// decide Authentication and Resources.
async fn approve_replicated_slice(ctx: &Ctx, rs: &ResourceSlice) -> Result<Action> {
    let cluster = &ctx.cluster;
    if is_deleting(rs) {
        return Ok(Action::await_change());
    }
    let ns = rs.namespace().unwrap_or_default();
    let api: Api<ResourceSlice> = Api::namespaced(cluster.client.clone(), &ns);
    let regarding = rs.object_ref(&());
    let Some(consumer) = label(rs, labels::ORIGIN_ID).or(rs.spec.consumer_cluster_id.as_deref()).map(str::to_owned)
    else {
        cluster.events.warning(&regarding, "InvalidResourceSlice", "the replicated slice names no consumer").await;
        return Ok(Action::await_change());
    };
    let mut conditions = rs.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default();
    let previously_accepted =
        rs.status.as_ref().and_then(|s| s.condition(RESOURCE_SLICE_CONDITION_RESOURCES)).map(|c| c.status.as_str())
            == Some(RESOURCE_SLICE_ACCEPTED);

    if let Err(problem) = check_tenant_namespace(ctx, &ns, &consumer).await? {
        upsert_liqo_condition(
            &mut conditions,
            condition(
                RESOURCE_SLICE_CONDITION_AUTHENTICATION,
                RESOURCE_SLICE_DENIED,
                RESOURCE_SLICE_AUTHENTICATION_DENIED_REASON,
                &problem,
            ),
        );
        return write_slice_status(ctx, &api, rs, conditions, None).await;
    }
    let tenants: Api<Tenant> = Api::namespaced(cluster.client.clone(), &ns);
    let tenant = tenants.list(&ListParams::default()).await.context("listing Tenants")?.items.into_iter().find(|t| {
        t.spec.cluster_id.as_deref() == Some(consumer.as_str())
            || label(t, REMOTE_CLUSTER_ID) == Some(consumer.as_str())
    });
    let Some(tenant) = tenant else {
        let note = format!("no Tenant for consumer {consumer} in namespace {ns}; the slice waits for it");
        cluster.events.warning(&regarding, "TenantNotFound", &note).await;
        return Ok(Action::await_change());
    };
    upsert_liqo_condition(
        &mut conditions,
        condition(
            RESOURCE_SLICE_CONDITION_AUTHENTICATION,
            RESOURCE_SLICE_ACCEPTED,
            RESOURCE_SLICE_AUTHENTICATION_ACCEPTED_REASON,
            "the consumer is authenticated",
        ),
    );

    let tenant_condition = tenant.spec.tenant_condition.clone().unwrap_or_else(|| TENANT_CONDITION_ACTIVE.into());
    let cordoned = tenant_condition == TENANT_CONDITION_CORDONED || tenant_condition == TENANT_CONDITION_DRAINED;
    if cordoned != (annotation(rs, labels::CORDON_TENANT) == Some(labels::TRUE)) {
        let value = cordoned.then_some(labels::TRUE);
        let patch = json!({"metadata": {"annotations": {labels::CORDON_TENANT: value}}});
        ops::merge_patch(&api, rs, patch).await?;
    }

    let class = rs.spec.class.as_deref().unwrap_or_default();
    if !class.is_empty() && class != RESOURCE_SLICE_CLASS_DEFAULT {
        // Only a custom class controller would decide resources for this class; none runs on the ground.
        conditions.retain(|c| c.type_ != RESOURCE_SLICE_CONDITION_RESOURCES);
        return write_slice_status(ctx, &api, rs, conditions, None).await;
    }
    let denial = if tenant_condition == TENANT_CONDITION_DRAINED {
        Some(format!("Tenant {ns}/{} is Drained: no resources are granted to {consumer}", tenant.name_any()))
    } else if previously_accepted {
        None
    } else if tenant_condition == TENANT_CONDITION_CORDONED {
        Some(format!("Tenant {ns}/{} is Cordoned: new ResourceSlices of {consumer} are denied", tenant.name_any()))
    } else if cluster.faults().deny_resource_slices {
        Some("simulated fault deny-resource-slices: the provider denies new ResourceSlices".to_owned())
    } else {
        None
    };
    let resources = match &denial {
        Some(message) => {
            upsert_liqo_condition(
                &mut conditions,
                condition(
                    RESOURCE_SLICE_CONDITION_RESOURCES,
                    RESOURCE_SLICE_DENIED,
                    RESOURCE_SLICE_RESOURCES_DENIED_REASON,
                    message,
                ),
            );
            None
        }
        None => {
            upsert_liqo_condition(
                &mut conditions,
                condition(
                    RESOURCE_SLICE_CONDITION_RESOURCES,
                    RESOURCE_SLICE_ACCEPTED,
                    RESOURCE_SLICE_RESOURCES_ACCEPTED_REASON,
                    "the requested resources are granted",
                ),
            );
            Some(granted(rs.spec.resources.as_ref()))
        }
    };
    write_slice_status(ctx, &api, rs, conditions, resources).await
}

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> LiqoCondition {
    LiqoCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_transition_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::now(),
        )),
    }
}

/// The request, with Liqo's defaults for the standard resources it leaves out.
fn granted(requested: Option<&ResourceList>) -> ResourceList {
    let mut resources = requested.cloned().unwrap_or_default();
    for (key, value) in DEFAULT_RESOURCES {
        resources.entry(key.to_owned()).or_insert_with(|| Quantity(value.to_owned()));
    }
    resources
}

async fn write_slice_status(
    ctx: &Ctx,
    api: &Api<ResourceSlice>,
    rs: &ResourceSlice,
    conditions: Vec<LiqoCondition>,
    resources: Option<ResourceList>,
) -> Result<Action> {
    let desired = ResourceSliceStatus { conditions: Some(conditions), resources, ..Default::default() };
    if ops::status_json(rs.status.as_ref()) != serde_json::to_value(&desired)? {
        ops::apply_status(&ctx.cluster, api, rs, serde_json::to_value(&desired)?).await?;
        log_line!(ctx.cluster.name, "{}: {}", describe(rs), summary(Some(&desired)));
    }
    Ok(Action::await_change())
}

// ---------------------------------------------------------------------------------------------------------------
// Control-plane kubeconfig Secrets (crd-replicator operator finalizer)
// ---------------------------------------------------------------------------------------------------------------

pub async fn control_plane_secrets(ctx: Arc<Ctx>) {
    let selector = format!("{}={}", labels::IDENTITY_TYPE, labels::IDENTITY_TYPE_CONTROL_PLANE);
    let controller =
        Controller::new(Api::<Secret>::all(ctx.cluster.client.clone()), watcher::Config::default().labels(&selector))
            .reconcile_all_on(ctx.cluster.subscribe(Topic::Authentication));
    drive(ctx, controller, reconcile_control_plane_secret).await
}

async fn reconcile_control_plane_secret(secret: Arc<Secret>, ctx: Arc<Ctx>) -> Result<Action> {
    let cluster = &ctx.cluster;
    let ns = secret.namespace().unwrap_or_default();
    let api: Api<Secret> = Api::namespaced(cluster.client.clone(), &ns);
    let finalizer = labels::CRD_REPLICATOR_OPERATOR_FINALIZER;
    let Some(provider) = label(&*secret, REMOTE_CLUSTER_ID).map(str::to_owned) else {
        if !is_deleting(&*secret) {
            let note = format!("missing label {REMOTE_CLUSTER_ID}: the crd-replicator ignores this Secret");
            cluster.events.warning(&secret.object_ref(&()), "InvalidSecret", &note).await;
        }
        return Ok(Action::await_change());
    };
    if !is_deleting(&*secret) {
        if annotation(&*secret, labels::REMOTE_TENANT_NAMESPACE).is_none() {
            let note = format!(
                "missing annotation {}: the crd-replicator refuses this Secret",
                labels::REMOTE_TENANT_NAMESPACE
            );
            cluster.events.warning(&secret.object_ref(&()), "InvalidSecret", &note).await;
            return Ok(Action::await_change());
        }
        ops::add_finalizer(&api, &*secret, finalizer).await?;
        return Ok(Action::await_change());
    }
    if !has_finalizer(&*secret, finalizer) {
        return Ok(Action::await_change());
    }
    // Released only when no replicated object remains, locally or on the provider.
    let slices: Api<ResourceSlice> = Api::namespaced(cluster.client.clone(), &ns);
    let selector = format!("{}={},{}={provider}", labels::REPLICATION, labels::TRUE, labels::REMOTE_ID);
    let local = slices.list(&ListParams::default().labels(&selector)).await.context("listing local ResourceSlices")?;
    if !local.items.is_empty() {
        log_line!(
            cluster.name,
            "{}: {} replicated ResourceSlice(s) remain; finalizer {finalizer} stays",
            describe(&*secret),
            local.items.len()
        );
        return Ok(Action::requeue(REMOTE_RETRY));
    }
    if let Ok(Ok(replication)) = replication(&ctx, &ns, &provider).await {
        let remote: Api<ResourceSlice> = Api::namespaced(replication.remote, &replication.target_namespace);
        let mine = ListParams::default().labels(&format!("{}={}", labels::ORIGIN_ID, cluster.id));
        match remote.list(&mine).await {
            Ok(list) if !list.items.is_empty() => {
                log_line!(
                    cluster.name,
                    "{}: {} copies remain on {provider}; finalizer {finalizer} stays",
                    describe(&*secret),
                    list.items.len()
                );
                return Ok(Action::requeue(GONE_RETRY));
            }
            Ok(_) => {}
            // Liqo tolerates a provider that refuses or cannot be reached here.
            Err(err) if !is_not_found(&err) => {
                log_line!(
                    cluster.name,
                    "{}: cannot list copies on {provider} ({err}); releasing anyway",
                    describe(&*secret)
                );
            }
            Err(_) => {}
        }
    }
    ops::remove_finalizer(&api, &*secret, finalizer).await?;
    log_line!(cluster.name, "{}: released finalizer {finalizer}", describe(&*secret));
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_defaults_for_missing_standard_resources() {
        let requested: ResourceList = BTreeMap::from([
            ("cpu".to_owned(), Quantity("2".into())),
            ("nvidia.com/gpu".to_owned(), Quantity("1".into())),
        ]);
        let granted = granted(Some(&requested));
        assert_eq!(granted["cpu"], Quantity("2".into()));
        assert_eq!(granted["memory"], Quantity("8Gi".into()));
        assert_eq!(granted["pods"], Quantity("110".into()));
        assert_eq!(granted["ephemeral-storage"], Quantity("20Gi".into()));
        assert_eq!(granted["nvidia.com/gpu"], Quantity("1".into()));
    }
}
