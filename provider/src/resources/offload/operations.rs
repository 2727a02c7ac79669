//! `liqo_offload` on the cluster: provide the namespace, write the offloading and wait for Liqo's verdict,
//! unoffload, read, import.
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use liqo_schema::liqo::{NamespaceOffloading, OFFLOADING_PHASE_NO_CLUSTER_SELECTED, labels};
use liqo_schema::tf::{Diagnostic, Value};

use super::objects::observed_state;
use super::schema::attr;
use super::status::{Outcome, applied_state, no_cluster_warning, offloading_check};
use super::{OffloadResource, schema};
use crate::attributes::Key;
use crate::cluster_api::ClusterApi;
use crate::import_id::{Found, ImportId};
use crate::kube::{OpError, created_by_provider, is_terminating};
use crate::protocol::Ctx;
use crate::resources::lifecycle::{Declared, Done, Failure, Lifecycle, Op, Timeouts};

const OFFLOADING: &str = labels::NAMESPACE_OFFLOADING_NAME;

impl OffloadResource {
    /// The namespace as `create_namespace` wants it. True when it wrote the namespace as this resource's: from
    /// then on a failure must record the state, or destroy would never delete that namespace.
    async fn provide_namespace(
        &self,
        op: &Op<'_>,
        client: &kube::Client,
        off: &attr::Offload,
        managed_namespace_before: bool,
    ) -> Result<bool, OpError> {
        if !off.create_namespace && !managed_namespace_before {
            return Ok(false);
        }
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let existing = crate::kube::settle(op.ctx, &namespaces, &off.namespace, op.deadline.left()).await?;
        let ours = existing.as_ref().is_none_or(created_by_provider);
        if off.create_namespace && ours {
            crate::kube::apply(op.ctx, &namespaces, &off.namespace_object(true)).await?;
            return Ok(true);
        }
        if !off.create_namespace && existing.is_some() && ours {
            // `create_namespace` switched off: drop the marker, so destroy and import leave it alone.
            crate::kube::apply(op.ctx, &namespaces, &off.namespace_object(false)).await?;
        }
        Ok(false)
    }
}

/// Applies the NamespaceOffloading once any earlier one has finished terminating; the generation it got.
async fn write_offloading(op: &Op<'_>, api: &Api<NamespaceOffloading>, off: &attr::Offload) -> Result<i64, OpError> {
    crate::kube::settle(op.ctx, api, OFFLOADING, op.deadline.left()).await?;
    let applied = crate::kube::apply(op.ctx, api, &off.namespace_offloading()).await?;
    Ok(applied.metadata.generation.unwrap_or_default())
}

/// A create or update that failed once something was written records the planned state with whatever Liqo
/// reports by now (a failed create is then tainted and replaced, so nothing is orphaned). An update records its
/// planned values too, not the prior state, as this resource always has. The look is best effort: the error to
/// report is the operation's.
async fn failed_after_writing(ctx: &Ctx, api: &Api<NamespaceOffloading>, planned: &Value, e: OpError) -> Failure {
    let seen = crate::kube::get_opt(ctx, api, OFFLOADING).await.ok().flatten();
    let outcome = seen.as_ref().and_then(Outcome::reported);
    Failure::from(e).after_writing(applied_state(planned, outcome.as_ref()))
}

/// True when the NamespaceOffloading is being deleted and one of its peers is one Liqo reports unreachable.
async fn held_for_unreachable_peer(ctx: &Ctx, client: &kube::Client, o: &NamespaceOffloading) -> bool {
    is_terminating(o) && crate::gone::unreachable_peer_of(ctx, client, o).await.is_some()
}

#[async_trait]
impl Lifecycle for OffloadResource {
    const TYPE_NAME: &'static str = "liqo_offload";
    /// liqoctl allows 20 s to offload and 120 s to unoffload; remote namespace deletion can take longer when the
    /// provider still runs offloaded pods, so every step gets a few minutes.
    const TIMEOUTS: Timeouts = Timeouts::uniform(Duration::from_secs(300));
    const DECLARED: Declared = schema::DECLARED;
    const IMPORT_ID: ImportId = ImportId {
        parts: &[("namespace", "The offloaded namespace (holding NamespaceOffloading `offloading`).")],
        attributes: &[attr::namespace],
        example: "liqo-demo",
        names: "the name of the offloaded namespace",
    };
    const LISTED_FOR_PEER: &'static str = "namespaces offloaded to that provider";
    const PEER: Option<Key> = None;
    const TENANT_NAMESPACE: Option<Key> = None;
    const OBJECTS: &'static str =
        "the NamespaceOffloading `offloading` (and the namespace, if this resource created it)";

    fn new(cluster: Arc<ClusterApi>) -> OffloadResource {
        OffloadResource { cluster }
    }

