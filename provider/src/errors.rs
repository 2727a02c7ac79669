//! The one place where failures become diagnostics. Each diagnostic names the object, what was expected, what
//! was seen (Liqo's reason and message when there is one) and the next step.
use crate::kube::{Holds, OpError};
use liqo_schema::tf::{Diagnostic, Diagnostics};

/// Turns an operation error into a user-facing diagnostic.
pub fn op_error(e: &OpError) -> Diagnostic {
    match e {
        OpError::Api { action, object, source } => api_error(action, object, source),
        OpError::Timeout { object, waiting_for, last_seen, after } => Diagnostic::error(
            format!("Timed out waiting for {object}"),
            format!(
                "Waited {} for {waiting_for}, which never came.\nLast seen: {last_seen}.\n\
                 Check that Liqo's controllers are running on this cluster and look at the object's events \
                 (kubectl describe), or raise the resource's `timeouts` if the cluster is just slow.",
                human(*after)
            ),
        ),
        OpError::Failed { object, reason, hint } => Diagnostic::error(
            format!("Liqo reported a failure on {object}"),
            format!("{reason}\n{hint}").trim_end().to_string(),
        ),
        OpError::Cancelled { object, waiting_for } => Diagnostic::error(
            "Operation cancelled",
            format!(
                "Stopped waiting for {object} ({waiting_for}) because Terraform was interrupted. Objects already \
                 written stay in place and are recorded in state where possible; run the same command again to resume."
            ),
        ),
        OpError::StuckDelete { object, holds, after } => stuck_delete(object, holds, *after),
        OpError::WaitsForUnreachablePeer { object, holds, peer, peer_seen } => {
            waits_for_unreachable_peer(object, holds, peer, peer_seen)
        }
    }
}

/// Import's refusal of one object a list resource found, as warnings: the object is left out of the list and the
/// rest of the list is still useful.
pub fn not_adoptable(type_name: &str, id: &str, refusal: Diagnostics) -> Diagnostics {
    Diagnostics(
        refusal
            .iter()
            .map(|d| {
                Diagnostic::warning(
                    format!("{type_name} {id:?} is not listed: it cannot be imported as it is"),
                    format!("{} {}", d.summary.trim_end_matches('.'), d.detail).trim_end().to_string(),
                )
            })
            .collect(),
    )
}

/// A delete that did not finish: what holds the object (from the object itself) and the next step for each cause.
fn stuck_delete(object: &str, holds: &Holds, after: std::time::Duration) -> Diagnostic {
    let mut detail = format!("It is still present after {}.", human(after));
    if !holds.finalizers.is_empty() {
        detail += &format!(
            "\nHeld by finalizer(s) {}. The controller that owns each finalizer releases it once its clean-up is \
             done (Liqo's for `*.liqo.io` finalizers): check that Liqo is running on this cluster and that the \
             objects this one depends on (credentials, tenant, peer cluster) still exist.",
            holds.finalizers.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
        );
    }
    for (kind, message) in &holds.conditions {
        let next = match kind.as_str() {
            "NamespaceContentRemaining" => {
                "Objects remain in it and are being deleted. Pods wait for their kubelet (for offloaded pods, Liqo's \
                 virtual kubelet) to confirm they stopped: check that their node is Ready and the peering is up; \
                 force-delete (`kubectl delete pod --grace-period=0 --force`) only pods whose node is gone for good."
            }
            "NamespaceFinalizersRemaining" => {
                "Objects in it carry finalizers that their controllers have not released: find them with \
                 `kubectl get <kind> -n <namespace> -o yaml` and check that the owning controller (Liqo's for \
                 `*.liqo.io`) is running."
            }
            _ => {
                "Kubernetes' namespace controller could not delete some content: usually an aggregated API is \
                 unavailable (`kubectl get apiservices`) or kube-controller-manager lacks permissions; fix that \
                 and the deletion resumes by itself."
            }
        };
        detail += &format!("\n{kind}: {message}\n{next}");
    }
    if holds.finalizers.is_empty() && holds.conditions.is_empty() {
        detail += if holds.spec_finalizers.is_empty() {
            "\nThe object reports nothing that holds it (no finalizers): it may be about to go; apply or destroy again."
        } else {
            "\nKubernetes' namespace controller is still deleting its content and has not reported what remains \
             yet: check that kube-controller-manager is running, then see what is left with \
             `kubectl api-resources --verbs=list --namespaced -o name | xargs -n1 kubectl get -n <namespace>`."
        };
    }
    detail +=
        "\nDo not remove finalizers by hand unless the peer cluster is gone for good; then run the command again.";
    Diagnostic::error(format!("{object} could not be deleted"), detail)
}

