//! `liqo_tenant`'s plan: a new namespace or consumer is a new Tenant; the certificate is minted again when the CSR,
//! its lifetime or its renewal window says so, the CA when the URL or CA it is for changes. No API calls.
use std::time::Duration;

use liqo_schema::liqo::AUTHZ_POLICY_KEYS_EXCHANGE;
use liqo_schema::tf::{Diagnostic, Value};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::schema::attr;
use super::schema::check_csr;
use crate::attributes::Key;
use crate::resources::lifecycle::{Plan, PlanRules};
use crate::validate::parse_duration;

/// Tenant.spec.clusterID is immutable, and the credentials' CN and RoleBinding belong to one namespace.
/// `cluster_ca_certificate` is not a rule output: it is the cluster's CA, not the Tenant's, so a replacement on the
/// same cluster keeps it (see [`refine`]).
pub const RULES: PlanRules = PlanRules { repair_missing_in_place: false, defaults, refine };

pub fn defaults(plan: &mut Plan) {
    // The provider block's address is only resolved at apply; once recorded it stays (proposed carries it over).
    if plan.planned.get(attr::api_server_url).is_null() {
        plan.planned.set(attr::api_server_url, Value::Unknown);
    }
}

/// The derived `id`, the CSR check, and what a certificate and a CA depend on beyond the rules: renewal is decided
/// here, against the clock.
pub fn refine(plan: &mut Plan) {
    // Read where an unknown value means what a null one does: no CSR, no slices, no duration. Not the consumer ID,
    // which would read as "": an unknown one is not compared.
    let planned = attr::Tenant::of(&plan.planned);
    let prior = attr::Tenant::of(plan.prior);
    // A CSR known at plan time is checked against the consumer here too: validation may have seen either unknown.
    if let Some(csr) = &planned.csr
        && let Err((summary, detail)) = check_csr(csr, plan.planned.get(attr::consumer_cluster_id).as_str())
    {
        plan.diagnostics.push(Diagnostic::error(summary, detail).at(attr::csr.path()));
        // An invalid CSR leaves nothing to plan: no planned state (the replace paths still show what would change).
        plan.planned = Value::Null;
        return;
    }
    // The consumer's ResourceSlices are made by its liqo_peer, which depends on this resource: a new tenant has none.
    if plan.fresh() && planned.cordoned_resource_slices.as_ref().is_some_and(|slices| !slices.is_empty()) {
        plan.diagnostics.push(
            Diagnostic::error(
                "`cordoned_resource_slices` needs an existing tenant",
                "The consumer's ResourceSlices are made by its liqo_peer, which depends on this tenant, so none \
                 exists while the tenant is created (or replaced). Apply without `cordoned_resource_slices` first, \
                 then add the slices to cordon.",
            )
            .at(attr::cordoned_resource_slices.path()),
        );
        plan.planned = Value::Null;
        return;
    }
    // A Tenant imported from Liqo's handshake keeps the identity Liqo minted: never sign anything for it. Any other
    // plan keeps `authz_policy`'s declared default (a Tenant this resource makes), a replacement's too.
    if plan.replace.is_empty() && prior.authz_policy == AUTHZ_POLICY_KEYS_EXCHANGE {
        plan.planned.set(attr::authz_policy, Value::string(AUTHZ_POLICY_KEYS_EXCHANGE));
        // Its address is Liqo's; an unrecorded one stays unrecorded.
        if plan.planned.get(attr::api_server_url).is_unknown() {
            plan.planned.set(attr::api_server_url, Value::opt_string(prior.api_server_url));
        }
        return;
    }
    let new_certificate = plan.fresh()
        // After an import or an upgrade from 0.2.0 there is no certificate for the configured CSR yet.
        || prior.client_certificate.is_null()
        || plan.changed(attr::csr)
        || duration_changed(plan.prior, &plan.planned, attr::certificate_validity)
        || renewal_due(prior.certificate_expires_at.as_deref(), planned.renewal_window(), OffsetDateTime::now_utc());
    if new_certificate {
        plan.recompute(attr::client_certificate);
        plan.recompute(attr::certificate_expires_at);
    }
    if plan.creating()
        || prior.cluster_ca_certificate.is_null()
        || plan.changed(attr::api_server_url)
        || plan.changed(attr::api_server_ca)
    {
        plan.recompute(attr::cluster_ca_certificate);
    }
}

/// A duration attribute changed meaning (not just spelling: `8760h` and `8760h0m0s` are the same).
fn duration_changed(prior: &Value, planned: &Value, key: Key) -> bool {
    let parse = |v: &Value| v.as_str().and_then(|s| parse_duration(s).ok());
    match (parse(prior.get(key)), parse(planned.get(key))) {
        (Some(a), Some(b)) => a != b,
        _ => prior.get(key) != planned.get(key),
    }
}

/// True when `now + renew_before` has reached the certificate's expiry (or either is not known).
fn renewal_due(expires_at: Option<&str>, renew: Option<Duration>, now: OffsetDateTime) -> bool {
    let expires = expires_at.and_then(|s| OffsetDateTime::parse(s, &Rfc3339).ok());
    match (expires, renew) {
        (Some(expires), Some(renew)) => now + renew >= expires,
        _ => true,
    }
}
