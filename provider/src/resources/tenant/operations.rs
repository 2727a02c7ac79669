//! `liqo_tenant` on the provider cluster: check the tenant namespace and the endpoint, have the consumer's CSR
//! signed, write RoleBinding and Tenant and wait for Liqo, tear them down in Liqo's order, check them, import them.
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
use kube::api::Api;
use liqo_schema::liqo::labels;
use liqo_schema::liqo::{
    AUTHZ_POLICY_KEYS_EXCHANGE, AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE, Quota, ResourceSlice, TENANT_CONDITION_ACTIVE,
    TENANT_CONDITION_DRAINED, Tenant,
};
use liqo_schema::tf::{Diagnostic, Diagnostics, Severity, Value};

use super::objects::{
    binds_consumer, consumer_slices_selector, control_plane_role_selector, cordon_changes, cordoned_read, csr_name,
    csr_object, csr_selector, pick_control_plane_role, role_binding, role_binding_name, tenant_object,
};
use super::schema::{MIN_CERTIFICATE_VALIDITY, attr};
use super::state::{Issued, handshake_state, imported_state};
use super::status::{
    Endpoint, ROOT_CA_KEY, capped, csr_issued, quotas_follow, root_ca_published, slices_drained, tenant_ready,
    tls_verdict,
};
use super::{TenantResource, schema};
use crate::attributes::Key;
use crate::cluster_api::ClusterApi;
use crate::crypto;
use crate::import_id::{Found, ImportId, TENANT_NAMESPACE_PART, namespaced_id};
use crate::kube::{OpError, WaitTarget};
use crate::protocol::Ctx;
use crate::resources::lifecycle::{Declared, Done, Failure, Lifecycle, Op, Timeouts, upgrade_dropping_v0};

const APPROVAL_REASON: &str = "TerraformProviderLiqoApproval";
/// ConfigMap Kubernetes publishes in every namespace with the CA that verifies the API server.
const ROOT_CA_CONFIGMAP: &str = "kube-root-ca.crt";
/// How long the TLS check of `api_server_url` may take.
const TLS_PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// The denial of Liqo's Tenant webhook (`pkg/webhooks/tenant/validate.go`) when its cache holds a Tenant in the namespace.
const TENANT_EXISTS_DENIAL: &str = "a Tenant already exists in the tenant namespace";

/// The tenant namespace must exist and be labelled for this consumer: Liqo's Tenant webhook and ResourceSlice
/// controller reject anything else, so fail early with the fix.
async fn check_tenant_namespace(ctx: &Ctx, client: &kube::Client, planned: &attr::Tenant) -> Result<(), Failure> {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = &planned.tenant_namespace;
    let consumer = &planned.consumer_cluster_id;
    let fix = format!(
        "Create it with liqo_generate on this (provider) cluster (`remote_cluster_id = \"{consumer}\"`) and pass its \
         `tenant_namespace` output here, so Terraform creates it first."
    );
    let Some(namespace) = crate::kube::get_opt(ctx, &api, ns).await? else {
        return Err(Diagnostic::error(
            format!("Tenant namespace {ns} does not exist"),
            format!("Namespace {ns} was not found on the provider cluster; liqo_tenant does not create it. {fix}"),
        )
        .at(attr::tenant_namespace.path())
        .into());
    };
    if namespace.metadata.deletion_timestamp.is_some() {
        return Err(Diagnostic::error(
            format!("Tenant namespace {ns} is being deleted"),
            format!("Namespace {ns} is terminating, so no Tenant can be created in it. Wait for the deletion to finish, then apply again. {fix}"),
        )
        .at(attr::tenant_namespace.path())
        .into());
    }
    let label = |k: &str| namespace.metadata.labels.as_ref().and_then(|l| l.get(k)).map(String::as_str);
    let tenant_label = label(labels::TENANT_NAMESPACE);
    let remote_label = label(labels::REMOTE_CLUSTER_ID);
    if tenant_label != Some(labels::TRUE) || remote_label != Some(consumer) {
        let show = |v: Option<&str>| v.map(|v| format!("`{v}`")).unwrap_or_else(|| "missing".into());
        return Err(Diagnostic::error(
            format!("Namespace {ns} is not the tenant namespace of {consumer}"),
            format!(
                "Liqo requires the labels {}=true and {}={consumer} on it; found {} = {} and {} = {}. {fix} \
                 Or set consumer_cluster_id to the cluster this namespace belongs to.",
                labels::TENANT_NAMESPACE,
                labels::REMOTE_CLUSTER_ID,
                labels::TENANT_NAMESPACE,
                show(tenant_label),
                labels::REMOTE_CLUSTER_ID,
                show(remote_label),
            ),
        )
        .at(attr::tenant_namespace.path())
        .into());
    }
    Ok(())
}

