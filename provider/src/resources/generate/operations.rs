//! `liqo_generate` on the cluster: prepare the tenant Namespace and write the key pair, release or delete them,
//! check what is left of them, adopt what `liqoctl peer` made.
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use kube::api::Api;
use liqo_schema::liqo::labels;
use liqo_schema::tf::{Diagnostic, Value};

use super::objects::{
    bare_namespace, key_secret_object, key_secret_public_key, key_secret_selector, mounts_key_secret, namespace_drift,
    namespace_object, peer_of, pod_selector, tenant_namespace_selector,
};
use super::schema::attr;
use super::state::state_of;
use super::status::namespace_check;
use super::{GenerateResource, schema};
use crate::attributes::Key;
use crate::cluster_api::ClusterApi;
use crate::cluster_facts::ClusterFacts;
use crate::import_id::{Found, ImportId, TENANT_NAMESPACE_PART, by_peer, label};
use crate::kube::{OpError, created_by_provider};
use crate::protocol::Ctx;
use crate::resources::lifecycle::{Declared, Done, Failure, Lifecycle, Op, Timeouts};

/// The warning the plan shows when the key Secret is gone or holds another pair: what the next apply will do.
pub(super) fn key_pair_lost(namespace: &str) -> Diagnostic {
    Diagnostic::warning(
        format!("The WireGuard key pair in {namespace} is gone or was changed"),
        format!(
            "Secret {namespace}/{} no longer holds the key pair this resource wrote, so the plan \
             creates liqo_generate again: the next apply writes a NEW key pair, restarts the pods of the gateway \
             Deployment(s) in {namespace} that use it (Liqo's gateway reads its key only at start), and the peer's \
             liqo_gateway gets the new public key through `wireguard_public_key` in the same apply. The tunnel is \
             down until then. The previous private key cannot be restored (it never left the cluster).",
            labels::KEY_SECRET_NAME
        ),
    )
}

/// The names of the objects `selector` finds besides `ours`: Liqo finds a peer's tenant namespace and key Secret by
/// label and fails on duplicates, so any such name is one too many.
async fn others_labelled<K>(ctx: &Ctx, api: &Api<K>, selector: &str, ours: &str) -> Result<Vec<String>, OpError>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let found = crate::kube::list(ctx, api, selector).await?;
    Ok(found.into_iter().filter_map(|o| o.meta().name.clone()).filter(|n| n != ours).collect())
}

impl GenerateResource {
    /// Liqo finds the tenant namespace of a peer by label and fails on duplicates: refuse to label a second one.
    async fn check_unique_namespace(
        &self,
        ctx: &Ctx,
        api: &Api<Namespace>,
        generate: &attr::Generate,
    ) -> Result<(), Failure> {
        let selector = tenant_namespace_selector(&generate.remote_cluster_id);
        let others = others_labelled(ctx, api, &selector, &generate.tenant_namespace).await?;
        if others.is_empty() {
            return Ok(());
        }
        Err(Diagnostic::error(
            format!("Another tenant namespace exists for {}", generate.remote_cluster_id),
            format!(
                "Namespace {} is already labelled {}={} and {}, and Liqo accepts only one tenant namespace per peer. Set \
                 `tenant_namespace = \"{}\"` to use it (or import it: `terraform import <address> {}`), or delete it if it is stale.",
                others.join(", "),
                labels::REMOTE_CLUSTER_ID,
                generate.remote_cluster_id,
                labels::TENANT_NAMESPACE,
                others[0],
                others[0]
            ),
        )
        .at(attr::tenant_namespace.path())
        .into())
    }

    /// Liqo's gateway finds its key Secret by label and fails on duplicates (e.g. a `gw-<gateway>` Secret Liqo
    /// generated for an earlier peering): refuse to add a second one.
    async fn check_unique_key_secret(
        &self,
        ctx: &Ctx,
        api: &Api<Secret>,
        generate: &attr::Generate,
    ) -> Result<(), Failure> {
        let selector = key_secret_selector(&generate.remote_cluster_id);
        let others = others_labelled(ctx, api, &selector, labels::KEY_SECRET_NAME).await?;
        if others.is_empty() {
            return Ok(());
        }
        Err(Diagnostic::error(
            format!("Another WireGuard key Secret exists in namespace {}", generate.tenant_namespace),
            format!(
                "Secret {} is labelled {}={} and {}=true, and Liqo's gateway accepts only one key Secret per peer. Delete \
                 it (it is left over from an earlier peering made without Terraform), then apply again.",
                others.iter().map(|n| format!("{}/{n}", generate.tenant_namespace)).collect::<Vec<_>>().join(", "),
                labels::REMOTE_CLUSTER_ID,
                generate.remote_cluster_id,
                labels::GATEWAY_RESOURCE
            ),
        )
        .into())
    }

