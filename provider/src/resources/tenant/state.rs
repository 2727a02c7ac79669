//! What `liqo_tenant`'s state records beyond its inputs: the certificate it had signed, and, on import, what the
//! Tenant found on the cluster tells (the import ID names it).
use liqo_schema::liqo::{AUTHZ_POLICY_KEYS_EXCHANGE, Tenant};
use liqo_schema::tf::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::schema::attr;
use crate::crypto;

/// A signed client certificate.
pub struct Issued {
    pub cert_pem: Vec<u8>,
    pub expires_at: OffsetDateTime,
    pub csr_name: String,
}

impl attr::Tenant {
    /// Records `issued` as the consumer's certificate.
    pub fn record_certificate(&mut self, issued: &Issued) {
        self.client_certificate = Value::string(String::from_utf8_lossy(&issued.cert_pem));
        self.certificate_expires_at = Some(rfc3339(issued.expires_at));
    }
}

pub fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).expect("certificate times are within RFC 3339's range")
}

/// The state of a Tenant this resource made (`authzPolicy: TolerateNoHandshake`, the declared default). The
/// certificate and the CSR it was signed for are not kept on the cluster (kube-controller-manager removes issued
/// CSRs after an hour): null makes the next plan sign the configured CSR, and nothing else. `api_server_ca` is not
/// recoverable from the provider cluster (only the consumer's identity Secret holds it): the default.
pub fn imported_state(
    namespace: &str,
    consumer: &str,
    condition: String,
    api_server_url: Option<String>,
) -> attr::Tenant {
    attr::Tenant {
        tenant_namespace: namespace.to_string(),
        consumer_cluster_id: consumer.to_string(),
        tenant_condition: condition,
        api_server_url,
        ..attr::Tenant::defaults()
    }
}

/// The state of a Tenant made by Liqo's authentication handshake (`liqoctl peer`): Liqo signed the consumer's
/// certificate (`status.authParams`) and renews it, so the state records Liqo's values (its CSR, public, as
/// `csr`) and no certificate of ours, and the plan never signs anything for it (`plan::refine`). The inert
/// credential settings keep their defaults.
pub fn handshake_state(tenant: &Tenant, namespace: &str, consumer: &str, condition: String) -> attr::Tenant {
    let auth = tenant.status.as_ref().and_then(|s| s.auth_params.as_ref());
    let expires_at =
        auth.and_then(|a| a.signed_crt.as_ref()).and_then(|crt| crypto::not_after(&crt.0).ok()).map(rfc3339);
    attr::Tenant {
        tenant_namespace: namespace.to_string(),
        consumer_cluster_id: consumer.to_string(),
        tenant_condition: condition,
        api_server_url: auth.and_then(|a| a.api_server.clone()),
        csr: tenant.spec.csr.as_ref().map(|c| String::from_utf8_lossy(&c.0).into_owned()),
        certificate_expires_at: expires_at,
        authz_policy: AUTHZ_POLICY_KEYS_EXCHANGE.to_string(),
        ..attr::Tenant::defaults()
    }
}