/// A resource in the state that the Go provider 0.x made (its state holds `names`, which only that provider has):
/// this provider neither reads, changes nor deletes it. `error`: a plan that would change or destroy it.
pub fn made_by_the_go_provider(type_name: &str, names: &[&str], error: bool) -> Diagnostic {
    let names = names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
    let summary = format!("{type_name} in the state was made by the Go provider 0.x");
    let detail = format!(
        "Its state holds {names}, names of the Go provider published as liqotech/liqo 0.0.x or 0.1.x. This provider \
         does not read, change or destroy what that provider made. Take it out of the state without touching the \
         cluster — a `removed` block with `lifecycle {{ destroy = false }}` (Terraform 1.7 and later, OpenTofu), or \
         `terraform state rm <address>` — then adopt the peering with this provider's resources (guide \"Upgrading \
         from the Go provider (0.0.x, 0.1.x)\", docs/guides/upgrading-from-the-go-provider.md)."
    );
    if error { Diagnostic::error(summary, detail) } else { Diagnostic::warning(summary, detail) }
}

/// A stored state of a schema version this provider does not know (written by a newer provider).
pub fn unknown_schema_version(type_name: &str, version: i64, current: i64) -> Diagnostics {
    Diagnostic::error(
        format!("Cannot upgrade {type_name} state from schema version {version}"),
        format!(
            "This provider knows schema versions up to {current}. Use the provider version that wrote the state (or a \
             newer one), or remove the resource from state and import it again."
        ),
    )
    .into()
}

/// Convenience for the common `Result<_, OpError>` → diagnostics step.
pub fn op_diags(e: &OpError) -> Diagnostics {
    op_error(e).into()
}

fn api_error(action: &str, object: &str, source: &kube::Error) -> Diagnostic {
    match source {
        kube::Error::Api(s) if s.code == 401 => Diagnostic::error(
            format!("Unauthorized to {action} {object}"),
            format!(
                "The Kubernetes API server rejected the provider's credentials: {}. Check the `kubernetes` \
                 settings of this provider block (certificate, token or exec plugin may have expired).",
                s.message
            ),
        ),
        // An admission webhook's denial is a 403 too, but no permission would change it.
        kube::Error::Api(s) if s.code == 403 && s.message.starts_with("admission webhook") => Diagnostic::error(
            format!("Refused to {action} {object}"),
            format!(
                "{}\nAn admission webhook on the cluster (Liqo's, for Liqo's objects) refused the request; the \
                 provider's credentials are not the cause.",
                s.message
            ),
        ),
        kube::Error::Api(s) if s.code == 403 => Diagnostic::error(
            format!("Forbidden to {action} {object}"),
            format!(
                "{}\nThe identity in this provider block's `kubernetes` settings lacks the RBAC permission. Grant it, \
                 or use credentials of a cluster administrator for the Liqo resources.",
                s.message
            ),
        ),
        kube::Error::Api(s)
            if s.code == 404
                && s.reason == "NotFound"
                && s.message.contains("the server could not find the requested resource") =>
        {
            Diagnostic::error(
                format!("Liqo is not installed where {object} should live"),
                format!(
                    "The API server does not know this kind ({}). Install Liqo 1.0.3 or later on this cluster \
                     (its CRDs must be present), or point the provider block at the right cluster.",
                    s.message
                ),
            )
        }
        // The API server could not reach an admission webhook (a 500, retried for a while before this): usually
        // Liqo's, still starting or down.
        kube::Error::Api(s) if s.code == 500 && s.message.contains("failed calling webhook") => {
            let webhook = s.message.split('"').nth(1).unwrap_or("an admission webhook");
            Diagnostic::error(
                format!("Webhook {webhook} not serving: could not {action} {object}"),
                format!(
                    "{}\nThe API server calls this webhook for the object and could not reach it. When it is Liqo's \
                     (`*.liqo.io`), Liqo's webhook pod (Deployment liqo-webhook in the Liqo namespace) is not running \
                     or not ready yet, e.g. just after Liqo was installed or upgraded: check it, then apply again.",
                    s.message
                ),
            )
        }
        kube::Error::Api(s) if s.code == 422 || s.code == 400 => Diagnostic::error(
            format!("The API server refused to {action} {object}"),
            format!(
                "{}\nThis usually means a value does not fit Liqo's CRD schema; check the resource's arguments.",
                s.message
            ),
        ),
        kube::Error::Api(s) => Diagnostic::error(
            format!("Failed to {action} {object}"),
            format!("{} ({}, HTTP {})", s.message, s.reason, s.code),
        ),
        e if crate::kube::is_unreachable(e) => Diagnostic::error(
            format!("Cannot reach the Kubernetes API server to {action} {object}"),
            format!(
                "{source}\nCheck the `kubernetes` settings of this provider block (host, config_path, config_context) \
                 and that the cluster is up.\n{IF_GONE}"
            ),
        ),
        other => Diagnostic::error(format!("Failed to {action} {object}"), other.to_string()),
    }
}

