//! `liqo_tenant`'s attributes, their defaults and limits, and its plan-time checks.
use std::collections::BTreeSet;
use std::time::Duration;

use liqo_schema::liqo::labels;
use liqo_schema::liqo::{
    AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE, TENANT_CONDITION_ACTIVE, TENANT_CONDITION_CORDONED, TENANT_CONDITION_DRAINED,
};
use liqo_schema::tf::{Type, Value};

use crate::crypto;
use crate::resources::lifecycle::Declared;
use crate::validate::{Validator, parse_duration};

/// 1: `kubeconfig` (with the consumer's private key) replaced by `csr` → `client_certificate`.
pub const SCHEMA_VERSION: i64 = 1;
pub const DEFAULT_CERTIFICATE_VALIDITY: &str = "8760h";
pub const DEFAULT_RENEW_BEFORE: &str = "720h";
/// Kubernetes rejects CSRs asking for less (`spec.expirationSeconds` minimum).
pub const MIN_CERTIFICATE_VALIDITY: Duration = Duration::from_secs(600);
/// Kubernetes' signer backdates certificates by 5 minutes (taken from the lifetime), so a renewal window closer
/// than this to the lifetime would make every new certificate due for renewal at once.
const RENEWAL_MARGIN: Duration = Duration::from_secs(600);
/// `spec.expirationSeconds` is an int32.
const MAX_CERTIFICATE_VALIDITY: Duration = Duration::from_secs(i32::MAX as u64);
const SLICE_FIX: &str = "Give the name of one of the consumer's ResourceSlices: its liqo_peer's `resource_slice_name` (`kubectl get resourceslices -n <tenant_namespace>` on this cluster lists them).";
const TENANT_CONDITIONS: [&str; 3] = [TENANT_CONDITION_ACTIVE, TENANT_CONDITION_CORDONED, TENANT_CONDITION_DRAINED];

/// `liqo_tenant`'s attributes.
pub mod attr {
    use super::*;
    use crate::attributes::*;