    /// Create and update alike: the objects are applied whole, so an update converges from whatever is there.
    /// Every in-place change, `timeouts` alone included, re-applies the objects and waits for Liqo again.
    async fn converge(&self, op: &Op<'_>, prior: &Value, planned: &Value, _config: &Value) -> Result<Done, Failure> {
        // The prior state had `create_namespace = true`.
        let managed_namespace_before = attr::Offload::of(prior).create_namespace;
        let client = self.cluster.client().await?;
        let off = attr::Offload::of(planned);
        let namespace_written = self.provide_namespace(op, &client, &off, managed_namespace_before).await?;
        let api: Api<NamespaceOffloading> = Api::namespaced(client, &off.namespace);
        let generation = match write_offloading(op, &api, &off).await {
            Ok(generation) => generation,
            Err(e) if namespace_written => return Err(failed_after_writing(op.ctx, &api, planned, e).await),
            Err(e) => return Err(e.into()),
        };
        let waited = crate::kube::wait_for(
            op.ctx,
            &api,
            OFFLOADING,
            "status.observedGeneration = metadata.generation and offloadingPhase = Ready",
            op.deadline.left(),
            |o| offloading_check(o, generation),
        )
        .await;
        let outcome = match waited {
            Ok(outcome) => outcome,
            Err(e) => return Err(failed_after_writing(op.ctx, &api, planned, e).await),
        };
        let done = Done::from(applied_state(planned, Some(&outcome)));
        Ok(if outcome.phase == OFFLOADING_PHASE_NO_CLUSTER_SELECTED {
            done.with_warning(no_cluster_warning(&off.namespace))
        } else {
            done
        })
    }

    fn cleanup_command(prior: &Value) -> String {
        let prior = attr::Offload::of(prior);
        let ns = if prior.namespace.is_empty() { "<namespace>" } else { &prior.namespace };
        // Liqo releases its finalizer once the peers' tenant namespaces are gone (their cleanup commands).
        format!("kubectl delete namespaceoffloading -n {ns} {OFFLOADING}")
    }

    async fn delete(&self, op: &Op<'_>, prior: &Value) -> Result<(), Failure> {
        let client = self.cluster.client().await?;
        let prior = attr::Offload::of(prior);
        let ns = prior.namespace.as_str();
        let api: Api<NamespaceOffloading> = Api::namespaced(client.clone(), ns);
        crate::kube::delete_and_wait(op.ctx, &api, OFFLOADING, op.deadline.left()).await?;
        if prior.create_namespace {
            let namespaces: Api<Namespace> = Api::all(client);
            let existing = crate::kube::get_opt(op.ctx, &namespaces, ns).await?;
            if existing.as_ref().is_some_and(created_by_provider) {
                crate::kube::delete_and_wait(op.ctx, &namespaces, ns, op.deadline.left()).await?;
            }
        }
        Ok(())
    }

    async fn observe(&self, ctx: &Ctx, state: &Value) -> Result<Done, Failure> {
        let client = self.cluster.client().await?;
        let recorded = attr::Offload::of(state);
        let ns = recorded.namespace.as_str();
        let api: Api<NamespaceOffloading> = Api::namespaced(client.clone(), ns);
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let offloading = crate::kube::get_opt(ctx, &api, OFFLOADING).await?;
        let namespace = crate::kube::get_opt(ctx, &namespaces, ns).await?;
        let state = match offloading {
            Some(o) if !is_terminating(&o) => {
                // A namespace `create_namespace` provides that is gone or going: plan to create everything again.
                let namespace_lost = namespace.is_none_or(|n| is_terminating(&n));
                if recorded.create_namespace && namespace_lost {
                    Value::Null
                } else {
                    observed_state(state, &o).value()
                }
            }
            // Being unoffloaded but held for a peer Liqo reports unreachable (a destroy that failed for it): the
            // deletion cannot finish, so the resource stays in the state and the next destroy (with the peer marked
            // gone for good) finishes the job, the namespace it created included, instead of forgetting both.
            Some(o) if held_for_unreachable_peer(ctx, &client, &o).await => state.clone(),
            // Gone or being unoffloaded: plan to create it again (apply waits out the deletion first).
            _ => Value::Null,
        };
        Ok(state.into())
    }

    async fn find(ctx: &Ctx, client: kube::Client, remote: Option<&str>) -> Result<Vec<Found>, OpError> {
        let api: Api<NamespaceOffloading> = Api::all(client);
        Ok(crate::kube::list(ctx, &api, "")
            .await?
            .iter()
            .filter(|o| o.metadata.name.as_deref() == Some(labels::NAMESPACE_OFFLOADING_NAME))
            // Liqo keys the per-cluster conditions by NamespaceMap, which it names after the peer.
            .filter(|o| {
                remote.is_none_or(|r| {
                    o.status
                        .as_ref()
                        .and_then(|s| s.remote_namespaces_conditions.as_ref())
                        .is_some_and(|c| c.contains_key(r))
                })
            })
            .map(|o| Found::new(o.metadata.namespace.clone().unwrap_or_default(), "offloaded namespace", None))
            .collect())
    }

    async fn import(&self, ctx: &Ctx, id: &str) -> Result<Value, Failure> {
        let [ns] = Self::IMPORT_ID.parse(Self::TYPE_NAME, id)?;
        let client = self.cluster.client().await?;
        let api: Api<NamespaceOffloading> = Api::namespaced(client.clone(), &ns);
        let o = crate::kube::get_opt(ctx, &api, OFFLOADING).await?.ok_or_else(|| {
            Diagnostic::error(
                format!("NamespaceOffloading {ns}/offloading not found"),
                "Nothing to import: the namespace is not offloaded (`kubectl get namespaceoffloadings -A` on the \
                 consumer cluster), or create the offloading with this resource instead.",
            )
        })?;
        let namespaces: Api<Namespace> = Api::all(client);
        let namespace = crate::kube::get_opt(ctx, &namespaces, &ns).await?;
        let mut state = observed_state(&Value::Null, &o);
        state.create_namespace = namespace.as_ref().is_some_and(created_by_provider);
        Ok(state.value())
    }

    fn generated_config(config: Value) -> Value {
        schema::generated_config(config)
    }
}