/// The way out when a cluster is gone for good, shared by every error about an unreachable cluster or peer.
const IF_GONE: &str = "If the cluster is gone for good (deleted, or cut off for ever), its peerings cannot be undone \
     on it and its peers' Liqo keeps waiting for it: set `permanently_unreachable = true` in the provider block of \
     that cluster and add its cluster ID to `permanently_unreachable_peers` in the provider blocks of its peers, then \
     run the destroy again. The peers are then unpeered as `liqoctl force unpeer` does, and the resources of the gone \
     cluster leave the state with the list of what stays on it (docs/guides/day-2.md).";

/// The first request of a provider process got no answer from its API server within the reach budget.
pub fn unreachable_cluster(source: &str, last: &str, after: std::time::Duration) -> Diagnostic {
    Diagnostic::error(
        format!("Cluster unreachable: {source}"),
        format!(
            "The API server gave no answer for {} (last attempt: {last}).\nIf the cluster is only down for now, \
             bring it back (or fix this provider block's `kubernetes` settings) and run the command again.\n{IF_GONE}",
            human(after)
        ),
    )
}

/// A delete on this cluster that waits for a peer whose API server Liqo reports unreachable.
fn waits_for_unreachable_peer(object: &str, holds: &Holds, peer: &str, peer_seen: &str) -> Diagnostic {
    Diagnostic::error(
        format!("{object} cannot be deleted while peer cluster {peer} is unreachable"),
        format!(
            "It is held by {}, which Liqo releases only once it has cleaned up on {peer}, and Liqo reports: \
             {peer_seen}.\nIf {peer} is only down for now, bring it back and run the command again.\n{IF_GONE}",
            holds.summary()
        ),
    )
}