/// `failure` reported after the warnings the operation had gathered before it.
fn after_warnings(mut diagnostics: Diagnostics, failure: Failure) -> Failure {
    diagnostics.extend(failure.diagnostics);
    Failure { diagnostics, ..failure }
}

/// A failure that does not fail the operation (a clean-up that Kubernetes also does by itself), as warnings.
fn as_warnings(failure: Failure) -> Diagnostics {
    let mut diagnostics = failure.diagnostics;
    for d in &mut diagnostics.0 {
        d.severity = Severity::Warning;
    }
    diagnostics
}

impl TenantResource {
    /// The control-plane ClusterRole's name, found by label as Liqo finds it.
    async fn control_plane_role(&self, ctx: &Ctx, client: &kube::Client) -> Result<String, OpError> {
        let api: Api<ClusterRole> = Api::all(client.clone());
        let selector = control_plane_role_selector();
        let roles = crate::kube::list(ctx, &api, &selector).await?;
        pick_control_plane_role(roles.into_iter().filter_map(|r| r.metadata.name).collect()).map_err(
            |(reason, hint)| OpError::Failed { object: format!("ClusterRole labelled {selector}"), reason, hint },
        )
    }

    /// The explicit URL, or the provider block's address when the plan left it to us.
    async fn server_url(&self, planned: &attr::Tenant) -> Result<String, Failure> {
        match &planned.api_server_url {
            Some(url) => Ok(url.clone()),
            None => Ok(self.cluster.api_server_url().await?),
        }
    }