    attributes! {
        struct Tenant;
        id: Unset = computed(Type::String)
            .describe("`<tenant_namespace>/<consumer_cluster_id>`: namespace and name of the Tenant (the import ID).");
        tenant_namespace: String = required(Type::String).replace_on_change().check(Check::Namespace).describe(
            "Namespace on this (provider) cluster dedicated to the consumer, usually `liqo_generate`'s \
             `tenant_namespace` output. It must already exist and carry the labels `liqo.io/tenant-namespace=true` \
             and `liqo.io/remote-cluster-id=<consumer_cluster_id>`; this resource does not create it. Changing it \
             replaces the resource (and mints new credentials).",
        );
        consumer_cluster_id: String = required(Type::String).replace_on_change().check(Check::ClusterId).describe(
            "Liqo cluster ID of the consumer cluster (e.g. `liqo_generate.rome.cluster_id`). It names the Tenant and is \
             the user name (certificate CN) the consumer authenticates as. Changing it replaces the resource.",
        );
        tenant_condition: String = optional_computed(Type::String).default(Value::string(TENANT_CONDITION_ACTIVE)).check(Check::OneOf(&TENANT_CONDITIONS)).describe(
            "`Active` (default), `Cordoned` (existing ResourceSlices keep their resources, new ones are denied) or \
             `Drained` (the consumer's RoleBinding is removed and Liqo deletes its ResourceSlices and NamespaceMaps). \
             Updated in place.",
        );
        cordoned_resource_slices: Option<BTreeSet<String>> = optional(Type::set(Type::String))
            .check(Check::ObjectName { kind: "ResourceSlice", fix: SLICE_FIX })
            .describe(
            "Names of the consumer's ResourceSlices to cordon on this cluster, as `liqoctl cordon resourceslice` \
             does: each gets the annotation `liqo.io/cordon=true`, Liqo marks its Quota cordoned, and Liqo's webhook \
             refuses new pods of that slice while its running pods and the consumer's other slices carry on. A name \
             taken out of the set is uncordoned (`liqoctl uncordon resourceslice`). The slices exist only once the \
             consumer's `liqo_peer` made them, after this resource, so the set is for an existing tenant: leave it \
             out when the tenant is created. Unset, cordons made with liqoctl are left alone; set (even to `[]`), it \
             is the set of the consumer's cordoned slices, and one cordoned out of band shows as drift. Updated in \
             place.",
        );
        proxy_url: Option<String> = optional(Type::String).check(Check::ProxyUrl).describe(
            "URL of an HTTP proxy through which the consumer's Liqo reaches this cluster's API server, e.g. \
             `http://proxy.example.com:8118` (`liqoctl peer --proxy-url`; the Tenant's `spec.proxyURL`): Liqo gives \
             it to the consumer in the credentials of every ResourceSlice, so its virtual kubelets connect through \
             it; pass the same URL to `liqo_peer.proxy_url` for the consumer's control plane. Updated in place: \
             credentials Liqo issues from then on carry the new URL.",
        );
        api_server_url: Option<String> = optional_computed(Type::String).check(Check::ApiServerUrl("Give the address the consumer cluster uses to reach this cluster's API server, e.g. `https://203.0.113.10:6443`.")).describe(
            "URL of this cluster's API server as the consumer cluster's control plane (its crd-replicator) reaches \
             it (`https://host:port`), for `liqo_peer.api_server_url`. Defaults to the address the provider block uses, \
             recorded when the resource is created. It must serve a certificate that `api_server_ca` verifies for \
             its host; apply checks that from where Terraform runs. It does not change the address Liqo's virtual \
             kubelet uses: that one comes from the provider cluster's Liqo installation (Helm `apiServer.address`, \
             `--api-server-address-override`, else the first control-plane node's address on port 6443). Changing \
             it updates `liqo_peer` in place with the same certificate.",
        );
        api_server_ca: Option<String> = optional(Type::String).check(Check::CaBundle("Give the PEM certificate(s) (`-----BEGIN CERTIFICATE-----` …) of the CA that signed the certificate served at `api_server_url`, e.g. `file(\"proxy-ca.pem\")`, or remove it to use the cluster CA.")).describe(
            "PEM CA certificate(s) the consumer uses to verify `api_server_url` (output as `cluster_ca_certificate`). Defaults \
             to this cluster's CA (the `kube-root-ca.crt` ConfigMap of the tenant namespace). Set it when \
             `api_server_url` is a proxy, load balancer or port-forward whose certificate that CA did not sign (the \
             counterpart of Liqo's Helm value `apiServer.ca`, `--ca-override`). Apply checks that `api_server_url` \
             answers TLS with a certificate this CA verifies for that host, and fails naming both otherwise. \
             Changing it updates `liqo_peer` in place with the same certificate.",
        );
        csr: Option<String> = required(Type::String).describe(
            "The consumer's PEM certificate signing request, `liqo_consumer_key.<name>.csr`: made on the consumer \
             cluster, whose private key never leaves it. Its common name must be `consumer_cluster_id` and its \
             organization `liqo.io` (what Liqo requires of control-plane users); the signature is checked at plan \
             time. A new CSR (a rotated key) is signed in place.",
        );
        certificate_validity: String = optional_computed(Type::String).default(Value::string(DEFAULT_CERTIFICATE_VALIDITY)).check(Check::Duration).describe(
            "Requested lifetime of the consumer's client certificate, as a duration (default `8760h`, at least `10m`), \
             sent as the CSR's `expirationSeconds`. The cluster may issue a shorter one (kube-controller-manager \
             `--cluster-signing-duration`); `certificate_expires_at` shows what was issued. Changing it mints a new \
             certificate in place.",
        );
        renew_before: String = optional_computed(Type::String).default(Value::string(DEFAULT_RENEW_BEFORE)).check(Check::Duration).describe(
            "How long before `certificate_expires_at` the plan proposes a new certificate (default `720h`; at least \
             `10m` shorter than `certificate_validity`). Renewal happens on the next `terraform apply` after that point: \
             Liqo does not renew certificates it did not issue.",
        );
        client_certificate: Value = computed(Type::String).output().describe(
            "PEM client certificate this cluster issued for `csr` (public; the key stays on the consumer). Pass it \
             to `liqo_peer.client_certificate`.",
        );
        cluster_ca_certificate: Value = computed(Type::String).describe(
            "PEM CA the consumer trusts for `api_server_url`: `api_server_ca`, else this cluster's CA. Pass it to \
             `liqo_peer.cluster_ca_certificate`.",
        );
        certificate_expires_at: Option<String> = computed(Type::String).output()
            .describe("Expiry of `client_certificate` (RFC 3339, UTC).");
        // A state from before `authz_policy` existed is of a Tenant this resource created, and so is every plan
        // but a handshake Tenant's (`plan::refine`).
        authz_policy: String = computed(Type::String).default(Value::string(AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE)).describe(
            "The Tenant's `authzPolicy`: `TolerateNoHandshake` when this resource created it and signs the \
             consumer's `csr`; `KeysExchange` when it was imported from Liqo's authentication handshake \
             (`liqoctl peer`). Liqo signed that consumer's certificate and renews it itself, so this resource never \
             signs anything for it: `csr` is the CSR Liqo's handshake exchanged, `client_certificate` and \
             `cluster_ca_certificate` stay null (the consumer's `liqo_peer` keeps Liqo's identity), \
             `certificate_expires_at` is the expiry of Liqo's certificate, and `csr`, `certificate_validity`, \
             `renew_before`, `api_server_url` and `api_server_ca` have no effect.",
        );
    }
}