/// `90s` → "1m30s": durations the way Terraform users write them.
pub fn human(d: std::time::Duration) -> String {
    let secs = d.as_secs();
    if secs == 0 {
        return format!("{}ms", d.as_millis());
    }
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out += &format!("{h}h");
    }
    if m > 0 {
        out += &format!("{m}m");
    }
    if s > 0 || out.is_empty() {
        out += &format!("{s}s");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A webhook's denial is a 403 like a missing permission, but only the latter is about credentials.
    #[test]
    fn a_webhook_denial_is_not_blamed_on_rbac() {
        let forbidden = |message: &str| {
            op_error(&OpError::Api {
                action: "apply",
                object: "Tenant liqo-tenant-rome/rome".into(),
                source: kube::Error::Api(kube::core::Status::failure(message, "Forbidden").with_code(403).boxed()),
            })
        };
        let denied = forbidden(
            "admission webhook \"tenant.validate.liqo.io\" denied the request: a Tenant already exists in the tenant namespace",
        );
        assert_eq!(denied.summary, "Refused to apply Tenant liqo-tenant-rome/rome");
        assert!(denied.detail.contains("already exists") && !denied.detail.contains("RBAC"), "{}", denied.detail);
        let rbac = forbidden("tenants.authentication.liqo.io is forbidden: User \"x\" cannot create resource");
        assert!(rbac.summary.starts_with("Forbidden") && rbac.detail.contains("RBAC"), "{}", rbac.detail);
    }

    /// An unreachable webhook is named (Liqo starting), not reported as a bare internal error.
    #[test]
    fn a_webhook_that_is_not_serving_is_named() {
        let message = "Internal error occurred: failed calling webhook \"gatewayserver.liqo.io\": failed to call webhook: \
                       Post \"https://liqo-webhook.liqo.svc:443/validate/gatewayservers?timeout=10s\": dial tcp \
                       10.96.0.12:443: connect: connection refused";
        let d = op_error(&OpError::Api {
            action: "apply",
            object: "GatewayServer liqo-tenant-rome/rome".into(),
            source: kube::Error::Api(kube::core::Status::failure(message, "InternalError").with_code(500).boxed()),
        });
        assert_eq!(
            d.summary,
            "Webhook gatewayserver.liqo.io not serving: could not apply GatewayServer liqo-tenant-rome/rome"
        );
        assert!(d.detail.contains("connection refused") && d.detail.contains("liqo-webhook"), "{}", d.detail);
    }

    #[test]
    fn stuck_delete_names_object_and_finalizer() {
        let d = op_error(&OpError::StuckDelete {
            object: "ResourceSlice liqo-tenant-milan/milan".into(),
            holds: Holds { finalizers: vec!["crdreplicator.liqo.io/resource".into()], ..Holds::default() },
            after: Duration::from_secs(90),
        });
        assert!(d.summary.contains("ResourceSlice liqo-tenant-milan/milan"));
        assert!(d.detail.contains("`crdreplicator.liqo.io/resource`"));
        assert!(d.detail.contains("1m30s"));
    }

    /// The case met on a real cluster: a namespace held by a pod that could not terminate has no metadata
    /// finalizers at all, only its deletion conditions say what holds it.
    #[test]
    fn stuck_namespace_names_the_remaining_content_and_the_next_step() {
        let ns: k8s_openapi::api::core::v1::Namespace = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "liqo-demo", "deletionTimestamp": "2026-11-23T00:00:00Z"},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Terminating", "conditions": [
                {"type": "NamespaceDeletionDiscoveryFailure", "status": "False", "reason": "ResourcesDiscovered", "message": "All resources successfully discovered"},
                {"type": "NamespaceContentRemaining", "status": "True", "reason": "SomeResourcesRemain", "message": "Some resources are remaining: pods. has 1 resource instances"},
                {"type": "NamespaceFinalizersRemaining", "status": "True", "reason": "SomeFinalizersRemain", "message": "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"},
            ]},
        }))
        .unwrap();
        let holds = Holds::of(&ns);
        assert!(holds.finalizers.is_empty());
        assert_eq!(holds.spec_finalizers, ["kubernetes"]);
        assert_eq!(holds.conditions.len(), 2, "only true deletion conditions: {holds:?}");
        let d = op_error(&OpError::StuckDelete {
            object: "Namespace liqo-demo".into(),
            holds: holds.clone(),
            after: Duration::from_secs(300),
        });
        assert_eq!(d.summary, "Namespace liqo-demo could not be deleted");
        assert!(!d.detail.contains("finalizer(s) ."), "no empty finalizer list: {}", d.detail);
        for needle in ["pods. has 1 resource instances", "example.com/hold", "--grace-period=0 --force", "5m"] {
            assert!(d.detail.contains(needle), "missing {needle:?} in {}", d.detail);
        }
        assert!(holds.summary().contains("NamespaceContentRemaining: Some resources are remaining: pods"));
    }

    #[test]
    fn timeout_says_which_condition_never_came() {
        let d = op_error(&OpError::Timeout {
            object: "Connection liqo-tenant-milan labelled".into(),
            waiting_for: "status.value == Connected".into(),
            last_seen: "status.value = Connecting".into(),
            after: Duration::from_secs(120),
        });
        assert!(d.detail.contains("status.value == Connected"));
        assert!(d.detail.contains("Connecting"));
        assert!(d.detail.contains("2m"));
    }

    #[test]
    fn import_refusals_become_warnings_naming_the_listed_object() {
        let refusal = Diagnostics::from(Diagnostic::error("Secret x/y not found.", "Nothing to import."));
        let d = not_adoptable("liqo_peer", "liqo-tenant-milan/milan", refusal);
        assert!(!d.has_errors() && !d.is_empty());
        let w = d.iter().next().unwrap();
        assert!(w.summary.contains("\"liqo-tenant-milan/milan\""), "{}", w.summary);
        assert_eq!(w.detail, "Secret x/y not found Nothing to import.");
    }
}
