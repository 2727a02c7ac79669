//! Verdicts on what Kubernetes and Liqo report: the waits' checks (the published cluster CA, the signed
//! certificate, Liqo's adoption of the Tenant, the drain) and the judgement of the TLS check and of the lifetime
//! the cluster issued.
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::ConfigMap;
use liqo_schema::liqo::labels;
use liqo_schema::liqo::{Quota, ResourceSlice, Tenant};
use liqo_schema::tf::Diagnostic;
use std::time::Duration;
use time::OffsetDateTime;

use super::schema::attr;
use super::state::{Issued, rfc3339};
use crate::kube::Verdict;
use crate::kube::probe::TlsProbeError;

/// Data key of the cluster CA in ConfigMap `kube-root-ca.crt`.
pub const ROOT_CA_KEY: &str = "ca.crt";

/// Where and how the consumer reaches this cluster.
pub struct Endpoint {
    pub server: String,
    pub ca_pem: Vec<u8>,
    /// Where `ca_pem` came from, for messages.
    pub ca_source: String,
}

/// The outcome of checking that the consumer will trust `api_server_url`: an error when the URL answers with a
/// certificate the CA does not verify (the peering would silently never form), a warning when it cannot be reached
/// from here (it may still be reachable from the consumer's network, which is what matters).
pub fn tls_verdict(endpoint: &Endpoint, probe: Result<(), TlsProbeError>) -> Option<Diagnostic> {
    let (server, ca) = (&endpoint.server, &endpoint.ca_source);
    match probe {
        Ok(()) => None,
        Err(TlsProbeError::Untrusted(why)) => Some(
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
            .at(if ca.contains("api_server_ca") { attr::api_server_ca } else { attr::api_server_url }.path()),
        ),
        Err(TlsProbeError::Unreachable(why)) => Some(
            Diagnostic::warning(
                format!("Could not check {server} from here"),
                format!(
                    "{why}. The certificate was issued without checking that api_server_url {server} answers with a \
                     certificate {ca} verifies. The consumer cluster must reach that URL and trust that CA; if it is \
                     reachable only from the consumer's network, check it from there."
                ),
            )
            .at(attr::api_server_url.path()),
        ),
    }
}

/// Wait check on the tenant namespace's `kube-root-ca.crt`: the cluster CA once kube-controller-manager has
/// published it.
pub fn root_ca_published(cm: Option<&ConfigMap>) -> Verdict<Vec<u8>> {
    match cm.and_then(|c| c.data.as_ref()).and_then(|d| d.get(ROOT_CA_KEY)).filter(|ca| !ca.is_empty()) {
        Some(ca) => Verdict::Ready(ca.clone().into_bytes()),
        None => Verdict::Pending("not published yet".into()),
    }
}

/// Wait check on a CSR: the certificate once issued; Denied/Failed stop the wait with the signer's reason.
pub fn csr_issued(csr: Option<&CertificateSigningRequest>) -> Verdict<Vec<u8>> {
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
pub fn tenant_ready(tenant: Option<&Tenant>, namespace: &str, consumer: &str, drained: bool) -> Verdict<()> {
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
pub fn slices_drained(slices: &[ResourceSlice]) -> Verdict<()> {
    let live: Vec<&str> =
        slices.iter().filter(|s| !crate::kube::is_terminating(*s)).filter_map(|s| s.metadata.name.as_deref()).collect();
    if live.is_empty() {
        Verdict::Ready(())
    } else {
        Verdict::Pending(format!("ResourceSlice(s) {} not deleted by Liqo yet", live.join(", ")))
    }
}

/// A warning when the cluster issued a certificate so short-lived that every plan would renew it.
pub fn capped(issued: &Issued, renew: Duration) -> Option<Diagnostic> {
    (OffsetDateTime::now_utc() + renew >= issued.expires_at).then(|| {
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
        .at(attr::renew_before.path())
    })
}

/// Liqo has followed each cordon change: the Quota its quota creator keeps for each changed slice (owned by it)
/// says `cordoned` as Liqo's rule does for the slice now (its own cordon or its tenant's). A slice without a
/// Quota (its resources not accepted yet) has nothing to enforce: Liqo makes the Quota from the slice as it is.
pub fn quotas_follow(quotas: &[Quota], changes: &[(String, bool)], slices: &[ResourceSlice]) -> Verdict<()> {
    let lagging: Vec<String> = changes
        .iter()
        .filter_map(|(name, cordoned)| {
            let tenant_cordon =
                slices.iter().find(|s| s.metadata.name.as_ref() == Some(name)).is_some_and(|s| s.cordons().1);
            let want = *cordoned || tenant_cordon;
            let quota = quotas.iter().find(|q| {
                q.metadata.owner_references.iter().flatten().any(|o| o.kind == "ResourceSlice" && &o.name == name)
            })?;
            let is = quota.spec.cordoned.unwrap_or(false);
            (is != want).then(|| {
                format!(
                    "Quota {} of ResourceSlice {name}: cordoned {is}, {want} expected",
                    quota.metadata.name.as_deref().unwrap_or("")
                )
            })
        })
        .collect();
    if lagging.is_empty() { Verdict::Ready(()) } else { Verdict::Pending(lagging.join("; ")) }
}