    /// Server URL and CA (`api_server_ca`, else `kube-root-ca.crt` in the tenant namespace), after checking that the
    /// consumer will trust the URL (a warning, if any, goes to `warnings`).
    async fn endpoint(
        &self,
        op: &Op<'_>,
        client: &kube::Client,
        planned: &attr::Tenant,
        warnings: &mut Diagnostics,
    ) -> Result<Endpoint, Failure> {
        let server = self.server_url(planned).await?;
        let (ca_pem, ca_source) = match &planned.api_server_ca {
            Some(ca) => (ca.as_bytes().to_vec(), "the CA in `api_server_ca`".to_string()),
            None => {
                let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &planned.tenant_namespace);
                let waiting_for = format!(
                    "data[\"{ROOT_CA_KEY}\"] (the cluster CA, published in every namespace by kube-controller-manager)"
                );
                let ca = crate::kube::wait_for(
                    op.ctx,
                    &cms,
                    ROOT_CA_CONFIGMAP,
                    &waiting_for,
                    op.deadline.left(),
                    root_ca_published,
                )
                .await?;
                let source = format!(
                    "the cluster CA (ConfigMap {}/{ROOT_CA_CONFIGMAP}, the default of `api_server_ca`)",
                    planned.tenant_namespace
                );
                (ca, source)
            }
        };
        let endpoint = Endpoint { server, ca_pem, ca_source };
        let probe = crate::kube::probe::probe_tls(
            &endpoint.server,
            &endpoint.ca_pem,
            TLS_PROBE_TIMEOUT.min(op.deadline.left()),
        )
        .await;
        match tls_verdict(&endpoint, probe) {
            Some(d) if d.severity == Severity::Error => return Err(d.into()),
            Some(warning) => warnings.push(warning),
            None => {}
        }
        Ok(endpoint)
    }

    /// Has this cluster sign the consumer's CSR (a fresh CertificateSigningRequest object each time: they are
    /// immutable, and a renewal is the same request signed again) and reads the certificate back.
    async fn sign(&self, op: &Op<'_>, client: &kube::Client, planned: &attr::Tenant) -> Result<Issued, Failure> {
        let consumer = &planned.consumer_cluster_id;
        let name = csr_name(consumer);
        let api: Api<CertificateSigningRequest> = Api::all(client.clone());
        let csr_pem = planned.csr.as_deref().unwrap_or_default();
        // A lifetime known at apply was validated at plan: the minimum is only a floor for a provider bug.
        let validity = planned.lifetime().unwrap_or(MIN_CERTIFICATE_VALIDITY);
        let csr = csr_object(&name, consumer, csr_pem, validity);
        crate::kube::create(op.ctx, &api, &csr).await?;
        crate::kube::approve_csr(
            op.ctx,
            &api,
            &name,
            APPROVAL_REASON,
            "Approved by terraform-provider-liqo (liqo_tenant) for a Liqo consumer control plane.",
        )
        .await?;
        let cert_pem = crate::kube::wait_for(
            op.ctx,
            &api,
            &name,
            "status.certificate (the signed client certificate)",
            op.deadline.left(),
            csr_issued,
        )
        .await?;
        let expires_at = crypto::not_after(&cert_pem).map_err(|e| {
            Diagnostic::error(
                format!(
                    "Unreadable certificate in {}",
                    crate::kube::describe::<CertificateSigningRequest>(None, &name)
                ),
                format!("status.certificate could not be read: {e}. Check the cluster's kube-apiserver-client signer."),
            )
        })?;
        Ok(Issued { cert_pem, expires_at, csr_name: name })
    }

    /// Applies the Tenant. Liqo's webhook allows one Tenant per tenant namespace and counts them in its own cache,
    /// which lags a deletion: right after a tenant namespace was deleted and made again (a peering torn down and
    /// made anew, a cleanup after a cluster came back) it can deny the Tenant for one that no longer exists. While
    /// the API server itself shows no Tenant in the namespace, that denial is retried for up to a minute.
    pub(super) async fn apply_tenant(
        op: &Op<'_>,
        tenants: &Api<Tenant>,
        planned: &attr::Tenant,
    ) -> Result<(), OpError> {
        let stale_for = Duration::from_secs(60).min(op.deadline.left());
        let started = std::time::Instant::now();
        loop {
            match crate::kube::apply(op.ctx, tenants, &tenant_object(planned)).await {
                Err(OpError::Api { source: kube::Error::Api(s), .. })
                    if s.code == 403
                        && s.message.contains(TENANT_EXISTS_DENIAL)
                        && started.elapsed() < stale_for
                        && crate::kube::list(op.ctx, tenants, "").await?.is_empty() =>
                {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
                result => return result.map(|_| ()),
            }
        }
    }

    /// RoleBinding and Tenant as planned, then waits for Liqo to adopt the Tenant. A drained consumer loses
    /// its binding (Liqo removes it too; doing it here makes the revocation immediate).
    async fn ensure_tenant(&self, op: &Op<'_>, client: &kube::Client, planned: &attr::Tenant) -> Result<(), Failure> {
        let ctx = op.ctx;
        let (ns, consumer, drained) =
            (planned.tenant_namespace.as_str(), planned.consumer_cluster_id.as_str(), planned.drained());
        let tenants: Api<Tenant> = Api::namespaced(client.clone(), ns);
        let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), ns);
        // A Tenant still terminating (e.g. deleted out of band) would swallow the apply: let it go first.
        let existing = crate::kube::get_opt(ctx, &tenants, consumer).await?;
        if existing.is_some_and(|t| t.metadata.deletion_timestamp.is_some()) {
            crate::kube::delete_and_wait(ctx, &tenants, consumer, op.deadline.left()).await?;
        }
        let role = self.control_plane_role(ctx, client).await?;
        if !drained {
            crate::kube::apply(ctx, &bindings, &role_binding(planned, &role)).await?;
        }
        Self::apply_tenant(op, &tenants, planned).await?;
        if drained {
            crate::kube::delete_and_wait(ctx, &bindings, &role_binding_name(&role), op.deadline.left()).await?;
        }
        let waiting_for = if drained {
            format!("finalizer {} (Liqo writes no status for a Drained Tenant)", labels::TENANT_FINALIZER)
        } else {
            "status.tenantNamespace".to_string()
        };
        crate::kube::wait_for(ctx, &tenants, consumer, &waiting_for, op.deadline.left(), |t: Option<&Tenant>| {
            tenant_ready(t, ns, consumer, drained)
        })
        .await?;
        if drained {
            let slices: Api<ResourceSlice> = Api::namespaced(client.clone(), ns);
            let selector = format!("{}={consumer}", labels::REMOTE_CLUSTER_ID);
            let target = crate::kube::WaitTarget::labelled(
                &slices,
                &selector,
                "Liqo to delete the consumer's ResourceSlices (the drain)",
            );
            crate::kube::wait_until(ctx, &slices, target, op.deadline.left(), slices_drained).await?;
        }
        Ok(())
    }

    /// Deletes this resource's CSRs except `keep`. They carry nothing secret and kube-controller-manager garbage
    /// collects issued CSRs after an hour anyway, so after a create or an update a failure here is only a warning.
    async fn prune_csrs(
        &self,
        op: &Op<'_>,
        client: &kube::Client,
        consumer: &str,
        keep: Option<&str>,
    ) -> Result<(), OpError> {
        let api: Api<CertificateSigningRequest> = Api::all(client.clone());
        for csr in crate::kube::list(op.ctx, &api, &csr_selector(consumer)).await? {
            let name = csr.metadata.name.unwrap_or_default();
            if Some(name.as_str()) != keep {
                crate::kube::delete_and_wait(op.ctx, &api, &name, op.deadline.left()).await?;
            }
        }
        Ok(())
    }

    /// The Tenant's condition and proxy URL when the Tenant and (unless drained) the RoleBinding are in place;
    /// `None` when either is gone, which makes Terraform recreate the resource.
    async fn condition(
        &self,
        ctx: &Ctx,
        client: &kube::Client,
        namespace: &str,
        consumer: &str,
    ) -> Result<Option<(String, Option<String>)>, OpError> {
        let tenants: Api<Tenant> = Api::namespaced(client.clone(), namespace);
        let Some(tenant) = crate::kube::get_opt(ctx, &tenants, consumer).await? else {
            return Ok(None);
        };
        if tenant.metadata.deletion_timestamp.is_some() {
            return Ok(None);
        }
        let condition = tenant.spec.tenant_condition.clone().unwrap_or_else(|| TENANT_CONDITION_ACTIVE.to_string());
        // Liqo deletes the binding of a drained tenant itself: its absence is expected then.
        if condition != TENANT_CONDITION_DRAINED {
            let role = self.control_plane_role(ctx, client).await?;
            let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), namespace);
            let rb = crate::kube::get_opt(ctx, &bindings, &role_binding_name(&role)).await?;
            if !rb.is_some_and(|rb| binds_consumer(&rb, consumer, &role)) {
                return Ok(None);
            }
        }
        Ok(Some((condition, tenant.spec.proxy_url.filter(|p| !p.is_empty()))))
    }
}