pub const DESCRIPTION: &str = "Authenticates a consumer cluster on this provider cluster (Liqo declarative peering, authentication \
             module): signs the consumer's certificate signing request through the Kubernetes CSR API (only public \
             data crosses the clusters: the CSR, the certificate, the CA and the URL), grants it Liqo's \
             control-plane ClusterRole (the one labelled `app.kubernetes.io/name=remote-controlplane`, \
             `liqo-remote-controlplane` by default) in the tenant namespace and creates the Tenant \
             (`authzPolicy: TolerateNoHandshake`). Use it with the provider block of the **provider** cluster.";

/// The CSR against the consumer it names, and the certificate lifetime against its renewal window.
pub fn validate(c: &mut Validator<'_>) {
    let config = attr::Tenant::of(c.config);
    // An unknown consumer ID reads as "", which is no DNS label either.
    let consumer = Some(config.consumer_cluster_id.as_str()).filter(|id| crate::validate::check_dns_label(id).is_ok());
    if let Some(csr) = &config.csr
        // An invalid consumer ID has its own error; comparing the CSR with it would only add noise.
        && let Err((summary, detail)) = check_csr(csr, consumer)
    {
        c.error(attr::csr.path(), summary, detail);
    }
    // Cross-field rules on the effective values (defaults when unset); unknown values are checked at the next plan.
    let validity = config.lifetime();
    let renew = config.renewal_window();
    let validity_in_range =
        validity.is_some_and(|v| (MIN_CERTIFICATE_VALIDITY..=MAX_CERTIFICATE_VALIDITY).contains(&v));
    if let Some(v) = validity.filter(|_| !validity_in_range) {
        c.error(
            attr::certificate_validity.path(),
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
            attr::renew_before.path(),
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
}

/// What the durations and the condition stand for. A duration is `None` when unknown (it reads as "") or invalid.
impl attr::Tenant {
    /// The requested lifetime of the certificate (`certificate_validity`).
    pub fn lifetime(&self) -> Option<Duration> {
        parse_duration(&self.certificate_validity).ok()
    }

    /// How long before its expiry a certificate is renewed (`renew_before`).
    pub fn renewal_window(&self) -> Option<Duration> {
        parse_duration(&self.renew_before).ok()
    }

    pub fn drained(&self) -> bool {
        self.tenant_condition == TENANT_CONDITION_DRAINED
    }
}

/// A CSR Liqo accepts for a control-plane user: self-signed by its key, `CN=<consumer>` (when known), `O=liqo.io`
/// (Liqo's `CheckCSRForControlPlane`). Checked before anything is written, since Kubernetes would sign any CSR.
pub fn check_csr(csr: &str, consumer: Option<&str>) -> Result<(), (String, String)> {
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

/// What `liqo_tenant` declares to the lifecycle driver.
pub const DECLARED: Declared = Declared {
    description: DESCRIPTION,
    attributes: attr::declared,
    validate,
    rules: super::plan::RULES,
    version: SCHEMA_VERSION,
};
