//! `liqo_peer` on the cluster: write the identity Secret and the ResourceSlice and wait for Liqo, unpeer in Liqo's
//! order, read the peering back, import it.
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Node, Secret};
use kube::api::Api;
use liqo_schema::liqo::{Identity, ResourceSlice, VirtualNode, labels};
use liqo_schema::tf::{Diagnostic, Diagnostics, Value};

use super::kubeconfig::{KubeconfigParts, assemble_kubeconfig, key_for_certificate};
use super::objects::{Credentials, identity_secret_name, owning_identity};
use super::observed::observed_state;
use super::schema::attr;
use super::status::{AUTHENTICATION_DENIAL_GRACE, OnAuthDenial, slice_check};
use super::{PeerResource, schema};
use crate::attributes::Key;
use crate::cluster_api::ClusterApi;
use crate::import_id::{Found, ImportId, TENANT_NAMESPACE_PART, by_peer, label, namespaced_id};
use crate::kube::{OpError, is_terminating};
use crate::protocol::Ctx;
use crate::resources::lifecycle::{Declared, Done, Failure, Lifecycle, Op, Timeouts, upgrade_dropping_v0};
use crate::resources::shared::resource_slice::slice_provider;
use crate::resources::shared::virtual_node_wait::wait_for_virtual_node;
use secrecy::ExposeSecret;

impl PeerResource {
    /// The kubeconfig to write into the identity Secret; `None` keeps the identity Liqo minted. Writes no object, so
    /// a failure here leaves Terraform's state as it was.
    async fn identity_kubeconfig(
        &self,
        op: &Op<'_>,
        client: &kube::Client,
        peering: &attr::Peer,
        credentials: &Credentials,
    ) -> Result<Option<zeroize::Zeroizing<String>>, OpError> {
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &peering.tenant_namespace);
        // An identity Secret deleted out of band stays until Liqo has nothing replicated: take the slice down
        // first, then rebuild both (this apply is a re-creation anyway).
        let secret = crate::kube::get_opt(op.ctx, &secrets, &peering.secret_name()).await?;
        if secret.as_ref().is_some_and(is_terminating) {
            self.unpeer_slice(op, client, &peering.tenant_namespace, &peering.resource_slice_name).await?;
            crate::kube::settle(op.ctx, &secrets, &peering.secret_name(), op.deadline.left()).await?;
        }
        Ok(match credentials {
            Credentials::Issued { server, proxy_url, ca_pem, cert_pem, key_secret } => {
                let found = crate::kube::get_opt(op.ctx, &secrets, key_secret).await?;
                let object = crate::kube::describe::<Secret>(Some(&peering.tenant_namespace), key_secret);
                let key = key_for_certificate(found.as_ref(), &object, cert_pem)?;
                Some(assemble_kubeconfig(&KubeconfigParts {
                    server,
                    proxy_url: proxy_url.as_deref(),
                    ca_pem,
                    cert_pem,
                    key_pem: &key,
                    cluster_name: peering.provider(),
                    namespace: peering.provider_tenant_namespace.as_deref().unwrap_or_default(),
                }))
            }
            Credentials::Brought(kubeconfig) => Some(zeroize::Zeroizing::new(kubeconfig.expose_secret().to_string())),
            Credentials::Liqo if secret.as_ref().is_some_and(|s| !is_terminating(s)) => None,
            Credentials::Liqo => {
                return Err(OpError::Failed {
                    object: crate::kube::describe::<Secret>(Some(&peering.tenant_namespace), &peering.secret_name()),
                    reason: "no credentials are configured, which keeps the control-plane identity Liqo minted, but \
                             that identity does not exist (any more)."
                        .into(),
                    hint: "Configure the issued-certificate flow (`api_server_url`, `cluster_ca_certificate` and \
                           `client_certificate` from liqo_tenant, `client_key_secret` from liqo_consumer_key) or \
                           `kubeconfig_wo`, or authenticate again with `liqoctl authenticate`, then apply again."
                        .into(),
                });
            }
        })
    }

    /// Liqo's teardown order (reference §6); each step waits for the object to be gone.
    async fn remove(&self, op: &Op<'_>, client: &kube::Client, prior: &Value) -> Result<(), OpError> {
        let prior = attr::Peer::of(prior);
        let (ns, name) = (prior.tenant_namespace.as_str(), prior.resource_slice_name.as_str());
        let provider = prior.provider();
        self.unpeer_slice(op, client, ns, name).await?;

        // Other slices for the same provider still need the shared identity Secret (and would hold its finalizer).
        let slices: Api<ResourceSlice> = Api::namespaced(client.clone(), ns);
        let selector = format!("{}={provider}", labels::REMOTE_CLUSTER_ID);
        let others = crate::kube::list(op.ctx, &slices, &selector).await?;
        if others.iter().all(|rs| rs.metadata.name.as_deref() == Some(name)) {
            let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
            let secret_name = identity_secret_name(provider);
            // Liqo's identity goes as `liqoctl unpeer` removes it: through its Identity, which owns the Secret.
            let owner = crate::kube::get_opt(op.ctx, &secrets, &secret_name).await?.as_ref().and_then(owning_identity);
            if let Some(identity) = owner {
                let identities: Api<Identity> = Api::namespaced(client.clone(), ns);
                crate::kube::delete_and_wait(op.ctx, &identities, &identity, op.deadline.left()).await?;
            }
            crate::kube::delete_and_wait(op.ctx, &secrets, &secret_name, op.deadline.left()).await?;
        }
        Ok(())
    }

    /// The slice (its finalizer needs the credentials, still present), then the VirtualNode and Node Liqo derived
    /// from it, each waited for until gone.
    async fn unpeer_slice(&self, op: &Op<'_>, client: &kube::Client, ns: &str, name: &str) -> Result<(), OpError> {
        let slices: Api<ResourceSlice> = Api::namespaced(client.clone(), ns);
        crate::kube::delete_and_wait(op.ctx, &slices, name, op.deadline.left()).await?;

        let vns: Api<VirtualNode> = Api::namespaced(client.clone(), ns);
        crate::kube::wait_deleted(
            op.ctx,
            &vns,
            name,
            "deletion by Liqo (it follows its ResourceSlice)",
            op.deadline.left(),
        )
        .await?;
        let nodes: Api<Node> = Api::all(client.clone());
        crate::kube::wait_deleted(op.ctx, &nodes, name, "deletion by the virtual kubelet", op.deadline.left()).await
    }
}

