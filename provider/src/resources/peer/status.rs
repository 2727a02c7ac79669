//! Verdicts on what Liqo reports while an apply waits: the ResourceSlice's conditions and grant. Pure functions of
//! the objects, so every verdict is unit-tested. The VirtualNode and its Node are awaited as `liqo_virtual_node`
//! awaits its own (`resources::shared::virtual_node_wait`).
use std::collections::BTreeMap;
use std::time::Duration;

use liqo_schema::liqo::{
    RESOURCE_SLICE_CONDITION_AUTHENTICATION, RESOURCE_SLICE_CONDITION_RESOURCES, RESOURCE_SLICE_DENIED, ResourceSlice,
};

use super::schema::attr;
use crate::kube::Verdict;
use crate::quantity;

fn condition_summary(rs: &ResourceSlice) -> String {
    let status = rs.status.as_ref();
    let show = |t: &str| {
        status.and_then(|s| s.condition(t)).map(|c| c.status.clone()).unwrap_or_else(|| "not reported".into())
    };
    format!(
        "Authentication = {}, Resources = {}",
        show(RESOURCE_SLICE_CONDITION_AUTHENTICATION),
        show(RESOURCE_SLICE_CONDITION_RESOURCES)
    )
}

fn denied_hint(condition: &str, peer: &attr::Peer) -> String {
    if condition == RESOURCE_SLICE_CONDITION_AUTHENTICATION {
        format!(
            "The provider cluster `{}` did not accept this consumer's credentials for the slice. Check that the \
             liqo_tenant for this consumer exists in the provider's tenant namespace `{}`, that this namespace is \
             labelled for this consumer cluster, and that the provider runs Liqo 1.0.3 or later (1.0.2 denies \
             slices of TolerateNoHandshake tenants). Then run apply again.",
            peer.provider(),
            peer.provider_tenant_namespace.as_deref().unwrap_or_default()
        )
    } else {
        format!(
            "The provider cluster `{}` refused the requested resources: its Tenant for this consumer may be \
             Cordoned or Drained (liqo_tenant `tenant_condition`), or the controller of ResourceSlice class `{}` \
             declined the request. Fix that (or ask for less), then run apply again.",
            peer.provider(),
            peer.class.as_deref().unwrap_or_default()
        )
    }
}

/// How long the wait goes on through `Authentication=Denied` once it has failed on it ([`OnAuthDenial::Wait`]).
/// Liqo's provider writes that denial also when forging the slice's credentials fails on an error it retries
/// (`remoteresourceslice_controller.go`: `AuthParamsFailed`, same reason `ResourceSliceAuthenticationDenied`; seen
/// on a loaded machine right after a tenant namespace was made anew: a Secret its cache did not hold yet), and its
/// next reconcile accepts the slice; `liqoctl peer` waits through any denial. Its other denials (an invalid CSR,
/// the slice in another tenant's namespace) stay, and fail this long later.
pub const AUTHENTICATION_DENIAL_GRACE: Duration = Duration::from_secs(20);

/// What [`slice_check`] makes of `Authentication=Denied` (`Resources=Denied`, a Cordoned or Drained tenant,
/// always fails: Liqo writes it without retrying).
#[derive(Clone, Copy)]
pub enum OnAuthDenial {
    Fail,
    /// Keep waiting: see [`AUTHENTICATION_DENIAL_GRACE`].
    Wait,
}

/// Slice accepted (and, for the built-in class, granting the current request) → the granted resources.
pub fn slice_check(
    rs: Option<&ResourceSlice>,
    peer: &attr::Peer,
    on_auth_denial: OnAuthDenial,
) -> Verdict<BTreeMap<String, String>> {
    let Some(rs) = rs else {
        return Verdict::Pending("the ResourceSlice does not exist".into());
    };
    let status = rs.status.clone().unwrap_or_default();
    for t in [RESOURCE_SLICE_CONDITION_AUTHENTICATION, RESOURCE_SLICE_CONDITION_RESOURCES] {
        if let Some(c) = status.condition(t).filter(|c| c.status == RESOURCE_SLICE_DENIED) {
            let reason = format!(
                "Condition {t} is Denied (reason: {}; message: {}).",
                c.reason.as_deref().unwrap_or("none given"),
                c.message.as_deref().unwrap_or("none given")
            );
            if t == RESOURCE_SLICE_CONDITION_AUTHENTICATION && matches!(on_auth_denial, OnAuthDenial::Wait) {
                return Verdict::Pending(format!("{reason} Liqo retries some denials; waiting for it to clear"));
            }
            return Verdict::Failed { reason, hint: denied_hint(t, peer) };
        }
    }
    if !status.is_accepted() {
        return Verdict::Pending(condition_summary(rs));
    }
    let granted: BTreeMap<String, String> =
        status.resources.iter().flatten().map(|(k, q)| (k.clone(), q.0.clone())).collect();
    if peer.grants_request() {
        for (key, wanted) in peer.resources.iter().flatten() {
            let got = granted.get(key);
            if !got.is_some_and(|g| quantity::same(g, wanted)) {
                return Verdict::Pending(format!(
                    "both conditions Accepted, but status.resources[{key}] is {} while {wanted} is requested \
                     (the provider has not processed the current request yet)",
                    got.map(|g| format!("`{g}`")).unwrap_or_else(|| "absent".into())
                ));
            }
        }
    }
    Verdict::Ready(granted)
}