/// The provider's copies of the consumer's ResourceSlices, in the tenant namespace.
async fn consumer_slices(
    ctx: &Ctx,
    client: &kube::Client,
    tenant: &attr::Tenant,
) -> Result<Vec<ResourceSlice>, OpError> {
    let api: Api<ResourceSlice> = Api::namespaced(client.clone(), &tenant.tenant_namespace);
    crate::kube::list(ctx, &api, &consumer_slices_selector(&tenant.consumer_cluster_id)).await
}

/// Cordons the slices `planned` names and uncordons the others this resource answers for (every slice of the
/// consumer while the set is given; those of `prior` when it was taken away), as `liqoctl cordon|uncordon
/// resourceslice` do (the `liqo.io/cordon` annotation on the provider's copy), then waits until Liqo's Quota of each
/// changed slice follows: from then on Liqo's webhook refuses (or admits again) that slice's new pods.
async fn cordon_slices(
    op: &Op<'_>,
    client: &kube::Client,
    planned: &attr::Tenant,
    prior: Option<&BTreeSet<String>>,
) -> Result<(), Failure> {
    let slices = consumer_slices(op.ctx, client, planned).await?;
    let wanted = planned.cordoned_resource_slices.clone().unwrap_or_default();
    let present: BTreeSet<String> = slices.iter().filter_map(|s| s.metadata.name.clone()).collect();
    let missing: Vec<&String> = wanted.difference(&present).collect();
    if !missing.is_empty() {
        let found =
            if present.is_empty() { "none".to_owned() } else { present.iter().cloned().collect::<Vec<_>>().join(", ") };
        return Err(Diagnostic::error(
            "No such ResourceSlice to cordon",
            format!(
                "The consumer {} has no ResourceSlice named {} in {} on this cluster (its slices here: {found}). A \
                 slice is the consumer's liqo_peer `resource_slice_name`, copied here by Liqo once that liqo_peer is \
                 applied. Fix the name, or remove it from `cordoned_resource_slices`.",
                planned.consumer_cluster_id,
                missing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", "),
                planned.tenant_namespace
            ),
        )
        .at(attr::cordoned_resource_slices.path())
        .into());
    }
    let answer_for = match planned.cordoned_resource_slices {
        None => prior.cloned().unwrap_or_default(),
        Some(_) => present,
    };
    let changes = cordon_changes(&slices, &wanted, &answer_for);
    let api: Api<ResourceSlice> = Api::namespaced(client.clone(), &planned.tenant_namespace);
    for (name, cordon) in &changes {
        crate::kube::annotate(op.ctx, &api, name, labels::CORDON, cordon.then_some(labels::TRUE)).await?;
    }
    if changes.is_empty() {
        return Ok(());
    }
    let slices = consumer_slices(op.ctx, client, planned).await?;
    let quotas: Api<Quota> = Api::namespaced(client.clone(), &planned.tenant_namespace);
    let target = WaitTarget::labelled(&quotas, "", "Liqo's Quota of each changed ResourceSlice to follow its cordon");
    crate::kube::wait_until(op.ctx, &quotas, target, op.deadline.left(), |all: &[Quota]| {
        quotas_follow(all, &changes, &slices)
    })
    .await?;
    Ok(())
}