    /// Checks that the tenant Namespace can be used for this peer, without writing anything; returns whether it
    /// is (or will be) ours, i.e. created by this provider. A Namespace still terminating is waited for.
    async fn prepare_namespace(
        &self,
        op: &Op<'_>,
        api: &Api<Namespace>,
        generate: &attr::Generate,
    ) -> Result<bool, Failure> {
        self.check_unique_namespace(op.ctx, api, generate).await?;
        // A namespace still being deleted (e.g. by the destroy half of a replacement) cannot be reused.
        let existing = crate::kube::settle(op.ctx, api, &generate.tenant_namespace, op.deadline.left()).await?;
        if let Some(other) = existing.as_ref().and_then(peer_of).filter(|o| *o != generate.remote_cluster_id) {
            return Err(Diagnostic::error(
                format!("Namespace {} belongs to another peer", generate.tenant_namespace),
                format!(
                    "It is labelled {}={other}, not {}. Choose another `tenant_namespace` (each peer needs its own).",
                    labels::REMOTE_CLUSTER_ID,
                    generate.remote_cluster_id
                ),
            )
            .at(attr::tenant_namespace.path())
            .into());
        }
        Ok(existing.as_ref().is_none_or(created_by_provider))
    }

    /// Applies the tenant Namespace and waits until it is `Active`.
    async fn write_namespace(
        &self,
        op: &Op<'_>,
        api: &Api<Namespace>,
        generate: &attr::Generate,
        ours: bool,
    ) -> Result<(), OpError> {
        crate::kube::apply(op.ctx, api, &namespace_object(generate, ours)).await?;
        crate::kube::wait_for(
            op.ctx,
            api,
            &generate.tenant_namespace,
            "status.phase = Active",
            op.deadline.left(),
            namespace_check,
        )
        .await
    }

    /// Makes a key pair and writes it to `gw-keys`; returns its public key.
    async fn write_key_pair(&self, ctx: &Ctx, api: &Api<Secret>, generate: &attr::Generate) -> Result<String, Failure> {
        self.check_unique_key_secret(ctx, api, generate).await?;
        let keys = crate::crypto::wireguard::KeyPair::generate()
            .map_err(|why| Diagnostic::error("Cannot generate a WireGuard key", why))?;
        crate::kube::apply(ctx, api, &key_secret_object(generate, &keys)).await?;
        Ok(keys.public_key())
    }

    /// Liqo's gateway reads its WireGuard private key once, at start (`pkg/gateway/tunnel/wireguard/keys.go`), so a
    /// key pair written under a running gateway breaks the tunnel until its pods restart. This restarts them: the
    /// pods of every Deployment in the namespace that mounts the key Secret are deleted (and waited out), and
    /// their ReplicaSet starts new ones that read the new pair. The Deployment itself is left alone: Liqo's
    /// WgGateway controller owns it and rewrites its whole spec on every reconcile, so a `kubectl rollout restart`
    /// annotation would be reverted at once. Returns the Deployments restarted.
    async fn restart_gateways(
        &self,
        op: &Op<'_>,
        client: &kube::Client,
        namespace: &str,
    ) -> Result<Vec<String>, OpError> {
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
        let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
        let mut restarted = Vec::new();
        for d in crate::kube::list(op.ctx, &deployments, "").await?.iter().filter(|d| mounts_key_secret(d)) {
            let Some(selector) = pod_selector(d) else { continue };
            for pod in crate::kube::list(op.ctx, &pods, &selector).await? {
                if let Some(name) = pod.metadata.name.as_deref() {
                    crate::kube::delete_and_wait(op.ctx, &pods, name, op.deadline.left()).await?;
                }
            }
            restarted.push(d.metadata.name.clone().unwrap_or_default());
        }
        Ok(restarted)
    }

    /// What is left of this resource's objects: `Ok(None)` when the Namespace is gone or changed, else the key
    /// Secret's public key (`None` inside when the Secret is gone or unusable). Either way short of the recorded
    /// key, Terraform recreates the resource (a fresh key pair, re-applied labels).
    async fn left_on_cluster(
        &self,
        ctx: &Ctx,
        client: &kube::Client,
        generate: &attr::Generate,
        key_secret: Option<&str>,
    ) -> Result<Option<Option<String>>, OpError> {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        match crate::kube::get_opt(ctx, &namespaces, &generate.tenant_namespace).await? {
            Some(ns)
                if ns.metadata.deletion_timestamp.is_none()
                    && namespace_drift(&ns, &generate.remote_cluster_id).is_none() => {}
            _ => return Ok(None),
        }
        let Some(key_secret) = key_secret else {
            return Ok(Some(None));
        };
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &generate.tenant_namespace);
        let secret = crate::kube::get_opt(ctx, &secrets, key_secret).await?;
        Ok(Some(secret.and_then(|s| key_secret_public_key(&s, &generate.remote_cluster_id).ok())))
    }
}