#[async_trait]
impl Lifecycle for PeerResource {
    const TYPE_NAME: &'static str = "liqo_peer";
    /// liqoctl gives `peer` 10 minutes end to end; a virtual kubelet may take a while to register its node.
    const TIMEOUTS: Timeouts = Timeouts::uniform(Duration::from_secs(600));
    const DECLARED: Declared = schema::DECLARED;
    const IMPORT_ID: ImportId = ImportId {
        parts: &[TENANT_NAMESPACE_PART, ("resource_slice_name", "Name of the ResourceSlice.")],
        attributes: &[attr::tenant_namespace, attr::resource_slice_name],
        example: "liqo-tenant-milan/milan",
        names: "the namespace and name of the ResourceSlice on the consumer cluster",
    };
    const LISTED_FOR_PEER: &'static str = "ResourceSlices asking that provider";
    const PEER: Option<Key> = Some(attr::provider_cluster_id);
    const TENANT_NAMESPACE: Option<Key> = Some(attr::tenant_namespace);
    const OBJECTS: &'static str =
        "the control-plane identity Secret and the ResourceSlice (and Liqo's VirtualNode) in the tenant namespace";

    fn new(cluster: Arc<ClusterApi>) -> PeerResource {
        PeerResource { cluster }
    }

    /// Writes both objects and waits for Liqo; create and update alike (every in-place change: credentials,
    /// resources, the wait flag, timeouts). A failure after the first write records what was written (a failed
    /// create is tainted and replaced), so nothing is orphaned.
    async fn converge(&self, op: &Op<'_>, _prior: &Value, planned: &Value, config: &Value) -> Result<Done, Failure> {
        let peering = attr::Peer::of(planned);
        let credentials = peering.credentials(config)?;
        let client = self.cluster.client().await?;
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &peering.tenant_namespace);
        let slices: Api<ResourceSlice> = Api::namespaced(client.clone(), &peering.tenant_namespace);
        let kubeconfig = self.identity_kubeconfig(op, &client, &peering, &credentials).await?;
        let written = |accepted: Option<&BTreeMap<String, String>>| peering.state(accepted);

        // The Secret first: the crd-replicator needs it to replicate the slice. A new kubeconfig (a renewed
        // certificate, a rotated key) replaces the old one in place, and Liqo's crd-replicator reconnects with it.
        if let Some(kubeconfig) = &kubeconfig {
            crate::kube::apply(op.ctx, &secrets, &peering.identity_secret(kubeconfig)).await?;
        }
        // A kept identity (Liqo's) is not written: until the slice is, this apply has nothing to record.
        let before_slice = |e: OpError| match &kubeconfig {
            Some(_) => Failure::from(e).after_writing(written(None)),
            None => Failure::from(e),
        };
        let slice_name = &peering.resource_slice_name;
        crate::kube::settle(op.ctx, &slices, slice_name, op.deadline.left()).await.map_err(before_slice)?;
        crate::kube::apply(op.ctx, &slices, &peering.resource_slice()).await.map_err(before_slice)?;