#[async_trait]
impl Lifecycle for TenantResource {
    const TYPE_NAME: &'static str = "liqo_tenant";
    const TIMEOUTS: Timeouts = Timeouts::uniform(Duration::from_secs(300));
    const DECLARED: Declared = schema::DECLARED;
    const IMPORT_ID: ImportId = ImportId {
        parts: &[TENANT_NAMESPACE_PART, ("consumer_cluster_id", "Name of the Tenant: the consumer's cluster ID.")],
        attributes: &[attr::tenant_namespace, attr::consumer_cluster_id],
        example: "liqo-tenant-rome/rome",
        names: "the namespace and name of the Tenant on the provider cluster",
    };
    const LISTED_FOR_PEER: &'static str = "the Tenant of that consumer";
    const PEER: Option<Key> = Some(attr::consumer_cluster_id);
    const TENANT_NAMESPACE: Option<Key> = Some(attr::tenant_namespace);
    const OBJECTS: &'static str =
        "the Tenant, its RoleBinding in the tenant namespace and the consumer's CertificateSigningRequest";

    fn new(cluster: Arc<ClusterApi>) -> TenantResource {
        TenantResource { cluster }
    }

    async fn create(&self, op: &Op<'_>, planned: &Value, _config: &Value) -> Result<Done, Failure> {
        let planned = attr::Tenant::of(planned);
        let mut warnings = Diagnostics::new();
        let client = self.cluster.client().await?;
        check_tenant_namespace(op.ctx, &client, &planned).await?;
        let endpoint = self.endpoint(op, &client, &planned, &mut warnings).await?;
        // From here on objects get written: a failure records the partial state, so Terraform records the resource
        // as tainted and the next apply's destroy removes whatever was created.
        let mut state = planned.clone();
        state.api_server_url = Some(endpoint.server.clone());
        state.cluster_ca_certificate = Value::string(String::from_utf8_lossy(&endpoint.ca_pem));
        // Not signed yet.
        state.client_certificate = Value::Null;
        state.certificate_expires_at = None;
        // Kept from before the lifecycle driver: a failed signing reports its errors without the endpoint's warning
        // (an update reports both).
        let issued = self.sign(op, &client, &planned).await.map_err(|f| f.after_writing(state.value()))?;
        warnings.0.extend(capped(&issued, planned.renewal_window().unwrap_or_default()));
        state.record_certificate(&issued);
        if let Err(f) = self.ensure_tenant(op, &client, &planned).await {
            return Err(after_warnings(warnings, f).after_writing(state.value()));
        }
        if let Err(e) = self.prune_csrs(op, &client, &planned.consumer_cluster_id, Some(&issued.csr_name)).await {
            warnings.extend(as_warnings(e.into()));
        }
        Ok(Done { state: state.value(), warnings })
    }

