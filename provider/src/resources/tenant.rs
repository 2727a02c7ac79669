//! `liqo_tenant`: the authentication half of a peering, on the **provider** cluster.
//!
//! Owns, for one consumer cluster:
//! - the consumer's client certificate: the consumer's CSR (`csr`, from `liqo_consumer_key` on the consumer, whose
//!   private key never leaves that cluster) submitted as a Kubernetes CertificateSigningRequest (signer
//!   `kubernetes.io/kube-apiserver-client`), approved by the provider and read back. Outputs are public:
//!   `client_certificate`, `cluster_ca_certificate` and `api_server_url`, which `liqo_peer` joins to the key inside
//!   the consumer cluster;
//! - RoleBinding `liqo-binding-<role>` in the tenant namespace, binding `User <consumer id>` to Liqo's
//!   control-plane ClusterRole `<role>`, found as Liqo finds it by label `app.kubernetes.io/name=remote-controlplane`
//!   (`liqo-remote-controlplane` unless the Helm release renames it): what the consumer's crd-replicator needs to
//!   replicate ResourceSlices;
//! - Tenant `<consumer id>` (`authzPolicy: TolerateNoHandshake`), ready when Liqo sets `status.tenantNamespace`.
//!
//! The tenant namespace itself belongs to `liqo_generate`. Import ID: `<tenant_namespace>/<consumer cluster id>`
//! (the Tenant's namespace and name). The certificate is not recovered by import: the plan after an import signs
//! the configured `csr` again (an in-place update, and nothing else) — except for a Tenant of Liqo's handshake
//! (`liqoctl peer`, `authzPolicy: KeysExchange`), whose consumer identity Liqo minted and renews: it is adopted
//! as it is (`authz_policy = "KeysExchange"`, `csr` = the CSR Liqo's handshake exchanged), and no certificate is
//! ever signed for it.
use crate::cluster_api::ClusterApi;
use crate::crypto;
use crate::errors::{op_diags, op_error};
use crate::kube::{OpError, Verdict};
use crate::protocol::{
    ApplyRequest, ApplyResponse, Ctx, ImportedResource, PlanRequest, PlanResponse, ReadResponse, Resource,
};
use crate::resources::common::changed;
use crate::resources::lifecycle::{Deadline, Timeouts, timeouts_block};
use crate::validate::{Validator, parse_duration};
use async_trait::async_trait;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use liqo_schema::liqo::labels;
use liqo_schema::liqo::{
    AUTHZ_POLICY_KEYS_EXCHANGE, AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE, ResourceSlice, TENANT_CONDITION_ACTIVE,
    TENANT_CONDITION_CORDONED, TENANT_CONDITION_DRAINED, Tenant, TenantSpec,
};
use liqo_schema::tf::{Attribute, AttributePath, Block, Diagnostic, Diagnostics, Schema, Type, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

const TYPE_NAME: &str = "liqo_tenant";
/// 1: `kubeconfig` (with the consumer's private key) replaced by `csr` → `client_certificate`.
const SCHEMA_VERSION: i64 = 1;
const DEFAULT_TIMEOUTS: Timeouts = Timeouts::uniform(Duration::from_secs(300));
const DEFAULT_CERTIFICATE_VALIDITY: &str = "8760h";
const DEFAULT_RENEW_BEFORE: &str = "720h";
/// Kubernetes rejects CSRs asking for less (`spec.expirationSeconds` minimum).
const MIN_CERTIFICATE_VALIDITY: Duration = Duration::from_secs(600);
/// Kubernetes' signer backdates certificates by 5 minutes (taken from the lifetime), so a renewal window closer
/// than this to the lifetime would make every new certificate due for renewal at once.
const RENEWAL_MARGIN: Duration = Duration::from_secs(600);
/// `spec.expirationSeconds` is an int32.
const MAX_CERTIFICATE_VALIDITY: Duration = Duration::from_secs(i32::MAX as u64);
const TENANT_CONDITIONS: [&str; 3] = [TENANT_CONDITION_ACTIVE, TENANT_CONDITION_CORDONED, TENANT_CONDITION_DRAINED];
/// The built-in signer whose certificates kube-apiserver accepts for client authentication.
const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";
const CLIENT_USAGES: [&str; 3] = ["digital signature", "key encipherment", "client auth"];
const APPROVAL_REASON: &str = "TerraformProviderLiqoApproval";
/// ConfigMap Kubernetes publishes in every namespace with the CA that verifies the API server.
const ROOT_CA_CONFIGMAP: &str = "kube-root-ca.crt";
const ROOT_CA_KEY: &str = "ca.crt";

/// The `liqo_tenant` resource type, bound to the provider block's cluster.
pub struct TenantResource {
    cluster: Arc<ClusterApi>,
}

impl TenantResource {
    pub fn new(cluster: Arc<ClusterApi>) -> TenantResource {
        TenantResource { cluster }
    }
}

/// `tenant` as the protocol layer serves it.
pub fn resource(cluster: Arc<ClusterApi>) -> Arc<dyn Resource> {
    Arc::new(TenantResource::new(cluster))
}

// ---------------------------------------------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------------------------------------------

fn schema() -> Schema {
    let attributes = vec![
        Attribute::computed("id", Type::String)
            .describe("`<tenant_namespace>/<consumer_cluster_id>`: namespace and name of the Tenant (the import ID)."),
        Attribute::required("tenant_namespace", Type::String).describe(
            "Namespace on this (provider) cluster dedicated to the consumer, usually `liqo_generate`'s \
             `tenant_namespace` output. It must already exist and carry the labels `liqo.io/tenant-namespace=true` \
             and `liqo.io/remote-cluster-id=<consumer_cluster_id>`; this resource does not create it. Changing it \
             replaces the resource (and mints new credentials).",
        ),
        Attribute::required("consumer_cluster_id", Type::String).describe(
            "Liqo cluster ID of the consumer cluster (e.g. `liqo_generate.rome.cluster_id`). It names the Tenant and is \
             the user name (certificate CN) the consumer authenticates as. Changing it replaces the resource.",
        ),
        Attribute::optional_computed("tenant_condition", Type::String).describe(
            "`Active` (default), `Cordoned` (existing ResourceSlices keep their resources, new ones are denied) or \
             `Drained` (the consumer's RoleBinding is removed and Liqo deletes its ResourceSlices and NamespaceMaps). \
             Updated in place.",
        ),
        Attribute::optional_computed("api_server_url", Type::String).describe(
            "URL of this cluster's API server as the consumer cluster's control plane (its crd-replicator) reaches \
             it (`https://host:port`), for `liqo_peer.api_server_url`. Defaults to the address the provider block uses, \
             recorded when the resource is created. It must serve a certificate that `api_server_ca` verifies for \
             its host; apply checks that from where Terraform runs. It does not change the address Liqo's virtual \
             kubelet uses: that one comes from the provider cluster's Liqo installation (Helm `apiServer.address`, \
             `--api-server-address-override`, else the first control-plane node's address on port 6443). Changing \
             it updates `liqo_peer` in place with the same certificate.",
        ),
        Attribute::optional("api_server_ca", Type::String).describe(
            "PEM CA certificate(s) the consumer uses to verify `api_server_url` (output as `cluster_ca_certificate`). Defaults \
             to this cluster's CA (the `kube-root-ca.crt` ConfigMap of the tenant namespace). Set it when \
             `api_server_url` is a proxy, load balancer or port-forward whose certificate that CA did not sign (the \
             counterpart of Liqo's Helm value `apiServer.ca`, `--ca-override`). Apply checks that `api_server_url` \
             answers TLS with a certificate this CA verifies for that host, and fails naming both otherwise. \
             Changing it updates `liqo_peer` in place with the same certificate.",
        ),
        Attribute::required("csr", Type::String).describe(
            "The consumer's PEM certificate signing request, `liqo_consumer_key.<name>.csr`: made on the consumer \
             cluster, whose private key never leaves it. Its common name must be `consumer_cluster_id` and its \
             organization `liqo.io` (what Liqo requires of control-plane users); the signature is checked at plan \
             time. A new CSR (a rotated key) is signed in place.",
        ),
        Attribute::optional_computed("certificate_validity", Type::String).describe(
            "Requested lifetime of the consumer's client certificate, as a duration (default `8760h`, at least `10m`), \
             sent as the CSR's `expirationSeconds`. The cluster may issue a shorter one (kube-controller-manager \
             `--cluster-signing-duration`); `certificate_expires_at` shows what was issued. Changing it mints a new \
             certificate in place.",
        ),
        Attribute::optional_computed("renew_before", Type::String).describe(
            "How long before `certificate_expires_at` the plan proposes a new certificate (default `720h`; at least \
             `10m` shorter than `certificate_validity`). Renewal happens on the next `terraform apply` after that point: \
             Liqo does not renew certificates it did not issue.",
        ),
        Attribute::computed("client_certificate", Type::String).describe(
            "PEM client certificate this cluster issued for `csr` (public; the key stays on the consumer). Pass it \
             to `liqo_peer.client_certificate`.",
        ),
        Attribute::computed("cluster_ca_certificate", Type::String).describe(
            "PEM CA the consumer trusts for `api_server_url`: `api_server_ca`, else this cluster's CA. Pass it to \
             `liqo_peer.cluster_ca_certificate`.",
        ),
        Attribute::computed("certificate_expires_at", Type::String)
            .describe("Expiry of `client_certificate` (RFC 3339, UTC)."),
        Attribute::computed("authz_policy", Type::String).describe(
            "The Tenant's `authzPolicy`: `TolerateNoHandshake` when this resource created it and signs the \
             consumer's `csr`; `KeysExchange` when it was imported from Liqo's authentication handshake \
             (`liqoctl peer`). Liqo signed that consumer's certificate and renews it itself, so this resource never \
             signs anything for it: `csr` is the CSR Liqo's handshake exchanged, `client_certificate` and \
             `cluster_ca_certificate` stay null (the consumer's `liqo_peer` keeps Liqo's identity), \
             `certificate_expires_at` is the expiry of Liqo's certificate, and `csr`, `certificate_validity`, \
             `renew_before`, `api_server_url` and `api_server_ca` have no effect.",
        ),
    ];
    Schema {
        version: SCHEMA_VERSION,
        block: Block::new(
            "Authenticates a consumer cluster on this provider cluster (Liqo declarative peering, authentication \
             module): signs the consumer's certificate signing request through the Kubernetes CSR API (only public \
             data crosses the clusters: the CSR, the certificate, the CA and the URL), grants it Liqo's \
             control-plane ClusterRole (the one labelled `app.kubernetes.io/name=remote-controlplane`, \
             `liqo-remote-controlplane` by default) in the tenant namespace and creates the Tenant \
             (`authzPolicy: TolerateNoHandshake`). Use it with the provider block of the **provider** cluster.",
            attributes,
        )
        .with_block(timeouts_block(DEFAULT_TIMEOUTS)),
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------------------------

fn validate(config: &Value) -> Diagnostics {
    let mut c = Validator::new(config);
    c.namespace("tenant_namespace");
    c.cluster_id("consumer_cluster_id");
    c.one_of("tenant_condition", &TENANT_CONDITIONS);
    c.duration("certificate_validity");
    c.duration("renew_before");
    c.timeouts();
    c.api_server_url(
        "api_server_url",
        "Give the address the consumer cluster uses to reach this cluster's API server, e.g. `https://203.0.113.10:6443`.",
    );
    c.ca_bundle(
        "api_server_ca",
        "Give the PEM certificate(s) (`-----BEGIN CERTIFICATE-----` …) of the CA that signed the certificate served \
         at `api_server_url`, e.g. `file(\"proxy-ca.pem\")`, or remove it to use the cluster CA.",
    );
    if let Some(csr) = config.get("csr").as_str()
        // An invalid consumer ID has its own error; comparing the CSR with it would only add noise.
        && let Err((summary, detail)) = check_csr(
            csr,
            config.get("consumer_cluster_id").as_str().filter(|id| crate::validate::check_dns_label(id).is_ok()),
        )
    {
        c.error(AttributePath::root("csr"), summary, detail);
    }
    // Cross-field rules on the effective values (defaults when unset); unknown values are checked at the next plan.
    let validity = effective_duration(config, "certificate_validity", DEFAULT_CERTIFICATE_VALIDITY);
    let renew = effective_duration(config, "renew_before", DEFAULT_RENEW_BEFORE);
    let validity_in_range =
        validity.is_some_and(|v| (MIN_CERTIFICATE_VALIDITY..=MAX_CERTIFICATE_VALIDITY).contains(&v));
    if let Some(v) = validity.filter(|_| !validity_in_range) {
        c.error(
            AttributePath::root("certificate_validity"),
            "Certificate validity out of range for `certificate_validity`",
            format!(
                "{} is outside what Kubernetes accepts for a CSR's expirationSeconds: at least `10m`, at most \
                 about 68 years. The default is `{DEFAULT_CERTIFICATE_VALIDITY}`.",
                crate::errors::human(v)
            ),
        );
    }
    // Only against a lifetime Kubernetes accepts: otherwise the error above is the one to fix first.
    if let (Some(v), Some(r)) = (validity.filter(|_| validity_in_range), renew)
        && r + RENEWAL_MARGIN > v
    {
        c.error(
            AttributePath::root("renew_before"),
            "`renew_before` must be shorter than `certificate_validity`",
            format!(
                "renew_before is {} but certificate_validity is {}: a new certificate would already be due for \
                 renewal, so every plan would propose another one. Keep renew_before at least {} below \
                 certificate_validity (Kubernetes backdates certificates by 5 minutes): use a smaller \
                 renew_before (default `{DEFAULT_RENEW_BEFORE}`) or a longer certificate_validity.",
                crate::errors::human(r),
                crate::errors::human(v),
                crate::errors::human(RENEWAL_MARGIN)
            ),
        );
    }
    c.finish()
}

/// The duration an attribute stands for: its value, the default when null, `None` when unknown or invalid.
fn effective_duration(v: &Value, attr: &str, default: &str) -> Option<Duration> {
    match v.get(attr) {
        Value::Null => parse_duration(default).ok(),
        Value::String(s) => parse_duration(s).ok(),
        _ => None,
    }
}

/// A CSR Liqo accepts for a control-plane user: self-signed by its key, `CN=<consumer>` (when known), `O=liqo.io`
/// (Liqo's `CheckCSRForControlPlane`). Checked before anything is written, since Kubernetes would sign any CSR.
fn check_csr(csr: &str, consumer: Option<&str>) -> Result<(), (String, String)> {
    let fix = "Pass the `csr` output of liqo_consumer_key on the consumer cluster, unchanged.";
    let subject = crypto::inspect_csr(csr.as_bytes())
        .map_err(|why| ("Invalid certificate signing request for `csr`".to_string(), format!("{why}. {fix}")))?;
    if let Some(consumer) = consumer
        && subject.common_name != consumer
    {
        return Err((
            "`csr` is not for `consumer_cluster_id`".to_string(),
            format!(
                "The CSR asks for a certificate for `{}` but consumer_cluster_id is `{consumer}`: the consumer would \
                 authenticate as a user the Tenant and RoleBinding do not name. Use the liqo_consumer_key of the \
                 consumer cluster `{consumer}` (its `cluster_id` output is the CSR's name).",
                subject.common_name
            ),
        ));
    }
    if !subject.organizations.iter().any(|o| o == labels::CONTROL_PLANE_ORGANIZATION) {
        return Err((
            "`csr` lacks Liqo's control-plane organization".to_string(),
            format!(
                "The CSR's subject has organization {:?}; Liqo treats a user as a consumer control plane only with \
                 `O={}`. {fix}",
                subject.organizations,
                labels::CONTROL_PLANE_ORGANIZATION
            ),
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// Plan
// ---------------------------------------------------------------------------------------------------------------

/// The plan rules, with the clock passed in so renewal is testable. No API calls.
fn plan_change(prior: &Value, proposed: &Value, config: &Value, now: OffsetDateTime) -> PlanResponse {
    let mut resp = PlanResponse {
        planned: Value::Null,
        requires_replace: Vec::new(),
        private: Vec::new(),
        diagnostics: Diagnostics::new(),
    };
    let mut planned = proposed.clone();
    // Defaults follow the configuration (not the prior state), so removing an explicit value restores the default.
    for (attr, default) in [
        ("tenant_condition", TENANT_CONDITION_ACTIVE),
        ("certificate_validity", DEFAULT_CERTIFICATE_VALIDITY),
        ("renew_before", DEFAULT_RENEW_BEFORE),
    ] {
        if config.get(attr).is_null() {
            planned.set(attr, Value::string(default));
        }
    }
    // The provider block's address is only resolved at apply; once recorded it stays (proposed carries it over).
    if planned.get("api_server_url").is_null() {
        planned.set("api_server_url", Value::Unknown);
    }
    let id = match (planned.get("tenant_namespace").as_str(), planned.get("consumer_cluster_id").as_str()) {
        (Some(ns), Some(consumer)) => Value::string(format!("{ns}/{consumer}")),
        _ => Value::Unknown,
    };
    planned.set("id", id);

    if !prior.is_null() {
        // Tenant.spec.clusterID is immutable, and the credentials' CN and RoleBinding belong to one namespace.
        for attr in ["tenant_namespace", "consumer_cluster_id"] {
            if changed(prior, &planned, attr) {
                resp.requires_replace.push(AttributePath::root(attr));
            }
        }
    }
    // A CSR known at plan time is checked against the consumer here too: validation may have seen either unknown.
    if let Some(csr) = planned.get("csr").as_str()
        && let Err((summary, detail)) = check_csr(csr, planned.get("consumer_cluster_id").as_str())
    {
        resp.diagnostics.push(Diagnostic::error(summary, detail).at(AttributePath::root("csr")));
        return resp;
    }
    // A Tenant imported from Liqo's handshake keeps the identity Liqo minted: never sign anything for it.
    let handshake =
        resp.requires_replace.is_empty() && prior.get("authz_policy").as_str() == Some(AUTHZ_POLICY_KEYS_EXCHANGE);
    planned.set(
        "authz_policy",
        Value::string(if handshake { AUTHZ_POLICY_KEYS_EXCHANGE } else { AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE }),
    );
    if handshake {
        // Its address is Liqo's; an unrecorded one stays unrecorded.
        if planned.get("api_server_url").is_unknown() {
            planned.set("api_server_url", prior.get("api_server_url").clone());
        }
        resp.planned = planned;
        return resp;
    }
    let new_certificate = prior.is_null()
        || !resp.requires_replace.is_empty()
        // After an import or an upgrade from 0.2.0 there is no certificate for the configured CSR yet.
        || prior.get("client_certificate").is_null()
        || prior.get("csr") != planned.get("csr")
        || duration_changed(prior, &planned, "certificate_validity")
        || renewal_due(prior.get("certificate_expires_at"), planned.get("renew_before"), now);
    if new_certificate {
        planned.set("client_certificate", Value::Unknown);
        planned.set("certificate_expires_at", Value::Unknown);
    }
    if prior.is_null()
        || prior.get("cluster_ca_certificate").is_null()
        || changed(prior, &planned, "api_server_url")
        || changed(prior, &planned, "api_server_ca")
    {
        planned.set("cluster_ca_certificate", Value::Unknown);
    }
    resp.planned = planned;
    resp
}

/// A duration attribute changed meaning (not just spelling: `8760h` and `8760h0m0s` are the same).
fn duration_changed(prior: &Value, planned: &Value, attr: &str) -> bool {
    let parse = |v: &Value| v.as_str().and_then(|s| parse_duration(s).ok());
    match (parse(prior.get(attr)), parse(planned.get(attr))) {
        (Some(a), Some(b)) => a != b,
        _ => prior.get(attr) != planned.get(attr),
    }
}

/// True when `now + renew_before` has reached the certificate's expiry (or either is not known).
fn renewal_due(expires_at: &Value, renew_before: &Value, now: OffsetDateTime) -> bool {
    let expires = expires_at.as_str().and_then(|s| OffsetDateTime::parse(s, &Rfc3339).ok());
    let renew = renew_before.as_str().and_then(|s| parse_duration(s).ok());
    match (expires, renew) {
        (Some(expires), Some(renew)) => now + renew >= expires,
        _ => true,
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Objects
// ---------------------------------------------------------------------------------------------------------------

/// What apply works from; at apply time every input is known.
struct Inputs {
    namespace: String,
    consumer: String,
    condition: String,
    validity: Duration,
    /// The consumer's PEM CSR.
    csr: String,
    authz_policy: String,
}

impl Inputs {
    fn from_value(v: &Value) -> Inputs {
        let s = |a: &str| v.get(a).as_str().unwrap_or_default().to_string();
        Inputs {
            namespace: s("tenant_namespace"),
            consumer: s("consumer_cluster_id"),
            condition: v.get("tenant_condition").as_str().unwrap_or(TENANT_CONDITION_ACTIVE).to_string(),
            validity: effective_duration(v, "certificate_validity", DEFAULT_CERTIFICATE_VALIDITY)
                .unwrap_or(MIN_CERTIFICATE_VALIDITY),
            csr: s("csr"),
            authz_policy: v.get("authz_policy").as_str().unwrap_or(AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE).to_string(),
        }
    }

    fn drained(&self) -> bool {
        self.condition == TENANT_CONDITION_DRAINED
    }
}

fn remote_cluster_labels(consumer: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(labels::REMOTE_CLUSTER_ID.to_string(), consumer.to_string())])
}

/// The Tenant as liqoctl's declarative flow writes it; Liqo's webhook requires the label to equal spec.clusterID.
/// An imported handshake Tenant keeps `KeysExchange` (its key, CSR and signature stay liqoctl's fields).
fn tenant_object(inputs: &Inputs) -> Tenant {
    let mut t = Tenant::new(
        &inputs.consumer,
        TenantSpec {
            cluster_id: Some(inputs.consumer.clone()),
            authz_policy: Some(inputs.authz_policy.clone()),
            tenant_condition: Some(inputs.condition.clone()),
            ..TenantSpec::default()
        },
    );
    t.metadata.namespace = Some(inputs.namespace.clone());
    t.metadata.labels = Some(remote_cluster_labels(&inputs.consumer));
    t
}

/// The RoleBinding Liqo's own tenant controller would make for the control-plane role: named
/// `liqo-binding-<role>` (`tenantNamespace/bindings.go`), so Liqo's Drained handling removes it too.
fn role_binding_name(role: &str) -> String {
    format!("liqo-binding-{role}")
}

/// The binding of the consumer user to the control-plane ClusterRole `role` (found by label, see
/// [`pick_control_plane_role`]).
fn role_binding(inputs: &Inputs, role: &str) -> RoleBinding {
    RoleBinding {
        metadata: ObjectMeta {
            name: Some(role_binding_name(role)),
            namespace: Some(inputs.namespace.clone()),
            labels: Some(remote_cluster_labels(&inputs.consumer)),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_string(),
            kind: "ClusterRole".to_string(),
            name: role.to_string(),
        },
        subjects: Some(vec![Subject {
            api_group: Some("rbac.authorization.k8s.io".to_string()),
            kind: "User".to_string(),
            name: inputs.consumer.clone(),
            namespace: None,
        }]),
    }
}

/// True when the RoleBinding still grants the consumer user the control-plane role.
fn binds_consumer(rb: &RoleBinding, consumer: &str, role: &str) -> bool {
    rb.role_ref.name == role && rb.subjects.iter().flatten().any(|s| s.kind == "User" && s.name == consumer)
}

/// The selector Liqo's tenant controller finds the control-plane ClusterRole by (`getClusterRoles`): its name
/// follows the Helm release's `nameOverride` (`<name>-remote-controlplane`), its label does not.
fn control_plane_role_selector() -> String {
    format!("{}={}", labels::APP_NAME, labels::REMOTE_CONTROLPLANE_APP_NAME)
}

/// The one ClusterRole among those carrying Liqo's control-plane label; none or several is an error (reason,
/// next step) because the consumer would get 403 or an unintended role.
fn pick_control_plane_role(mut names: Vec<String>) -> Result<String, (String, String)> {
    let selector = control_plane_role_selector();
    match names.len() {
        1 => Ok(names.remove(0)),
        0 => Err((
            format!("No ClusterRole on the provider cluster is labelled {selector}."),
            "Liqo's Helm chart installs it (liqo-controlplane-rbac.yaml, named `<nameOverride>-remote-controlplane`, \
             `liqo-remote-controlplane` by default) and the consumer's control plane needs it. Install or repair Liqo \
             on this cluster, or check that this provider block points at the provider cluster."
                .to_string(),
        )),
        _ => {
            names.sort();
            Err((
                format!("{} ClusterRoles are labelled {selector}: {}.", names.len(), names.join(", ")),
                "liqo_tenant binds the consumer to exactly one. Remove the label from the roles that do not belong to \
                 this cluster's Liqo installation (e.g. left over from another Helm release)."
                    .to_string(),
            ))
        }
    }
}

/// Labels that find this resource's CSRs (and never Liqo's own CSRs for the same consumer's ResourceSlices).
fn csr_selector(consumer: &str) -> String {
    format!("{}={consumer},{}={}", labels::REMOTE_CLUSTER_ID, labels::MANAGED_BY, crate::kube::FIELD_MANAGER)
}

fn csr_object(name: &str, consumer: &str, csr_pem: &str, validity: Duration) -> CertificateSigningRequest {
    let mut object_labels = remote_cluster_labels(consumer);
    let (mark, by) = crate::kube::provider_mark();
    object_labels.insert(mark, by);
    CertificateSigningRequest {
        metadata: ObjectMeta { name: Some(name.to_string()), labels: Some(object_labels), ..ObjectMeta::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(csr_pem.as_bytes().to_vec()),
            signer_name: CLIENT_SIGNER.to_string(),
            usages: Some(CLIENT_USAGES.iter().map(|u| u.to_string()).collect()),
            // Validated to fit an int32 at plan time.
            expiration_seconds: Some(validity.as_secs().min(i32::MAX as u64) as i32),
            ..CertificateSigningRequestSpec::default()
        },
        status: None,
    }
}

/// CSRs are immutable and every certificate needs its own: a random suffix keeps names unique.
fn csr_name(consumer: &str) -> String {
    format!("liqo-tenant-{consumer}-{:08x}", rand::random::<u32>())
}

/// `<namespace>/<consumer id>` → its two parts, both valid DNS labels.
fn parse_import_id(id: &str) -> Result<(String, String), Diagnostic> {
    let bad = |why: &str| {
        Diagnostic::error(
            format!("Invalid import ID for {TYPE_NAME}"),
            format!(
                "`{id}` {why}. The import ID is `<tenant_namespace>/<consumer cluster id>`, e.g. `liqo-tenant-rome/rome`: the namespace and name of the Tenant on the provider cluster."
            ),
        )
    };
    let (ns, consumer) = id.split_once('/').ok_or_else(|| bad("has no `/`"))?;
    for part in [ns, consumer] {
        crate::validate::check_dns_label(part).map_err(|why| bad(&format!("has a part `{part}` that {why}")))?;
    }
    Ok((ns.to_string(), consumer.to_string()))
}

// ---------------------------------------------------------------------------------------------------------------
// Cluster operations
// ---------------------------------------------------------------------------------------------------------------

/// Where and how the consumer reaches this cluster.
struct Endpoint {
    server: String,
    ca_pem: Vec<u8>,
    /// Where `ca_pem` came from, for messages.
    ca_source: String,
}

/// How long the TLS check of `api_server_url` may take.
const TLS_PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The outcome of checking that the consumer will trust `api_server_url`: an error when the URL answers with a
/// certificate the CA does not verify (the peering would silently never form), a warning when it cannot be reached
/// from here (it may still be reachable from the consumer's network, which is what matters).
fn tls_verdict(endpoint: &Endpoint, probe: Result<(), crate::kube::probe::TlsProbeError>) -> Option<Diagnostic> {
    let (server, ca) = (&endpoint.server, &endpoint.ca_source);
    match probe {
        Ok(()) => None,
        Err(crate::kube::probe::TlsProbeError::Untrusted(why)) => Some(
            Diagnostic::error(
                format!("{server} does not present a certificate {ca} verifies"),
                format!(
                    "The consumer's Liqo would connect to api_server_url {server} with {ca} as its only CA and reject the \
                     certificate it is served ({why}), so the peering would never form. If {server} is a proxy, load \
                     balancer or port-forward with a certificate of its own, set `api_server_ca` to the CA that signed \
                     it; otherwise set `api_server_url` to an address that serves this API server's own certificate \
                     (one of its names or IP addresses)."
                ),
            )
            .at(AttributePath::root(if ca.contains("api_server_ca") { "api_server_ca" } else { "api_server_url" })),
        ),
        Err(crate::kube::probe::TlsProbeError::Unreachable(why)) => Some(
            Diagnostic::warning(
                format!("Could not check {server} from here"),
                format!(
                    "{why}. The certificate was issued without checking that api_server_url {server} answers with a \
                     certificate {ca} verifies. The consumer cluster must reach that URL and trust that CA; if it is \
                     reachable only from the consumer's network, check it from there."
                ),
            )
            .at(AttributePath::root("api_server_url")),
        ),
    }
}

/// A signed client certificate.
struct Issued {
    cert_pem: Vec<u8>,
    expires_at: OffsetDateTime,
    csr_name: String,
}

fn set_certificate(state: &mut Value, issued: &Issued) {
    state.set("client_certificate", Value::string(String::from_utf8_lossy(&issued.cert_pem)));
    state.set("certificate_expires_at", Value::string(rfc3339(issued.expires_at)));
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).expect("certificate times are within RFC 3339's range")
}

/// The tenant namespace must exist and be labelled for this consumer: Liqo's Tenant webhook and ResourceSlice
/// controller reject anything else, so fail early with the fix.
async fn check_tenant_namespace(ctx: &Ctx, client: &kube::Client, inputs: &Inputs) -> Result<(), Diagnostics> {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = &inputs.namespace;
    let consumer = &inputs.consumer;
    let fix = format!(
        "Create it with liqo_generate on this (provider) cluster (`remote_cluster_id = \"{consumer}\"`) and pass its \
         `tenant_namespace` output here, so Terraform creates it first."
    );
    let found = crate::kube::get_opt(ctx, &api, ns).await.map_err(|e| op_diags(&e))?;
    let Some(namespace) = found else {
        return Err(Diagnostic::error(
            format!("Tenant namespace {ns} does not exist"),
            format!("Namespace {ns} was not found on the provider cluster; liqo_tenant does not create it. {fix}"),
        )
        .at(AttributePath::root("tenant_namespace"))
        .into());
    };
    if namespace.metadata.deletion_timestamp.is_some() {
        return Err(Diagnostic::error(
            format!("Tenant namespace {ns} is being deleted"),
            format!("Namespace {ns} is terminating, so no Tenant can be created in it. Wait for the deletion to finish, then apply again. {fix}"),
        )
        .at(AttributePath::root("tenant_namespace"))
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
        .at(AttributePath::root("tenant_namespace"))
        .into());
    }
    Ok(())
}

/// Approves a CSR as the provider's administrator would (`kubectl certificate approve`).
/// Wait check on a CSR: the certificate once issued; Denied/Failed stop the wait with the signer's reason.
fn csr_issued(csr: Option<&CertificateSigningRequest>) -> Verdict<Vec<u8>> {
    let Some(csr) = csr else {
        return Verdict::Pending("the CertificateSigningRequest does not exist".into());
    };
    let status = csr.status.as_ref();
    if let Some(cert) = status.and_then(|s| s.certificate.as_ref()).filter(|c| !c.0.is_empty()) {
        return Verdict::Ready(cert.0.clone());
    }
    let conditions = status.and_then(|s| s.conditions.as_deref()).unwrap_or_default();
    let find = |t: &str| conditions.iter().find(|c| c.type_ == t && c.status == "True");
    for (t, hint) in [
        ("Denied", "Someone or some controller denied it; find out who (kubectl get csr -o yaml) and apply again."),
        (
            "Failed",
            "The kubernetes.io/kube-apiserver-client signer could not sign it. kube-controller-manager must run with \
             a signing CA (--cluster-signing-cert-file/--cluster-signing-key-file or the kube-apiserver-client \
             variants); managed clusters without client-certificate auth (e.g. EKS) cannot host liqo_tenant.",
        ),
    ] {
        if let Some(c) = find(t) {
            return Verdict::Failed {
                reason: format!(
                    "The CSR was {t}: {} {}",
                    c.reason.as_deref().unwrap_or("(no reason)"),
                    c.message.as_deref().unwrap_or_default()
                )
                .trim_end()
                .to_string(),
                hint: hint.into(),
            };
        }
    }
    if find("Approved").is_some() {
        Verdict::Pending("approved, but the kube-apiserver-client signer (kube-controller-manager) has not issued the certificate yet".into())
    } else {
        Verdict::Pending("not approved yet".into())
    }
}

/// Wait check on the Tenant: what Liqo's tenant controller writes for the Tenant's condition
/// (`tenant_controller.go`). It first adds its finalizer to every Tenant. For `Active` and `Cordoned` it then
/// records the tenant namespace in `status.tenantNamespace`; for `Drained` it returns before that (it unbinds the
/// consumer and deletes its ResourceSlices and NamespaceMaps instead), so a Tenant created Drained never gets
/// `status.tenantNamespace` and its finalizer is the only sign that Liqo has taken it.
fn tenant_ready(tenant: Option<&Tenant>, namespace: &str, consumer: &str, drained: bool) -> Verdict<()> {
    let Some(t) = tenant else {
        return Verdict::Pending("the Tenant does not exist".into());
    };
    if drained {
        let adopted = t.metadata.finalizers.iter().flatten().any(|f| f == labels::TENANT_FINALIZER);
        return if adopted {
            Verdict::Ready(())
        } else {
            Verdict::Pending(format!(
                "finalizer {} is not set: Liqo's tenant controller has not reconciled the Tenant yet",
                labels::TENANT_FINALIZER
            ))
        };
    }
    match t.status.as_ref().and_then(|s| s.tenant_namespace.as_deref()) {
        Some(ns) if ns == namespace => Verdict::Ready(()),
        Some(other) if !other.is_empty() => Verdict::Failed {
            reason: format!("Liqo reports tenant namespace {other} for this Tenant, not {namespace}."),
            hint: format!(
                "Liqo finds a consumer's tenant namespace by the labels {}=true and {}={consumer}, and more than one \
                 namespace seems to carry them. Remove the labels from every namespace except {namespace}.",
                labels::TENANT_NAMESPACE,
                labels::REMOTE_CLUSTER_ID
            ),
        },
        _ => Verdict::Pending(
            "status.tenantNamespace is empty: Liqo's tenant controller has not reconciled the Tenant yet".into(),
        ),
    }
}

/// Wait check for a drain: Liqo deletes every ResourceSlice of the consumer; one still live (no deletion
/// requested) means the drain has not happened yet. Slices being deleted are Liqo's and the consumer's business.
fn slices_drained(slices: &[ResourceSlice]) -> Verdict<()> {
    let live: Vec<&str> =
        slices.iter().filter(|s| !crate::kube::is_terminating(*s)).filter_map(|s| s.metadata.name.as_deref()).collect();
    if live.is_empty() {
        Verdict::Ready(())
    } else {
        Verdict::Pending(format!("ResourceSlice(s) {} not deleted by Liqo yet", live.join(", ")))
    }
}

impl TenantResource {
    async fn client(&self) -> Result<kube::Client, Diagnostics> {
        self.cluster.client().await.map_err(Diagnostics::from)
    }

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
    async fn server_url(&self, planned: &Value) -> Result<String, Diagnostics> {
        match planned.get("api_server_url").as_str() {
            Some(url) => Ok(url.to_string()),
            None => self.cluster.api_server_url().await.map_err(Diagnostics::from),
        }
    }

    /// Server URL and CA (`api_server_ca`, else `kube-root-ca.crt` in the tenant namespace), after checking that the
    /// consumer will trust the URL (a warning, if any, goes to `diags`).
    async fn endpoint(
        &self,
        ctx: &Ctx,
        client: &kube::Client,
        inputs: &Inputs,
        planned: &Value,
        budget: &Deadline,
        diags: &mut Diagnostics,
    ) -> Result<Endpoint, Diagnostics> {
        let server = self.server_url(planned).await?;
        let (ca_pem, ca_source) = match planned.get("api_server_ca").as_str() {
            Some(ca) => (ca.as_bytes().to_vec(), "the CA in `api_server_ca`".to_string()),
            None => {
                let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &inputs.namespace);
                let waiting_for = format!(
                    "data[\"{ROOT_CA_KEY}\"] (the cluster CA, published in every namespace by kube-controller-manager)"
                );
                let check = |cm: Option<&ConfigMap>| match cm
                    .and_then(|c| c.data.as_ref())
                    .and_then(|d| d.get(ROOT_CA_KEY))
                    .filter(|ca| !ca.is_empty())
                {
                    Some(ca) => Verdict::Ready(ca.clone().into_bytes()),
                    None => Verdict::Pending("not published yet".into()),
                };
                let ca = crate::kube::wait_for(ctx, &cms, ROOT_CA_CONFIGMAP, &waiting_for, budget.left(), check)
                    .await
                    .map_err(|e| op_diags(&e))?;
                let source = format!(
                    "the cluster CA (ConfigMap {}/{ROOT_CA_CONFIGMAP}, the default of `api_server_ca`)",
                    inputs.namespace
                );
                (ca, source)
            }
        };
        let endpoint = Endpoint { server, ca_pem, ca_source };
        let probe =
            crate::kube::probe::probe_tls(&endpoint.server, &endpoint.ca_pem, TLS_PROBE_TIMEOUT.min(budget.left()))
                .await;
        match tls_verdict(&endpoint, probe) {
            Some(d) if d.severity == liqo_schema::tf::Severity::Error => return Err(d.into()),
            Some(warning) => diags.push(warning),
            None => {}
        }
        Ok(endpoint)
    }

    /// Has this cluster sign the consumer's CSR (a fresh CertificateSigningRequest object each time: they are
    /// immutable, and a renewal is the same request signed again) and reads the certificate back.
    async fn sign(
        &self,
        ctx: &Ctx,
        client: &kube::Client,
        inputs: &Inputs,
        budget: &Deadline,
    ) -> Result<Issued, Diagnostics> {
        let name = csr_name(&inputs.consumer);
        let api: Api<CertificateSigningRequest> = Api::all(client.clone());
        let csr = csr_object(&name, &inputs.consumer, &inputs.csr, inputs.validity);
        crate::kube::create(ctx, &api, &csr).await.map_err(|e| op_diags(&e))?;
        crate::kube::approve_csr(
            ctx,
            &api,
            &name,
            APPROVAL_REASON,
            "Approved by terraform-provider-liqo (liqo_tenant) for a Liqo consumer control plane.",
        )
        .await
        .map_err(|e| op_diags(&e))?;
        let cert_pem = crate::kube::wait_for(
            ctx,
            &api,
            &name,
            "status.certificate (the signed client certificate)",
            budget.left(),
            csr_issued,
        )
        .await
        .map_err(|e| op_diags(&e))?;
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

    /// RoleBinding and Tenant as the inputs say, then waits for Liqo to adopt the Tenant. A drained consumer loses
    /// its binding (Liqo removes it too; doing it here makes the revocation immediate).
    async fn ensure_tenant(
        &self,
        ctx: &Ctx,
        client: &kube::Client,
        inputs: &Inputs,
        budget: &Deadline,
    ) -> Result<(), Diagnostics> {
        let tenants: Api<Tenant> = Api::namespaced(client.clone(), &inputs.namespace);
        let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), &inputs.namespace);
        // A Tenant still terminating (e.g. deleted out of band) would swallow the apply: let it go first.
        let existing = crate::kube::get_opt(ctx, &tenants, &inputs.consumer).await.map_err(|e| op_diags(&e))?;
        if existing.is_some_and(|t| t.metadata.deletion_timestamp.is_some()) {
            crate::kube::delete_and_wait(ctx, &tenants, &inputs.consumer, budget.left())
                .await
                .map_err(|e| op_diags(&e))?;
        }
        let role = self.control_plane_role(ctx, client).await.map_err(|e| op_diags(&e))?;
        if !inputs.drained() {
            crate::kube::apply(ctx, &bindings, &role_binding(inputs, &role)).await.map_err(|e| op_diags(&e))?;
        }
        crate::kube::apply(ctx, &tenants, &tenant_object(inputs)).await.map_err(|e| op_diags(&e))?;
        if inputs.drained() {
            crate::kube::delete_and_wait(ctx, &bindings, &role_binding_name(&role), budget.left())
                .await
                .map_err(|e| op_diags(&e))?;
        }
        let (ns, consumer, drained) = (inputs.namespace.as_str(), inputs.consumer.as_str(), inputs.drained());
        let waiting_for = if drained {
            format!("finalizer {} (Liqo writes no status for a Drained Tenant)", labels::TENANT_FINALIZER)
        } else {
            "status.tenantNamespace".to_string()
        };
        crate::kube::wait_for(ctx, &tenants, consumer, &waiting_for, budget.left(), |t: Option<&Tenant>| {
            tenant_ready(t, ns, consumer, drained)
        })
        .await
        .map_err(|e| op_diags(&e))?;
        if drained {
            let slices: Api<ResourceSlice> = Api::namespaced(client.clone(), ns);
            let selector = format!("{}={consumer}", labels::REMOTE_CLUSTER_ID);
            let target = crate::kube::WaitTarget::labelled(
                &slices,
                &selector,
                "Liqo to delete the consumer's ResourceSlices (the drain)",
            );
            crate::kube::wait_until(ctx, &slices, target, budget.left(), slices_drained)
                .await
                .map_err(|e| op_diags(&e))?;
        }
        Ok(())
    }

    /// Deletes this resource's CSRs except `keep`. They carry nothing secret and kube-controller-manager garbage
    /// collects issued CSRs after an hour anyway, so a failure here is only a warning.
    async fn prune_csrs(
        &self,
        ctx: &Ctx,
        client: &kube::Client,
        consumer: &str,
        keep: Option<&str>,
        budget: &Deadline,
    ) -> Result<(), OpError> {
        let api: Api<CertificateSigningRequest> = Api::all(client.clone());
        for csr in crate::kube::list(ctx, &api, &csr_selector(consumer)).await? {
            let name = csr.metadata.name.unwrap_or_default();
            if Some(name.as_str()) != keep {
                crate::kube::delete_and_wait(ctx, &api, &name, budget.left()).await?;
            }
        }
        Ok(())
    }

    /// Adds a warning when the cluster issued a certificate so short-lived that every plan would renew it.
    fn warn_if_capped(issued: &Issued, planned: &Value, diags: &mut Diagnostics) {
        let renew = effective_duration(planned, "renew_before", DEFAULT_RENEW_BEFORE).unwrap_or_default();
        if OffsetDateTime::now_utc() + renew >= issued.expires_at {
            diags.push(
                Diagnostic::warning(
                    "Client certificate is shorter-lived than renew_before",
                    format!(
                        "The cluster issued a certificate valid until {}, which is already within renew_before ({}): \
                     the cluster caps certificate lifetimes (kube-controller-manager --cluster-signing-duration) \
                     below certificate_validity. Every plan will propose a new certificate: lower renew_before \
                     below the issued lifetime.",
                        rfc3339(issued.expires_at),
                        crate::errors::human(renew)
                    ),
                )
                .at(AttributePath::root("renew_before")),
            );
        }
    }

    async fn create(&self, ctx: &Ctx, planned: &Value) -> (Value, Diagnostics) {
        let inputs = Inputs::from_value(planned);
        let budget = Deadline::after(Timeouts::from_value(planned, DEFAULT_TIMEOUTS).create);
        let mut diags = Diagnostics::new();
        let client = match self.client().await {
            Ok(c) => c,
            Err(d) => return (Value::Null, d),
        };
        if let Err(d) = check_tenant_namespace(ctx, &client, &inputs).await {
            return (Value::Null, d);
        }
        let endpoint = match self.endpoint(ctx, &client, &inputs, planned, &budget, &mut diags).await {
            Ok(e) => e,
            Err(d) => return (Value::Null, d),
        };
        // From here on objects get written: a failure returns the partial state, so Terraform records the
        // resource as tainted and the next apply's destroy removes whatever was created.
        let mut state = planned.clone();
        state.set("api_server_url", Value::string(&endpoint.server));
        state.set("cluster_ca_certificate", Value::string(String::from_utf8_lossy(&endpoint.ca_pem)));
        state.set("client_certificate", Value::Null);
        state.set("certificate_expires_at", Value::Null);
        let issued = match self.sign(ctx, &client, &inputs, &budget).await {
            Ok(i) => i,
            Err(d) => return (state, d),
        };
        Self::warn_if_capped(&issued, planned, &mut diags);
        set_certificate(&mut state, &issued);
        if let Err(d) = self.ensure_tenant(ctx, &client, &inputs, &budget).await {
            diags.extend(d);
            return (state, diags);
        }
        if let Err(e) = self.prune_csrs(ctx, &client, &inputs.consumer, Some(&issued.csr_name), &budget).await {
            diags.push(as_warning(op_error(&e)));
        }
        (state, diags)
    }

    async fn update(&self, ctx: &Ctx, prior: &Value, planned: &Value) -> (Value, Diagnostics) {
        let inputs = Inputs::from_value(planned);
        let budget = Deadline::after(Timeouts::from_value(planned, DEFAULT_TIMEOUTS).update);
        let mut diags = Diagnostics::new();
        // The state follows the cluster step by step, so a failure leaves it true and the next plan retries.
        let mut state = prior.clone();
        for attr in ["renew_before", "timeouts"] {
            state.set(attr, planned.get(attr).clone());
        }
        if inputs.authz_policy == AUTHZ_POLICY_KEYS_EXCHANGE {
            // Liqo's handshake identity: these settings are recorded and have no effect (nothing is signed).
            for attr in ["csr", "api_server_url", "api_server_ca", "authz_policy"] {
                state.set(attr, planned.get(attr).clone());
            }
        }
        let client = match self.client().await {
            Ok(c) => c,
            Err(d) => return (state, d),
        };
        if let Err(d) = check_tenant_namespace(ctx, &client, &inputs).await {
            return (state, d);
        }
        if planned.get("cluster_ca_certificate").is_unknown() {
            match self.endpoint(ctx, &client, &inputs, planned, &budget, &mut diags).await {
                Ok(endpoint) => {
                    state.set("api_server_url", Value::string(&endpoint.server));
                    state.set("api_server_ca", planned.get("api_server_ca").clone());
                    state.set("cluster_ca_certificate", Value::string(String::from_utf8_lossy(&endpoint.ca_pem)));
                }
                Err(d) => {
                    diags.extend(d);
                    return (state, diags);
                }
            }
        }
        let mut signed = None;
        if planned.get("client_certificate").is_unknown() {
            match self.sign(ctx, &client, &inputs, &budget).await {
                Ok(issued) => {
                    Self::warn_if_capped(&issued, planned, &mut diags);
                    set_certificate(&mut state, &issued);
                    state.set("csr", Value::string(&inputs.csr));
                    signed = Some(issued.csr_name);
                }
                Err(d) => {
                    diags.extend(d);
                    return (state, diags);
                }
            }
        }
        state.set("certificate_validity", planned.get("certificate_validity").clone());
        if let Err(d) = self.ensure_tenant(ctx, &client, &inputs, &budget).await {
            diags.extend(d);
            return (state, diags);
        }
        state.set("tenant_condition", Value::string(&inputs.condition));
        if let Some(keep) = signed {
            // The previous certificate stays valid until it expires (Kubernetes has no revocation); its CSR is
            // just clutter now.
            if let Err(e) = self.prune_csrs(ctx, &client, &inputs.consumer, Some(&keep), &budget).await {
                diags.push(as_warning(op_error(&e)));
            }
        }
        (state, diags)
    }

    /// Liqo's order (reference §6): Tenant (its finalizer is released by Liqo), then the RoleBinding, then the
    /// CSRs. The consumer's ResourceSlices must already be gone, which liqo_peer's dependency on this resource's
    /// certificate guarantees.
    async fn destroy(&self, ctx: &Ctx, prior: &Value) -> (Value, Diagnostics) {
        let inputs = Inputs::from_value(prior);
        let budget = Deadline::after(Timeouts::from_value(prior, DEFAULT_TIMEOUTS).delete);
        let client = match self.client().await {
            Ok(c) => c,
            Err(d) => return (prior.clone(), d),
        };
        let tenants: Api<Tenant> = Api::namespaced(client.clone(), &inputs.namespace);
        let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), &inputs.namespace);
        let result = async {
            crate::kube::delete_and_wait(ctx, &tenants, &inputs.consumer, budget.left()).await?;
            // Without a unique labelled role (Liqo uninstalled or broken), the default name is the only candidate.
            let role = self
                .control_plane_role(ctx, &client)
                .await
                .unwrap_or_else(|_| labels::REMOTE_CONTROLPLANE_CLUSTER_ROLE.to_string());
            crate::kube::delete_and_wait(ctx, &bindings, &role_binding_name(&role), budget.left()).await?;
            self.prune_csrs(ctx, &client, &inputs.consumer, None, &budget).await
        }
        .await;
        match result {
            Ok(()) => (Value::Null, Diagnostics::new()),
            Err(e) => (prior.clone(), op_diags(&e)),
        }
    }

    /// The Tenant's condition when the Tenant and (unless drained) the RoleBinding are in place; `None` when
    /// either is gone, which makes Terraform recreate the resource.
    async fn observe(
        &self,
        ctx: &Ctx,
        client: &kube::Client,
        namespace: &str,
        consumer: &str,
    ) -> Result<Option<String>, OpError> {
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
        Ok(Some(condition))
    }
}

fn as_warning(mut d: Diagnostic) -> Diagnostic {
    d.severity = liqo_schema::tf::Severity::Warning;
    d
}

#[async_trait]
impl Resource for TenantResource {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        validate(config)
    }

    async fn plan(&self, _ctx: &Ctx, req: PlanRequest) -> PlanResponse {
        plan_change(&req.prior, &req.proposed, &req.config, OffsetDateTime::now_utc())
    }

    async fn apply(&self, ctx: &Ctx, req: ApplyRequest) -> ApplyResponse {
        let (new_state, diagnostics) = if req.planned.is_null() {
            self.destroy(ctx, &req.prior).await
        } else if req.prior.is_null() {
            self.create(ctx, &req.planned).await
        } else {
            self.update(ctx, &req.prior, &req.planned).await
        };
        ApplyResponse { new_state, private: Vec::new(), diagnostics }
    }

    async fn read(&self, ctx: &Ctx, state: Value, private: Vec<u8>) -> ReadResponse {
        if state.is_null() {
            return ReadResponse { new_state: state, private, diagnostics: Diagnostics::new() };
        }
        let inputs = Inputs::from_value(&state);
        let observed = match self.client().await {
            Ok(client) => {
                self.observe(ctx, &client, &inputs.namespace, &inputs.consumer).await.map_err(|e| op_diags(&e))
            }
            Err(d) => Err(d),
        };
        match observed {
            Ok(Some(condition)) => {
                let mut new_state = state;
                new_state.set("tenant_condition", Value::string(condition));
                // Before `authz_policy` existed, every Tenant in state was created by this resource.
                if new_state.get("authz_policy").is_null() {
                    new_state.set("authz_policy", Value::string(AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE));
                }
                ReadResponse { new_state, private, diagnostics: Diagnostics::new() }
            }
            Ok(None) => ReadResponse { new_state: Value::Null, private, diagnostics: Diagnostics::new() },
            Err(diagnostics) => ReadResponse { new_state: state, private, diagnostics },
        }
    }

    /// From 0.2.0 (version 0): the `kubeconfig` holding the consumer's private key is dropped, so the upgraded
    /// state carries no key; the next plan then signs the configured `csr` (an in-place update).
    fn upgrade(&self, version: i64, state: serde_json::Value) -> Result<serde_json::Value, Diagnostics> {
        crate::resources::common::upgrade_dropping_v0_attribute(TYPE_NAME, "kubeconfig", SCHEMA_VERSION, version, state)
    }

    async fn import(&self, ctx: &Ctx, id: &str) -> Result<Vec<ImportedResource>, Diagnostics> {
        let (namespace, consumer) = parse_import_id(id)?;
        let client = self.client().await?;
        let tenants: Api<Tenant> = Api::namespaced(client.clone(), &namespace);
        let tenant = crate::kube::get_opt(ctx, &tenants, &consumer).await.map_err(|e| op_diags(&e))?.ok_or_else(|| {
            Diagnostic::error(
                format!("Cannot import {TYPE_NAME} {id}"),
                format!("{} was not found on the provider cluster. Check the namespace and the consumer cluster ID (`kubectl get tenants -A`).", crate::kube::describe::<Tenant>(Some(&namespace), &consumer)),
            )
        })?;
        if tenant.spec.cluster_id.as_deref() != Some(consumer.as_str()) {
            return Err(Diagnostic::error(
                format!("Cannot import {TYPE_NAME} {id}"),
                format!(
                    "{} has spec.clusterID {:?}, but liqo_tenant names the Tenant after the consumer cluster ID. Import a Tenant whose name equals its clusterID.",
                    crate::kube::describe::<Tenant>(Some(&namespace), &consumer),
                    tenant.spec.cluster_id.as_deref().unwrap_or_default()
                ),
            )
            .into());
        }
        let condition = self.observe(ctx, &client, &namespace, &consumer).await.map_err(|e| op_diags(&e))?.ok_or_else(|| {
            Diagnostic::error(
                format!("Cannot import {TYPE_NAME} {id}"),
                format!(
                    "The RoleBinding `liqo-binding-<role>` in {namespace} is not in place or does not bind User {consumer} to Liqo's control-plane ClusterRole (labelled {}), or the Tenant is being deleted. Apply a liqo_tenant resource instead of importing, so the binding and credentials are created.",
                    control_plane_role_selector()
                ),
            )
        })?;
        if tenant.spec.authz_policy.as_deref() != Some(AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE) {
            return Ok(vec![ImportedResource {
                state: handshake_state(&tenant, &namespace, &consumer, condition),
                private: Vec::new(),
            }]);
        }
        // The certificate and the CSR it was signed for are not kept on the cluster (kube-controller-manager
        // removes issued CSRs after an hour): null makes the next plan sign the configured CSR, and nothing else.
        let state = Value::object([
            ("id", Value::string(format!("{namespace}/{consumer}"))),
            ("tenant_namespace", Value::string(&namespace)),
            ("consumer_cluster_id", Value::string(&consumer)),
            ("tenant_condition", Value::string(condition)),
            ("api_server_url", Value::opt_string(self.cluster.api_server_url().await.ok())),
            // Not recoverable from the provider cluster (only the consumer's identity Secret holds it): the default.
            ("api_server_ca", Value::Null),
            ("certificate_validity", Value::string(DEFAULT_CERTIFICATE_VALIDITY)),
            ("renew_before", Value::string(DEFAULT_RENEW_BEFORE)),
            ("csr", Value::Null),
            ("client_certificate", Value::Null),
            ("cluster_ca_certificate", Value::Null),
            ("certificate_expires_at", Value::Null),
            ("authz_policy", Value::string(AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE)),
            ("timeouts", Value::Null),
        ]);
        Ok(vec![ImportedResource { state, private: Vec::new() }])
    }
}

/// The state of a Tenant made by Liqo's authentication handshake (`liqoctl peer`): Liqo signed the consumer's
/// certificate (`status.authParams`) and renews it, so the state records Liqo's values (its CSR, public, as
/// `csr`) and no certificate of ours, and the plan never signs anything for it (`plan_change`). The inert
/// credential settings keep their defaults.
fn handshake_state(tenant: &Tenant, namespace: &str, consumer: &str, condition: String) -> Value {
    let auth = tenant.status.as_ref().and_then(|s| s.auth_params.as_ref());
    let expires_at =
        auth.and_then(|a| a.signed_crt.as_ref()).and_then(|crt| crypto::not_after(&crt.0).ok()).map(rfc3339);
    Value::object([
        ("id", Value::string(format!("{namespace}/{consumer}"))),
        ("tenant_namespace", Value::string(namespace)),
        ("consumer_cluster_id", Value::string(consumer)),
        ("tenant_condition", Value::string(condition)),
        ("api_server_url", Value::opt_string(auth.and_then(|a| a.api_server.clone()))),
        ("api_server_ca", Value::Null),
        ("certificate_validity", Value::string(DEFAULT_CERTIFICATE_VALIDITY)),
        ("renew_before", Value::string(DEFAULT_RENEW_BEFORE)),
        ("csr", Value::opt_string(tenant.spec.csr.as_ref().map(|c| String::from_utf8_lossy(&c.0).into_owned()))),
        ("client_certificate", Value::Null),
        ("cluster_ca_certificate", Value::Null),
        ("certificate_expires_at", Value::opt_string(expires_at)),
        ("authz_policy", Value::string(AUTHZ_POLICY_KEYS_EXCHANGE)),
        ("timeouts", Value::Null),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use liqo_schema::tf::Severity;

    fn config(pairs: &[(&str, Value)]) -> Value {
        let mut v = Value::object([
            ("tenant_namespace", Value::string("liqo-tenant-rome")),
            ("consumer_cluster_id", Value::string("rome")),
            ("tenant_condition", Value::Null),
            ("api_server_url", Value::Null),
            ("api_server_ca", Value::Null),
            ("certificate_validity", Value::Null),
            ("renew_before", Value::Null),
            ("id", Value::Null),
            ("csr", Value::string(csr_for("rome"))),
            ("client_certificate", Value::Null),
            ("cluster_ca_certificate", Value::Null),
            ("certificate_expires_at", Value::Null),
            ("authz_policy", Value::Null),
            ("timeouts", Value::Null),
        ]);
        for (k, val) in pairs {
            v.set(k, val.clone());
        }
        v
    }

    /// A consumer's CSR as liqo_consumer_key makes it, one per common name and test process.
    fn csr_for(cn: &str) -> String {
        static CSRS: std::sync::Mutex<BTreeMap<String, String>> = std::sync::Mutex::new(BTreeMap::new());
        let mut csrs = CSRS.lock().unwrap();
        csrs.entry(cn.to_string()).or_insert_with(|| crypto::new_client_key(cn, "liqo.io").unwrap().csr_pem).clone()
    }

    /// A real (self-signed) CA certificate.
    fn pem_ca() -> String {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        rcgen::CertificateParams::new(Vec::<String>::new()).unwrap().self_signed(&key).unwrap().pem()
    }

    fn error_paths(d: &Diagnostics) -> Vec<String> {
        d.iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.attribute.as_ref().map(|p| p.to_string()).unwrap_or_default())
            .collect()
    }

    fn now() -> OffsetDateTime {
        OffsetDateTime::parse("2030-01-01T00:00:00Z", &Rfc3339).unwrap()
    }

    /// A state as a successful apply leaves it.
    fn applied_state(expires_at: &str) -> Value {
        config(&[
            ("id", Value::string("liqo-tenant-rome/rome")),
            ("tenant_condition", Value::string("Active")),
            ("api_server_url", Value::string("https://127.0.0.1:6443")),
            ("certificate_validity", Value::string("8760h")),
            ("renew_before", Value::string("720h")),
            ("client_certificate", Value::string("-----BEGIN CERTIFICATE-----\n")),
            ("cluster_ca_certificate", Value::string("-----BEGIN CERTIFICATE-----\n")),
            ("certificate_expires_at", Value::string(expires_at)),
            ("authz_policy", Value::string(AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE)),
        ])
    }

    #[test]
    fn schema_holds_nothing_secret_and_describes_everything() {
        let s = schema();
        assert!(s.block.attribute("kubeconfig").is_none(), "no private key crosses through this resource");
        for a in &s.block.attributes {
            assert!(!a.description.is_empty(), "{} has no description", a.name);
            assert!(!a.sensitive, "{} is public", a.name);
        }
        for out in ["client_certificate", "cluster_ca_certificate", "certificate_expires_at"] {
            let a = s.block.attribute(out).unwrap();
            assert!(a.computed && !a.optional, "{out} is an output");
        }
        for name in ["tenant_namespace", "consumer_cluster_id", "csr"] {
            assert!(s.block.attribute(name).unwrap().required);
        }
        for name in ["tenant_condition", "api_server_url", "certificate_validity", "renew_before"] {
            let a = s.block.attribute(name).unwrap();
            assert!(a.optional && a.computed, "{name} is optional+computed (it has a default)");
        }
        let ca = s.block.attribute("api_server_ca").unwrap();
        assert!(ca.optional && !ca.computed, "api_server_ca: null means the cluster CA");
        assert!(s.block.blocks.iter().any(|b| b.type_name == "timeouts"));
    }

    #[test]
    fn validation_names_the_attribute() {
        let cases: Vec<(Value, &str)> = vec![
            (config(&[("consumer_cluster_id", Value::string("Rome_1"))]), "consumer_cluster_id"),
            (config(&[("tenant_namespace", Value::string("-bad"))]), "tenant_namespace"),
            (config(&[("tenant_condition", Value::string("active"))]), "tenant_condition"),
            (config(&[("certificate_validity", Value::string("1y"))]), "certificate_validity"),
            (
                config(&[("certificate_validity", Value::string("5m")), ("renew_before", Value::string("1m"))]),
                "certificate_validity",
            ),
            (config(&[("certificate_validity", Value::string("100000000h"))]), "certificate_validity"),
            (config(&[("renew_before", Value::string("soon"))]), "renew_before"),
            (config(&[("renew_before", Value::string("8760h"))]), "renew_before"),
            (
                config(&[("certificate_validity", Value::string("48h")), ("renew_before", Value::string("47h55m"))]),
                "renew_before",
            ),
            (
                config(&[("certificate_validity", Value::string("24h")), ("renew_before", Value::string("48h"))]),
                "renew_before",
            ),
            (config(&[("api_server_url", Value::string("http://10.0.0.1:6443"))]), "api_server_url"),
            (config(&[("api_server_url", Value::string("https://:6443"))]), "api_server_url"),
            (config(&[("api_server_url", Value::string("https://10.0.0.1:0"))]), "api_server_url"),
            (config(&[("timeouts", Value::object([("create", Value::string("ten minutes"))]))]), "timeouts.create"),
            (config(&[("csr", Value::string("not a CSR"))]), "csr"),
            (config(&[("csr", Value::string(csr_for("naples")))]), "csr"),
            (config(&[("csr", Value::string(pem_ca()))]), "csr"),
        ];
        for (cfg, path) in cases {
            let d = validate(&cfg);
            assert_eq!(error_paths(&d), [path], "config {cfg:?}");
        }
    }

    #[test]
    fn valid_and_unknown_configs_pass() {
        for cfg in [
            config(&[]),
            config(&[
                ("tenant_condition", Value::string("Cordoned")),
                ("api_server_url", Value::string("https://milan.example.com:6443")),
                ("certificate_validity", Value::string("48h")),
                ("renew_before", Value::string("24h")),
            ]),
            config(&[("api_server_url", Value::string("https://[fd00::1]:6443/k8s/clusters/c-1"))]),
            config(&[("api_server_url", Value::string("https://api.example.com"))]),
            config(&[
                ("tenant_namespace", Value::Unknown),
                ("consumer_cluster_id", Value::Unknown),
                ("certificate_validity", Value::Unknown),
                ("renew_before", Value::string("8760h")),
                ("api_server_url", Value::Unknown),
            ]),
        ] {
            assert!(validate(&cfg).is_empty(), "{cfg:?}: {:?}", validate(&cfg));
        }
    }

    #[test]
    fn create_fills_defaults_and_leaves_outputs_unknown() {
        let cfg = config(&[]);
        let p = plan_change(&Value::Null, &cfg, &cfg, now());
        assert!(p.requires_replace.is_empty() && p.diagnostics.is_empty());
        assert_eq!(p.planned.get("tenant_condition").as_str(), Some("Active"));
        assert_eq!(p.planned.get("certificate_validity").as_str(), Some("8760h"));
        assert_eq!(p.planned.get("renew_before").as_str(), Some("720h"));
        assert_eq!(p.planned.get("id").as_str(), Some("liqo-tenant-rome/rome"));
        for out in ["api_server_url", "client_certificate", "cluster_ca_certificate", "certificate_expires_at"] {
            assert!(p.planned.get(out).is_unknown(), "{out}");
        }
    }

    #[test]
    fn unknown_references_stay_unknown() {
        let cfg = config(&[("tenant_namespace", Value::Unknown), ("api_server_url", Value::Unknown)]);
        let p = plan_change(&Value::Null, &cfg, &cfg, now());
        assert!(p.planned.get("id").is_unknown());
        assert!(p.planned.get("tenant_namespace").is_unknown());
        assert!(p.planned.get("api_server_url").is_unknown());
    }

    #[test]
    fn tenant_condition_updates_in_place_and_keeps_the_credentials() {
        let prior = applied_state("2030-12-01T00:00:00Z");
        let mut proposed = prior.clone();
        proposed.set("tenant_condition", Value::string("Cordoned"));
        let cfg = config(&[("tenant_condition", Value::string("Cordoned"))]);
        let p = plan_change(&prior, &proposed, &cfg, now());
        assert!(p.requires_replace.is_empty());
        assert_eq!(p.planned.get("tenant_condition").as_str(), Some("Cordoned"));
        assert_eq!(p.planned.get("client_certificate"), prior.get("client_certificate"));
        assert_eq!(p.planned.get("certificate_expires_at"), prior.get("certificate_expires_at"));
    }

    #[test]
    fn an_unchanged_config_plans_no_change() {
        let prior = applied_state("2030-12-01T00:00:00Z");
        let p = plan_change(&prior, &prior, &config(&[]), now());
        assert_eq!(p.planned, prior);
        assert!(p.requires_replace.is_empty());
    }

    #[test]
    fn removing_an_explicit_condition_restores_the_default() {
        let mut prior = applied_state("2030-12-01T00:00:00Z");
        prior.set("tenant_condition", Value::string("Drained"));
        let p = plan_change(&prior, &prior, &config(&[]), now());
        assert_eq!(p.planned.get("tenant_condition").as_str(), Some("Active"));
    }

    #[test]
    fn identity_changes_replace() {
        let prior = applied_state("2030-12-01T00:00:00Z");
        for (attr, value) in [("consumer_cluster_id", "naples"), ("tenant_namespace", "other")] {
            let mut proposed = prior.clone();
            proposed.set(attr, Value::string(value));
            // Another consumer comes with its own CSR.
            if attr == "consumer_cluster_id" {
                proposed.set("csr", Value::string(csr_for("naples")));
            }
            let cfg = config(&[(attr, Value::string(value))]);
            let p = plan_change(&prior, &proposed, &cfg, now());
            assert_eq!(p.requires_replace, [AttributePath::root(attr)]);
            assert!(p.planned.get("client_certificate").is_unknown());
        }
    }

    #[test]
    fn renewal_is_planned_once_renew_before_is_reached() {
        // 2030-01-01 + 720h = 2030-01-31: an expiry on 2030-02-01 is not due, on 2030-01-20 it is.
        let fresh = applied_state("2030-02-01T00:00:00Z");
        let p = plan_change(&fresh, &fresh, &config(&[]), now());
        assert_eq!(p.planned.get("client_certificate"), fresh.get("client_certificate"));

        let due = applied_state("2030-01-20T00:00:00Z");
        let p = plan_change(&due, &due, &config(&[]), now());
        assert!(p.planned.get("client_certificate").is_unknown());
        assert!(p.planned.get("certificate_expires_at").is_unknown());
        assert!(p.requires_replace.is_empty(), "renewal is an in-place update");
    }

    #[test]
    fn validity_change_mints_but_respelling_does_not() {
        let prior = applied_state("2030-12-01T00:00:00Z");
        let mut same = prior.clone();
        same.set("certificate_validity", Value::string("8760h0m0s"));
        let p = plan_change(&prior, &same, &config(&[("certificate_validity", Value::string("8760h0m0s"))]), now());
        assert!(!p.planned.get("client_certificate").is_unknown());

        let mut shorter = prior.clone();
        shorter.set("certificate_validity", Value::string("4380h"));
        let p = plan_change(&prior, &shorter, &config(&[("certificate_validity", Value::string("4380h"))]), now());
        assert!(p.planned.get("certificate_expires_at").is_unknown());
    }

    #[test]
    fn ca_change_keeps_the_certificate() {
        let prior = applied_state("2030-12-01T00:00:00Z");
        let mut proposed = prior.clone();
        let ca = pem_ca();
        proposed.set("api_server_ca", Value::string(&ca));
        let p = plan_change(&prior, &proposed, &config(&[("api_server_ca", Value::string(&ca))]), now());
        assert!(p.requires_replace.is_empty());
        assert!(p.planned.get("cluster_ca_certificate").is_unknown());
        assert_eq!(p.planned.get("client_certificate"), prior.get("client_certificate"));
        assert_eq!(p.planned.get("certificate_expires_at"), prior.get("certificate_expires_at"));
    }

    /// A new CSR (the consumer rotated its key) is signed in place; the tenant stays.
    #[test]
    fn a_new_csr_is_signed_in_place() {
        let prior = applied_state("2030-12-01T00:00:00Z");
        let mut proposed = prior.clone();
        let rotated = crypto::new_client_key("rome", "liqo.io").unwrap().csr_pem;
        proposed.set("csr", Value::string(&rotated));
        let p = plan_change(&prior, &proposed, &config(&[("csr", Value::string(&rotated))]), now());
        assert!(p.requires_replace.is_empty());
        assert!(p.planned.get("client_certificate").is_unknown());
        assert_eq!(p.planned.get("cluster_ca_certificate"), prior.get("cluster_ca_certificate"));
    }

    /// A CSR that only became known at plan time (both references unknown at validation) is still checked.
    #[test]
    fn a_csr_for_another_cluster_fails_the_plan() {
        let cfg = config(&[("csr", Value::string(csr_for("naples")))]);
        let p = plan_change(&Value::Null, &cfg, &cfg, now());
        assert_eq!(error_paths(&p.diagnostics), ["csr"]);
        assert!(p.diagnostics.0[0].detail.contains("`naples`") && p.diagnostics.0[0].detail.contains("`rome`"));
        let mut unknown = cfg.clone();
        unknown.set("consumer_cluster_id", Value::Unknown);
        assert!(validate(&unknown).is_empty(), "the common name is compared once both are known");
    }

    #[test]
    fn api_server_ca_must_be_pem_certificates() {
        assert!(validate(&config(&[("api_server_ca", Value::string(pem_ca()))])).is_empty());
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap().serialize_pem();
        let ca_and_key = format!("{}{key}", pem_ca());
        for bad in
            ["not a certificate", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", &key, &ca_and_key]
        {
            let d = validate(&config(&[("api_server_ca", Value::string(bad))]));
            assert_eq!(error_paths(&d), ["api_server_ca"], "{bad}");
        }
    }

    /// The check's verdict names the URL and where the CA came from, on the attribute to fix.
    #[test]
    fn an_untrusted_api_server_fails_naming_url_and_ca() {
        let endpoint = |ca_source: &str| Endpoint {
            server: "https://203.0.113.10:6443".into(),
            ca_pem: Vec::new(),
            ca_source: ca_source.into(),
        };
        let cluster_ca =
            endpoint("the cluster CA (ConfigMap liqo-tenant-rome/kube-root-ca.crt, the default of `api_server_ca`)");
        let untrusted = || Err(crate::kube::probe::TlsProbeError::Untrusted("UnknownIssuer".into()));
        let d = tls_verdict(&cluster_ca, untrusted()).unwrap();
        assert_eq!(d.severity, Severity::Error);
        assert!(d.summary.contains("https://203.0.113.10:6443") && d.summary.contains("cluster CA"), "{}", d.summary);
        assert!(d.detail.contains("UnknownIssuer") && d.detail.contains("set `api_server_ca`"), "{}", d.detail);
        let d = tls_verdict(&endpoint("the CA in `api_server_ca`"), untrusted()).unwrap();
        assert_eq!(d.attribute, Some(AttributePath::root("api_server_ca")));
        let d =
            tls_verdict(&cluster_ca, Err(crate::kube::probe::TlsProbeError::Unreachable("refused".into()))).unwrap();
        assert_eq!(d.severity, Severity::Warning, "unreachable from here may still work from the consumer");
        assert!(tls_verdict(&cluster_ca, Ok(())).is_none());
    }

    #[test]
    fn server_change_keeps_the_certificate() {
        let prior = applied_state("2030-12-01T00:00:00Z");
        let mut proposed = prior.clone();
        proposed.set("api_server_url", Value::string("https://milan.example.com:6443"));
        let p = plan_change(
            &prior,
            &proposed,
            &config(&[("api_server_url", Value::string("https://milan.example.com:6443"))]),
            now(),
        );
        assert!(p.planned.get("cluster_ca_certificate").is_unknown());
        assert_eq!(p.planned.get("client_certificate"), prior.get("client_certificate"));
    }

    /// After an import or an upgrade from 0.2.0 nothing but the certificate (and the CA, URL and CSR it records)
    /// changes.
    #[test]
    fn after_import_only_the_certificate_changes() {
        let mut imported = applied_state("ignored");
        for attr in ["csr", "client_certificate", "cluster_ca_certificate", "certificate_expires_at"] {
            imported.set(attr, Value::Null);
        }
        let mut proposed = imported.clone();
        proposed.set("csr", Value::string(csr_for("rome")));
        let p = plan_change(&imported, &proposed, &config(&[]), now());
        assert!(p.requires_replace.is_empty());
        let mut expected = proposed.clone();
        for attr in ["client_certificate", "cluster_ca_certificate", "certificate_expires_at"] {
            expected.set(attr, Value::Unknown);
        }
        assert_eq!(p.planned, expected);
    }

    /// 0.2.0 kept the consumer's private key in `kubeconfig`: the upgrade drops it.
    #[test]
    fn upgrading_0_2_0_state_drops_the_kubeconfig() {
        let resource = TenantResource::new(Arc::new(ClusterApi::default()));
        let old = serde_json::json!({"id": "liqo-tenant-rome/rome", "kubeconfig": "users: [{user: {client-key-data: S0VZ}}]"});
        let upgraded = resource.upgrade(0, old).unwrap();
        assert_eq!(upgraded, serde_json::json!({"id": "liqo-tenant-rome/rome"}));
        assert!(resource.upgrade(1, upgraded.clone()).is_ok());
        assert!(resource.upgrade(7, upgraded).is_err());
    }

    /// A Tenant from `liqoctl peer`: Liqo minted the consumer's identity, so no plan ever issues credentials,
    /// not even when its certificate nears expiry (Liqo renews it) or the inert settings change.
    #[test]
    fn a_handshake_tenant_never_gets_credentials_issued() {
        let mut imported = applied_state("2030-01-02T00:00:00Z");
        imported.set("client_certificate", Value::Null);
        imported.set("cluster_ca_certificate", Value::Null);
        imported.set("authz_policy", Value::string(AUTHZ_POLICY_KEYS_EXCHANGE));
        let generated = config(&[
            ("tenant_condition", Value::string("Active")),
            ("api_server_url", Value::string("https://127.0.0.1:6443")),
            ("certificate_validity", Value::string("8760h")),
            ("renew_before", Value::string("720h")),
        ]);
        let p = plan_change(&imported, &imported, &generated, now());
        assert_eq!(p.planned, imported, "the generated configuration plans no change");
        let mut moved = imported.clone();
        moved.set("api_server_url", Value::string("https://milan.example.com:6443"));
        let p = plan_change(&imported, &moved, &generated, now());
        assert!(p.planned.get("client_certificate").is_null() && p.requires_replace.is_empty());
        assert!(p.planned.get("cluster_ca_certificate").is_null());
        let inputs = Inputs::from_value(&p.planned);
        assert_eq!(tenant_object(&inputs).spec.authz_policy.as_deref(), Some(AUTHZ_POLICY_KEYS_EXCHANGE));
        // A replacement is a new Tenant, made by this resource.
        let mut other = imported.clone();
        other.set("consumer_cluster_id", Value::string("naples"));
        other.set("csr", Value::string(csr_for("naples")));
        let p = plan_change(&imported, &other, &generated, now());
        assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
        assert!(!p.requires_replace.is_empty() && p.planned.get("client_certificate").is_unknown());
        assert_eq!(p.planned.get("authz_policy").as_str(), Some(AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE));
    }

    #[test]
    fn objects_carry_liqo_labels_and_no_controller_fields() {
        let inputs = Inputs::from_value(&config(&[("tenant_condition", Value::string("Cordoned"))]));
        let t = serde_json::to_value(tenant_object(&inputs)).unwrap();
        assert_eq!(t["apiVersion"], "authentication.liqo.io/v1beta1");
        assert_eq!(t["metadata"]["name"], "rome");
        assert_eq!(t["metadata"]["namespace"], "liqo-tenant-rome");
        assert_eq!(t["metadata"]["labels"]["liqo.io/remote-cluster-id"], "rome");
        assert_eq!(
            t["spec"],
            serde_json::json!({"clusterID": "rome", "authzPolicy": "TolerateNoHandshake", "tenantCondition": "Cordoned"})
        );
        assert!(t.get("status").is_none(), "status belongs to Liqo");

        let rb = serde_json::to_value(role_binding(&inputs, "liqo-remote-controlplane")).unwrap();
        assert_eq!(rb["metadata"]["name"], "liqo-binding-liqo-remote-controlplane");
        assert_eq!(rb["metadata"]["labels"]["liqo.io/remote-cluster-id"], "rome");
        assert_eq!(
            rb["roleRef"],
            serde_json::json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "liqo-remote-controlplane"})
        );
        assert_eq!(
            rb["subjects"],
            serde_json::json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "rome"}])
        );
        let rb = role_binding(&inputs, "liqo-remote-controlplane");
        assert!(binds_consumer(&rb, "rome", "liqo-remote-controlplane"));
        assert!(!binds_consumer(&rb, "naples", "liqo-remote-controlplane"));
        assert!(!binds_consumer(&rb, "rome", "other-remote-controlplane"));
    }

    /// Liqo finds the control-plane role by label, and its name follows the Helm release's nameOverride: a renamed
    /// installation gets a binding to its own role, named the way Liqo names it.
    #[test]
    fn the_control_plane_role_is_the_one_labelled_for_liqo() {
        assert_eq!(control_plane_role_selector(), "app.kubernetes.io/name=remote-controlplane");
        let role = pick_control_plane_role(vec!["acme-remote-controlplane".into()]).unwrap();
        let inputs = Inputs::from_value(&config(&[]));
        let rb = role_binding(&inputs, &role);
        assert_eq!(rb.metadata.name.as_deref(), Some("liqo-binding-acme-remote-controlplane"));
        assert_eq!(rb.role_ref.name, "acme-remote-controlplane");

        let (reason, hint) = pick_control_plane_role(vec![]).unwrap_err();
        assert!(reason.contains("No ClusterRole") && reason.contains("app.kubernetes.io/name=remote-controlplane"));
        assert!(hint.contains("Install or repair Liqo"), "{hint}");
        let (reason, hint) =
            pick_control_plane_role(vec!["b-remote-controlplane".into(), "a-remote-controlplane".into()]).unwrap_err();
        assert!(
            reason.starts_with("2 ClusterRoles") && reason.contains("a-remote-controlplane, b-remote-controlplane")
        );
        assert!(hint.contains("exactly one"), "{hint}");
    }

    #[test]
    fn csr_asks_the_client_signer_for_the_requested_lifetime() {
        let name = csr_name("rome");
        assert!(name.starts_with("liqo-tenant-rome-") && name.len() == "liqo-tenant-rome-".len() + 8);
        assert_ne!(csr_name("rome"), csr_name("rome"));
        let csr = serde_json::to_value(csr_object(&name, "rome", "PEM", Duration::from_secs(3600))).unwrap();
        assert_eq!(csr["spec"]["signerName"], "kubernetes.io/kube-apiserver-client");
        assert_eq!(csr["spec"]["usages"], serde_json::json!(["digital signature", "key encipherment", "client auth"]));
        assert_eq!(csr["spec"]["expirationSeconds"], 3600);
        let labels = &csr["metadata"]["labels"];
        let selector: Vec<String> = csr_selector("rome").split(',').map(str::to_string).collect();
        for term in selector {
            let (k, v) = term.split_once('=').unwrap();
            assert_eq!(labels[k], v, "the selector finds the CSR");
        }
    }

    #[test]
    fn csr_wait_reports_denial_and_returns_the_certificate() {
        use k8s_openapi::api::certificates::v1::{CertificateSigningRequestCondition, CertificateSigningRequestStatus};
        let mut csr = csr_object("n", "rome", "PEM", Duration::from_secs(3600));
        assert!(matches!(csr_issued(Some(&csr)), Verdict::Pending(s) if s.contains("not approved")));
        let cond = |t: &str| CertificateSigningRequestCondition {
            type_: t.into(),
            status: "True".into(),
            reason: Some("Policy".into()),
            ..Default::default()
        };
        csr.status =
            Some(CertificateSigningRequestStatus { conditions: Some(vec![cond("Denied")]), certificate: None });
        assert!(
            matches!(csr_issued(Some(&csr)), Verdict::Failed { reason, .. } if reason.contains("Denied") && reason.contains("Policy"))
        );
        csr.status = Some(CertificateSigningRequestStatus {
            conditions: Some(vec![cond("Approved")]),
            certificate: Some(ByteString(b"CERT".to_vec())),
        });
        assert!(matches!(csr_issued(Some(&csr)), Verdict::Ready(c) if c == b"CERT"));
    }

    #[test]
    fn tenant_wait_needs_our_namespace() {
        let inputs = Inputs::from_value(&config(&[]));
        let mut t = tenant_object(&inputs);
        assert!(matches!(tenant_ready(Some(&t), "liqo-tenant-rome", "rome", false), Verdict::Pending(_)));
        t.status = Some(liqo_schema::liqo::TenantStatus {
            tenant_namespace: Some("liqo-tenant-rome".into()),
            auth_params: None,
        });
        assert!(matches!(tenant_ready(Some(&t), "liqo-tenant-rome", "rome", false), Verdict::Ready(())));
        t.status =
            Some(liqo_schema::liqo::TenantStatus { tenant_namespace: Some("elsewhere".into()), auth_params: None });
        assert!(
            matches!(tenant_ready(Some(&t), "liqo-tenant-rome", "rome", false), Verdict::Failed { reason, .. } if reason.contains("elsewhere"))
        );
    }

    /// Liqo's tenant controller returns before writing status.tenantNamespace for a Drained Tenant: only its
    /// finalizer shows that Liqo has taken the Tenant, so that is what a Drained create waits for.
    #[test]
    fn drained_tenant_wait_needs_only_liqos_finalizer() {
        let inputs = Inputs::from_value(&config(&[("tenant_condition", Value::string("Drained"))]));
        let mut t = tenant_object(&inputs);
        assert!(
            matches!(tenant_ready(Some(&t), "liqo-tenant-rome", "rome", true), Verdict::Pending(s) if s.contains("tenant.liqo.io/finalizer"))
        );
        t.metadata.finalizers = Some(vec![labels::TENANT_FINALIZER.to_string()]);
        assert!(t.status.is_none(), "what Liqo leaves on a Drained Tenant: no status");
        assert!(matches!(tenant_ready(Some(&t), "liqo-tenant-rome", "rome", true), Verdict::Ready(())));
        assert!(matches!(tenant_ready(Some(&t), "liqo-tenant-rome", "rome", false), Verdict::Pending(_)));
    }

    #[test]
    fn drain_waits_for_live_slices_only() {
        let mut rs = ResourceSlice::new("s1", Default::default());
        assert!(matches!(slices_drained(&[]), Verdict::Ready(())));
        assert!(matches!(slices_drained(std::slice::from_ref(&rs)), Verdict::Pending(s) if s.contains("s1")));
        rs.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()));
        assert!(matches!(slices_drained(&[rs]), Verdict::Ready(())));
    }

    /// What `liqoctl peer` leaves on the provider: a KeysExchange Tenant with the consumer's Ed25519 CSR (Liqo's
    /// key type) and the certificate Liqo signed. Import records Liqo's CSR as `csr` and no certificate of ours;
    /// the configuration generated from that state validates and plans no change.
    #[test]
    fn a_handshake_tenant_imports_with_liqos_csr_and_plans_empty() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        let mut params = rcgen::CertificateParams::default();
        let mut dn = rcgen::DistinguishedName::new();
        dn.push(rcgen::DnType::CommonName, "rome");
        dn.push(rcgen::DnType::OrganizationName, labels::CONTROL_PLANE_ORGANIZATION);
        params.distinguished_name = dn;
        let csr = params.serialize_request(&key).unwrap().pem().unwrap();
        let mut tenant = Tenant::new(
            "rome",
            TenantSpec {
                cluster_id: Some("rome".into()),
                authz_policy: Some(AUTHZ_POLICY_KEYS_EXCHANGE.into()),
                csr: Some(k8s_openapi::ByteString(csr.clone().into_bytes())),
                ..TenantSpec::default()
            },
        );
        tenant.status = Some(liqo_schema::liqo::TenantStatus {
            tenant_namespace: Some("liqo-tenant-rome".into()),
            auth_params: Some(liqo_schema::liqo::AuthParams {
                api_server: Some("https://milan:6443".into()),
                ..Default::default()
            }),
        });
        let imported = handshake_state(&tenant, "liqo-tenant-rome", "rome", TENANT_CONDITION_ACTIVE.into());
        assert_eq!(imported.get("csr").as_str(), Some(csr.as_str()));
        assert!(imported.get("client_certificate").is_null() && imported.get("cluster_ca_certificate").is_null());
        // What `-generate-config-out` writes: the state without its computed-only attributes.
        let mut generated = imported.clone();
        for computed in ["id", "client_certificate", "cluster_ca_certificate", "certificate_expires_at", "authz_policy"]
        {
            generated.set(computed, Value::Null);
        }
        assert!(validate(&generated).is_empty(), "{:?}", validate(&generated));
        let p = plan_change(&imported, &imported, &generated, now());
        assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
        assert_eq!(p.planned, imported, "the generated configuration plans no change");
    }

    #[test]
    fn import_ids_are_namespace_slash_consumer() {
        assert_eq!(parse_import_id("liqo-tenant-rome/rome").unwrap(), ("liqo-tenant-rome".into(), "rome".into()));
        for bad in ["rome", "a/b/c", "/rome", "ns/Rome", ""] {
            let e = parse_import_id(bad).unwrap_err();
            assert!(e.detail.contains("<tenant_namespace>/<consumer cluster id>"), "{bad}: {e:?}");
        }
    }

    #[test]
    fn api_server_urls() {
        use crate::validate::check_api_server_url;
        for ok in ["https://10.0.0.1:6443", "https://api.example.com", "https://[::1]:6443", "https://h:443/prefix"] {
            assert_eq!(check_api_server_url(ok), Ok(()), "{ok}");
        }
        for bad in [
            "10.0.0.1:6443",
            "http://h:6443",
            "https://",
            "https://h:99999",
            "https://h:x",
            "https://u@h:1",
            "https://[::1",
            "https://::1:6443",
        ] {
            assert!(check_api_server_url(bad).is_err(), "{bad}");
        }
    }
}