        let waiting_for = if peering.grants_request() && peering.resources.is_some() {
            "conditions Authentication and Resources = Accepted, granting the requested resources"
        } else {
            "conditions Authentication and Resources = Accepted"
        };
        let (slices, peering) = (&slices, &peering);
        let wait = |on_auth_denial, timeout| {
            crate::kube::wait_for(op.ctx, slices, slice_name, waiting_for, timeout, move |rs| {
                slice_check(rs, peering, on_auth_denial)
            })
        };
        let mut granted = wait(OnAuthDenial::Fail, op.deadline.left()).await;
        if matches!(granted, Err(OpError::Failed { .. })) {
            // A Resources denial fails again at once; an Authentication denial gets the grace, then counts.
            granted = match wait(OnAuthDenial::Wait, AUTHENTICATION_DENIAL_GRACE.min(op.deadline.left())).await {
                Err(OpError::Timeout { .. }) => wait(OnAuthDenial::Fail, op.deadline.left()).await,
                other => other,
            };
        }
        let granted = granted.map_err(|e| Failure::from(e).after_writing(written(None)))?;

        if peering.create_virtual_node == Some(true) && peering.wait_for_virtual_node {
            wait_for_virtual_node(op, &client, &peering.tenant_namespace, slice_name, peering.provider())
                .await
                .map_err(|e| Failure::from(e).after_writing(written(Some(&granted))))?;
        }
        Ok(written(Some(&granted)).into())
    }

    async fn delete(&self, op: &Op<'_>, prior: &Value) -> Result<(), Failure> {
        let client = self.cluster.client().await?;
        Ok(self.remove(op, &client, prior).await?)
    }

    async fn observe(&self, ctx: &Ctx, state: &Value) -> Result<Done, Failure> {
        let client = self.cluster.client().await?;
        let peering = attr::Peer::of(state);
        let slices: Api<ResourceSlice> = Api::namespaced(client.clone(), &peering.tenant_namespace);
        let secrets: Api<Secret> = Api::namespaced(client, &peering.tenant_namespace);
        let rs = crate::kube::get_opt(ctx, &slices, &peering.resource_slice_name).await?;
        let secret = crate::kube::get_opt(ctx, &secrets, &peering.secret_name()).await?;
        Ok(match (rs, secret) {
            (Some(rs), Some(secret)) if !is_terminating(&rs) && !is_terminating(&secret) => {
                observed_state(state, &rs, &secret)
            }
            // Either object gone or going: Terraform plans to create it again (apply waits out the deletion,
            // and is idempotent for the rest).
            _ => Value::Null,
        }
        .into())
    }

    /// Only the consumer's own slices: the provider's replicated copies carry `liqo.io/replicated`.
    async fn find(ctx: &Ctx, client: kube::Client, remote: Option<&str>) -> Result<Vec<Found>, OpError> {
        let api: Api<ResourceSlice> = Api::all(client);
        let selector = by_peer(&format!("{}={}", labels::REPLICATION, labels::TRUE), labels::REMOTE_ID, remote);
        Ok(crate::kube::list(ctx, &api, &selector)
            .await?
            .iter()
            .map(|rs| Found::new(namespaced_id(&rs.metadata), "ResourceSlice", label(&rs.metadata, labels::REMOTE_ID)))
            .collect())
    }

    async fn import(&self, ctx: &Ctx, id: &str) -> Result<Value, Failure> {
        let [ns, name] = Self::IMPORT_ID.parse(Self::TYPE_NAME, id)?;
        let client = self.cluster.client().await?;
        let slices: Api<ResourceSlice> = Api::namespaced(client.clone(), &ns);
        let rs = crate::kube::get_opt(ctx, &slices, &name).await?.ok_or_else(|| {
            Diagnostic::error(
                format!("ResourceSlice {ns}/{name} not found"),
                "Nothing to import: check the namespace and name (`kubectl get resourceslices -A` on the consumer \
                 cluster), or create the peering with this resource instead.",
            )
        })?;
        let provider = slice_provider(&rs).ok_or_else(|| {
            Diagnostic::error(
                format!("ResourceSlice {ns}/{name} names no provider cluster"),
                format!(
                    "It has neither the `{}` label nor `spec.providerClusterID`, so it is not a peering \
                         liqo_peer can manage.",
                    labels::REMOTE_CLUSTER_ID
                ),
            )
        })?;
        let secrets: Api<Secret> = Api::namespaced(client, &ns);
        let secret_name = identity_secret_name(provider);
        let secret = crate::kube::get_opt(ctx, &secrets, &secret_name).await?.ok_or_else(|| {
            Diagnostic::error(
                format!("Secret {ns}/{secret_name} not found"),
                format!(
                    "liqo_peer manages (or, for an identity Liqo minted, keeps) the control-plane identity Secret \
                     `{secret_name}` next to the ResourceSlice, and this peering has none: Liqo cannot replicate \
                     the slice without it. Authenticate first (`liqoctl authenticate`, or liqo_tenant with \
                     liqo_consumer_key and this resource's credentials), then import."
                ),
            )
        })?;
        Ok(observed_state(&Value::Null, &rs, &secret))
    }

    /// From 0.2.0 (version 0): the `kubeconfig` holding the private key is dropped; the configuration then sets
    /// the issued-certificate attributes, and the next apply rewrites the identity Secret in place.
    fn upgrade(version: i64, state: &serde_json::Value) -> Option<Result<serde_json::Value, Diagnostics>> {
        upgrade_dropping_v0("kubeconfig", version, state)
    }
}