    async fn update(&self, op: &Op<'_>, prior: &Value, planned: &Value, _config: &Value) -> Result<Done, Failure> {
        let (prior, planned) = (attr::Tenant::of(prior), attr::Tenant::of(planned));
        let mut warnings = Diagnostics::new();
        // The state follows the cluster step by step, so a failure leaves it true and the next plan retries: a
        // failure records `state` as far as it got, not the prior state (even one before any call to the cluster
        // records the settings that change nothing on it).
        let mut state = prior.clone();
        state.renew_before = planned.renew_before.clone();
        if planned.authz_policy == AUTHZ_POLICY_KEYS_EXCHANGE {
            // Liqo's handshake identity: these settings are recorded and have no effect (nothing is signed).
            state.csr = planned.csr.clone();
            state.api_server_url = planned.api_server_url.clone();
            state.api_server_ca = planned.api_server_ca.clone();
            state.authz_policy = planned.authz_policy.clone();
        }
        let steps = async {
            let client = self.cluster.client().await?;
            check_tenant_namespace(op.ctx, &client, &planned).await?;
            if planned.cluster_ca_certificate.is_unknown() {
                let endpoint = self.endpoint(op, &client, &planned, &mut warnings).await?;
                state.api_server_url = Some(endpoint.server.clone());
                state.api_server_ca = planned.api_server_ca.clone();
                state.cluster_ca_certificate = Value::string(String::from_utf8_lossy(&endpoint.ca_pem));
            }
            let mut signed = None;
            if planned.client_certificate.is_unknown() {
                let issued = self.sign(op, &client, &planned).await?;
                warnings.0.extend(capped(&issued, planned.renewal_window().unwrap_or_default()));
                state.record_certificate(&issued);
                state.csr = planned.csr.clone();
                signed = Some(issued.csr_name);
            }
            state.certificate_validity = planned.certificate_validity.clone();
            self.ensure_tenant(op, &client, &planned).await?;
            state.tenant_condition = planned.tenant_condition.clone();
            state.proxy_url = planned.proxy_url.clone();
            if planned.cordoned_resource_slices != prior.cordoned_resource_slices {
                cordon_slices(op, &client, &planned, prior.cordoned_resource_slices.as_ref()).await?;
                state.cordoned_resource_slices = planned.cordoned_resource_slices.clone();
            }
            if let Some(keep) = signed {
                // The previous certificate stays valid until it expires (Kubernetes has no revocation); its CSR is
                // just clutter now.
                if let Err(e) = self.prune_csrs(op, &client, &planned.consumer_cluster_id, Some(&keep)).await {
                    warnings.extend(as_warnings(e.into()));
                }
            }
            Ok::<(), Failure>(())
        };
        match steps.await {
            Ok(()) => Ok(Done { state: state.value(), warnings }),
            Err(f) => Err(after_warnings(warnings, f).after_writing(state.value())),
        }
    }

