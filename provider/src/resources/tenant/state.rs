//! What `liqo_tenant`'s state records beyond its inputs: the certificate it had signed, and, on import, what the
//! Tenant found on the cluster tells (the import ID names it).
use liqo_schema::liqo::{AUTHZ_POLICY_KEYS_EXCHANGE, AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE, Tenant};
use liqo_schema::tf::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::schema::attr;
use super::schema::{DEFAULT_CERTIFICATE_VALIDITY, DEFAULT_RENEW_BEFORE};
use crate::crypto;

/// A signed client certificate.
pub struct Issued {
    pub cert_pem: Vec<u8>,
    pub expires_at: OffsetDateTime,
    pub csr_name: String,
}

pub fn set_certificate(state: &mut Value, issued: &Issued) {
    state.set(attr::client_certificate, Value::string(String::from_utf8_lossy(&issued.cert_pem)));
    state.set(attr::certificate_expires_at, Value::string(rfc3339(issued.expires_at)));
}

pub fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).expect("certificate times are within RFC 3339's range")
}

/// The state of a Tenant this resource made (`authzPolicy: TolerateNoHandshake`). The certificate and the CSR it was
/// signed for are not kept on the cluster (kube-controller-manager removes issued CSRs after an hour): null makes
/// the next plan sign the configured CSR, and nothing else.
pub fn imported_state(namespace: &str, consumer: &str, condition: String, api_server_url: Option<String>) -> Value {
    Value::object([
        (attr::tenant_namespace, Value::string(namespace)),
        (attr::consumer_cluster_id, Value::string(consumer)),
        (attr::tenant_condition, Value::string(condition)),
        (attr::cordoned_resource_slices, Value::Null),
        (attr::api_server_url, Value::opt_string(api_server_url)),
        // Not recoverable from the provider cluster (only the consumer's identity Secret holds it): the default.
        (attr::api_server_ca, Value::Null),
        (attr::certificate_validity, Value::string(DEFAULT_CERTIFICATE_VALIDITY)),
        (attr::renew_before, Value::string(DEFAULT_RENEW_BEFORE)),
        (attr::csr, Value::Null),
        (attr::client_certificate, Value::Null),
        (attr::cluster_ca_certificate, Value::Null),
        (attr::certificate_expires_at, Value::Null),
        (attr::authz_policy, Value::string(AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE)),
    ])
}

/// The state of a Tenant made by Liqo's authentication handshake (`liqoctl peer`): Liqo signed the consumer's
/// certificate (`status.authParams`) and renews it, so the state records Liqo's values (its CSR, public, as
/// `csr`) and no certificate of ours, and the plan never signs anything for it (`plan::refine`). The inert
/// credential settings keep their defaults.
pub fn handshake_state(tenant: &Tenant, namespace: &str, consumer: &str, condition: String) -> Value {
    let auth = tenant.status.as_ref().and_then(|s| s.auth_params.as_ref());
    let expires_at =
        auth.and_then(|a| a.signed_crt.as_ref()).and_then(|crt| crypto::not_after(&crt.0).ok()).map(rfc3339);
    Value::object([
        (attr::tenant_namespace, Value::string(namespace)),
        (attr::consumer_cluster_id, Value::string(consumer)),
        (attr::tenant_condition, Value::string(condition)),
        (attr::cordoned_resource_slices, Value::Null),
        (attr::api_server_url, Value::opt_string(auth.and_then(|a| a.api_server.clone()))),
        (attr::api_server_ca, Value::Null),
        (attr::certificate_validity, Value::string(DEFAULT_CERTIFICATE_VALIDITY)),
        (attr::renew_before, Value::string(DEFAULT_RENEW_BEFORE)),
        (attr::csr, Value::opt_string(tenant.spec.csr.as_ref().map(|c| String::from_utf8_lossy(&c.0).into_owned()))),
        (attr::client_certificate, Value::Null),
        (attr::cluster_ca_certificate, Value::Null),
        (attr::certificate_expires_at, Value::opt_string(expires_at)),
        (attr::authz_policy, Value::string(AUTHZ_POLICY_KEYS_EXCHANGE)),
    ])
}