#[async_trait]
impl Lifecycle for GenerateResource {
    const TYPE_NAME: &'static str = "liqo_generate";
    const TIMEOUTS: Timeouts = Timeouts {
        create: Duration::from_secs(120),
        update: Duration::from_secs(120),
        delete: Duration::from_secs(300),
    };
    const DECLARED: Declared = schema::DECLARED;
    const IMPORT_ID: ImportId = ImportId {
        parts: &[TENANT_NAMESPACE_PART],
        attributes: &[attr::tenant_namespace],
        example: "liqo-tenant-rome",
        names: "the tenant namespace",
    };
    const LISTED_FOR_PEER: &'static str = "tenant namespaces for that peer";
    const PEER: Option<Key> = Some(attr::remote_cluster_id);
    const TENANT_NAMESPACE: Option<Key> = Some(attr::tenant_namespace);
    const OBJECTS: &'static str = "the tenant Namespace and its WireGuard key Secret";

    fn new(cluster: Arc<ClusterApi>) -> GenerateResource {
        GenerateResource { cluster }
    }

    async fn create(&self, op: &Op<'_>, planned: &Value, _config: &Value) -> Result<Done, Failure> {
        let generate = attr::Generate::of(planned);
        let client = self.cluster.client().await?;
        // Read the facts first: without Liqo installed there is nothing to prepare, and nothing gets written.
        let facts = ClusterFacts::read(op.ctx, &self.cluster).await?;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let ours = self.prepare_namespace(op, &namespaces, &generate).await?;
        // From here on the Namespace may be written: a failure records it (without a public key) so a destroy, or
        // the replacement of the now tainted resource, cleans it up.
        let key_secret_name = Some(labels::KEY_SECRET_NAME.to_string());
        let namespace_only = state_of(&generate, &facts, key_secret_name.clone(), None).value();
        self.write_namespace(op, &namespaces, &generate, ours)
            .await
            .map_err(|e| Failure::from(e).after_writing(namespace_only.clone()))?;
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &generate.tenant_namespace);
        let public_key = self
            .write_key_pair(op.ctx, &secrets, &generate)
            .await
            .map_err(|failure| failure.after_writing(namespace_only))?;
        let state = state_of(&generate, &facts, key_secret_name, Some(public_key)).value();
        // A gateway already running in the namespace (the pair was rewritten after drift) holds the old key.
        let restarted = self.restart_gateways(op, &client, &generate.tenant_namespace).await.map_err(|e| {
            // Unusually for a failure, the whole state is recorded: the key pair is written and its public key is
            // what the peer needs; only the restart is left to the user.
            Failure::from(e)
                .explain(&format!(
                    "The new key pair is written, but the gateway pods that still hold the old key could not be \
                     restarted: restart them (kubectl -n {} delete pods of the gw-* Deployment), or the tunnel stays \
                     down.",
                    generate.tenant_namespace
                ))
                .after_writing(state.clone())
        })?;
        if restarted.is_empty() {
            return Ok(state.into());
        }
        Ok(Done::from(state).with_warning(Diagnostic::warning(
            format!("Restarted the WireGuard gateway of {} for its new key pair", generate.tenant_namespace),
            format!(
                "A new key pair was written to Secret {}/{}, and Liqo's gateway reads its key \
                 only at start, so the pods of Deployment(s) {} were restarted. The peer's liqo_gateway \
                 receives the new public key through its reference to `wireguard_public_key` in this apply.",
                generate.tenant_namespace,
                labels::KEY_SECRET_NAME,
                restarted.join(", ")
            ),
        )))
    }

    // Every input but `timeouts` replaces the resource, so the default update (new budgets recorded) suits it.

    /// Key Secret first, then the Namespace if this resource created it (deleting everything left in it); an
    /// adopted Namespace only gets back to the labels it had.
    async fn delete(&self, op: &Op<'_>, prior: &Value) -> Result<(), Failure> {
        let generate = attr::Generate::of(prior);
        let client = self.cluster.client().await?;
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &generate.tenant_namespace);
        let namespaces: Api<Namespace> = Api::all(client);
        crate::kube::delete_and_wait(op.ctx, &secrets, labels::KEY_SECRET_NAME, op.deadline.left()).await?;
        match crate::kube::get_opt(op.ctx, &namespaces, &generate.tenant_namespace).await? {
            // Labelled for another peer (relabelled out of band): not ours to delete or to change.
            Some(ns) if peer_of(&ns).is_some_and(|p| p != generate.remote_cluster_id) => {}
            Some(ns) if created_by_provider(&ns) => {
                crate::kube::delete_and_wait(op.ctx, &namespaces, &generate.tenant_namespace, op.deadline.left())
                    .await?
            }
            Some(ns) if ns.metadata.deletion_timestamp.is_none() => {
                crate::kube::apply(op.ctx, &namespaces, &bare_namespace(&generate.tenant_namespace)).await?;
            }
            _ => {}
        }
        Ok(())
    }

    async fn observe(&self, ctx: &Ctx, state: &Value) -> Result<Done, Failure> {
        let generate = attr::Generate::of(state);
        let client = self.cluster.client().await?;
        let key_secret = generate.key_secret_name.as_deref();
        let public_key = match self.left_on_cluster(ctx, &client, &generate, key_secret).await? {
            // Imported without a key pair (a peering without networking): nothing to check.
            Some(None) if key_secret.is_none() => None,
            Some(Some(k)) if generate.wireguard_public_key.as_deref() == Some(k.as_str()) => Some(k),
            // The namespace is intact but the key pair is gone or not the one recorded: say in the plan what the
            // re-creation will do to a running gateway.
            Some(_) => return Ok(Done::from(Value::Null).with_warning(key_pair_lost(&generate.tenant_namespace))),
            // Gone or changed: recreate, which writes a fresh pair (the peer's gateway then receives the new public
            // key through its reference to `wireguard_public_key`).
            None => return Ok(Value::Null.into()),
        };
        // Refresh the cluster's facts: a change in Liqo's installation shows up as drift for the peer's resources.
        let facts = ClusterFacts::read(ctx, &self.cluster).await?;
        Ok(state_of(&generate, &facts, generate.key_secret_name.clone(), public_key).value().into())
    }

    async fn find(ctx: &Ctx, client: kube::Client, remote: Option<&str>) -> Result<Vec<Found>, OpError> {
        let api: Api<Namespace> = Api::all(client);
        let selector = by_peer(labels::TENANT_NAMESPACE, labels::REMOTE_CLUSTER_ID, remote);
        Ok(crate::kube::list(ctx, &api, &selector)
            .await?
            .iter()
            .map(|ns| {
                let name = ns.metadata.name.clone().unwrap_or_default();
                Found::new(name, "tenant namespace", label(&ns.metadata, labels::REMOTE_CLUSTER_ID))
            })
            .collect())
    }

    async fn import(&self, ctx: &Ctx, id: &str) -> Result<Value, Failure> {
        let type_name = Self::TYPE_NAME;
        let cannot = |detail: String| Diagnostic::error(format!("Cannot import {type_name} {id:?}"), detail);
        let [_namespace] = Self::IMPORT_ID.parse(type_name, id)?;
        let client = self.cluster.client().await?;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let ns = crate::kube::get_opt(ctx, &namespaces, id).await?.ok_or_else(|| {
            cannot(format!(
                "Namespace {id} does not exist on this cluster. Check the name (`kubectl get namespaces -l {}`).",
                labels::TENANT_NAMESPACE
            ))
        })?;
        let remote = peer_of(&ns).map(str::to_string).ok_or_else(|| {
            cannot(format!("Namespace {id} has no {} label, so it is not a Liqo tenant namespace. Create the resource instead of importing it.", labels::REMOTE_CLUSTER_ID))
        })?;
        let generate = attr::Generate {
            remote_cluster_id: remote,
            tenant_namespace: id.to_string(),
            ..attr::Generate::defaults()
        };
        let secrets: Api<Secret> = Api::namespaced(client, id);
        let secret = match crate::kube::get_opt(ctx, &secrets, labels::KEY_SECRET_NAME).await? {
            Some(ours) => Some(ours),
            // Liqo's gateway finds its key Secret by these labels: the one it uses is the one to adopt.
            None => {
                let selector = key_secret_selector(&generate.remote_cluster_id);
                let mut found = crate::kube::list(ctx, &secrets, &selector).await?;
                if found.len() > 1 {
                    let names: Vec<String> = found.iter().filter_map(|s| s.metadata.name.clone()).collect();
                    return Err(cannot(format!(
                        "Secrets {} are all labelled {selector}, and Liqo's gateway accepts only one key Secret per peer. Delete the stale one(s), then import.",
                        names.join(", ")
                    )).into());
                }
                found.pop()
            }
        };
        let key = match secret {
            Some(secret) => {
                let name = secret.metadata.name.clone().unwrap_or_default();
                let public_key = key_secret_public_key(&secret, &generate.remote_cluster_id).map_err(|why| {
                    cannot(format!("Secret {id}/{name} is not a usable WireGuard key Secret: {why}. Create the resource instead of importing it: it writes a fresh key pair."))
                })?;
                Some((name, public_key))
            }
            None => None,
        };
        let facts = ClusterFacts::read(ctx, &self.cluster).await?;
        let (key_secret_name, public_key) = key.unzip();
        Ok(state_of(&generate, &facts, key_secret_name, public_key).value())
    }
}