    /// Liqo's order (reference §6): Tenant (its finalizer is released by Liqo), then the RoleBinding, then the
    /// CSRs. The consumer's ResourceSlices must already be gone, which liqo_peer's dependency on this resource's
    /// certificate guarantees.
    async fn delete(&self, op: &Op<'_>, prior: &Value) -> Result<(), Failure> {
        let prior = attr::Tenant::of(prior);
        let (ns, consumer) = (&prior.tenant_namespace, &prior.consumer_cluster_id);
        let client = self.cluster.client().await?;
        let tenants: Api<Tenant> = Api::namespaced(client.clone(), ns);
        let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), ns);
        crate::kube::delete_and_wait(op.ctx, &tenants, consumer, op.deadline.left()).await?;
        // Without a unique labelled role (Liqo uninstalled or broken), the default name is the only candidate.
        let role = self
            .control_plane_role(op.ctx, &client)
            .await
            .unwrap_or_else(|_| labels::REMOTE_CONTROLPLANE_CLUSTER_ROLE.to_string());
        crate::kube::delete_and_wait(op.ctx, &bindings, &role_binding_name(&role), op.deadline.left()).await?;
        Ok(self.prune_csrs(op, &client, consumer, None).await?)
    }

    async fn observe(&self, ctx: &Ctx, state: &Value) -> Result<Done, Failure> {
        let mut state = attr::Tenant::of(state);
        let client = self.cluster.client().await?;
        let Some((condition, proxy_url)) =
            self.condition(ctx, &client, &state.tenant_namespace, &state.consumer_cluster_id).await?
        else {
            return Ok(Value::Null.into());
        };
        state.tenant_condition = condition;
        state.proxy_url = proxy_url;
        // Unset, the slices' cordons are not this resource's to report.
        if let Some(prior) = &state.cordoned_resource_slices {
            let slices = consumer_slices(ctx, &client, &state).await?;
            state.cordoned_resource_slices = Some(cordoned_read(&slices, prior));
        }
        Ok(state.value().into())
    }

    async fn find(ctx: &Ctx, client: kube::Client, remote: Option<&str>) -> Result<Vec<Found>, OpError> {
        let api: Api<Tenant> = Api::all(client);
        Ok(crate::kube::list(ctx, &api, "")
            .await?
            .iter()
            .filter(|t| remote.is_none_or(|r| t.spec.cluster_id.as_deref() == Some(r)))
            .map(|t| Found::new(namespaced_id(&t.metadata), "Tenant", t.spec.cluster_id.as_deref()))
            .collect())
    }

    async fn import(&self, ctx: &Ctx, id: &str) -> Result<Value, Failure> {
        let type_name = Self::TYPE_NAME;
        let [namespace, consumer] = Self::IMPORT_ID.parse(type_name, id)?;
        let client = self.cluster.client().await?;
        let tenants: Api<Tenant> = Api::namespaced(client.clone(), &namespace);
        let tenant = crate::kube::get_opt(ctx, &tenants, &consumer).await?.ok_or_else(|| {
            Diagnostic::error(
                format!("Cannot import {type_name} {id}"),
                format!("{} was not found on the provider cluster. Check the namespace and the consumer cluster ID (`kubectl get tenants -A`).", crate::kube::describe::<Tenant>(Some(&namespace), &consumer)),
            )
        })?;
        if tenant.spec.cluster_id.as_deref() != Some(consumer.as_str()) {
            return Err(Diagnostic::error(
                format!("Cannot import {type_name} {id}"),
                format!(
                    "{} has spec.clusterID {:?}, but liqo_tenant names the Tenant after the consumer cluster ID. Import a Tenant whose name equals its clusterID.",
                    crate::kube::describe::<Tenant>(Some(&namespace), &consumer),
                    tenant.spec.cluster_id.as_deref().unwrap_or_default()
                ),
            )
            .into());
        }
        let (condition, proxy_url) = self.condition(ctx, &client, &namespace, &consumer).await?.ok_or_else(|| {
            Diagnostic::error(
                format!("Cannot import {type_name} {id}"),
                format!(
                    "The RoleBinding `liqo-binding-<role>` in {namespace} is not in place or does not bind User {consumer} to Liqo's control-plane ClusterRole (labelled {}), or the Tenant is being deleted. Apply a liqo_tenant resource instead of importing, so the binding and credentials are created.",
                    control_plane_role_selector()
                ),
            )
        })?;
        let mut state = if tenant.spec.authz_policy.as_deref() != Some(AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE) {
            handshake_state(&tenant, &namespace, &consumer, condition)
        } else {
            imported_state(&namespace, &consumer, condition, self.cluster.api_server_url().await.ok())
        };
        state.proxy_url = proxy_url;
        Ok(state.value())
    }

    /// From 0.2.0 (version 0): the `kubeconfig` holding the consumer's private key is dropped, so the upgraded
    /// state carries no key; the next plan then signs the configured `csr` (an in-place update).
    fn upgrade(version: i64, state: &serde_json::Value) -> Option<Result<serde_json::Value, Diagnostics>> {
        upgrade_dropping_v0("kubeconfig", version, state)
    }
}
