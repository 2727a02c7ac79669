//! `liqo_consumer_key` on the cluster: make the key and its CSR, delete the Secret, check it, import it.
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use liqo_schema::liqo::labels;
use liqo_schema::tf::{Diagnostic, Value};

use super::objects::{key_secret, sound};
use super::schema::attr;
use super::{ConsumerKeyResource, schema};
use crate::attributes::Key;
use crate::cluster_api::ClusterApi;
use crate::cluster_facts::read_cluster_id;
use crate::crypto;
use crate::import_id::{Found, ImportId, TENANT_NAMESPACE_PART, by_peer, label};
use crate::kube::OpError;
use crate::kube::is_terminating;
use crate::protocol::Ctx;
use crate::resources::lifecycle::{Declared, Done, Failure, Lifecycle, Op, Timeouts};
use crate::resources::shared::control_plane_key::{CSR, PRIVATE_KEY, key_secret_name};

impl ConsumerKeyResource {
    /// The key Secret's CSR and common name, if the Secret is there and sound.
    async fn sound_secret(&self, ctx: &Ctx, ns: &str, provider: &str) -> Result<Option<(String, String)>, Failure> {
        let secrets: Api<Secret> = Api::namespaced(self.cluster.client().await?, ns);
        let secret = crate::kube::get_opt(ctx, &secrets, &key_secret_name(provider)).await?;
        Ok(secret.filter(|s| !is_terminating(s)).as_ref().and_then(sound))
    }
}

#[async_trait]
impl Lifecycle for ConsumerKeyResource {
    const TYPE_NAME: &'static str = "liqo_consumer_key";
    const TIMEOUTS: Timeouts = Timeouts::uniform(Duration::from_secs(120));
    const DECLARED: Declared = schema::DECLARED;
    const IMPORT_ID: ImportId = ImportId {
        parts: &[TENANT_NAMESPACE_PART, ("provider_cluster_id", "Liqo cluster ID of the provider the key is for.")],
        attributes: &[attr::tenant_namespace, attr::provider_cluster_id],
        example: "liqo-tenant-milan/milan",
        names: "the tenant namespace on this consumer cluster and the provider the key is for",
    };
    const LISTED_FOR_PEER: &'static str = "the key for that provider";
    const PEER: Option<Key> = Some(attr::provider_cluster_id);
    const TENANT_NAMESPACE: Option<Key> = Some(attr::tenant_namespace);
    const OBJECTS: &'static str =
        "the control-plane key Secret `controlplane-key-<provider cluster ID>` in the tenant namespace";

    fn new(cluster: Arc<ClusterApi>) -> ConsumerKeyResource {
        ConsumerKeyResource { cluster }
    }

    async fn create(&self, op: &Op<'_>, planned: &Value, _config: &Value) -> Result<Done, Failure> {
        let mut key_of = attr::ConsumerKey::of(planned);
        let (ns, provider) = (&key_of.tenant_namespace, &key_of.provider_cluster_id);
        let client = self.cluster.client().await?;
        let cluster_id = read_cluster_id(op.ctx, &client, &self.cluster.liqo_namespace()).await??;
        let key = crypto::new_client_key(&cluster_id, labels::CONTROL_PLANE_ORGANIZATION)
            .map_err(|e| Diagnostic::error("Could not make the consumer's control-plane key", e))?;
        let secrets: Api<Secret> = Api::namespaced(client, ns);
        // A Secret of that name still terminating would swallow the write: let it go first.
        crate::kube::settle(op.ctx, &secrets, &key_secret_name(provider), op.deadline.left()).await?;
        crate::kube::apply(op.ctx, &secrets, &key_secret(ns, provider, &key.key_pem, &key.csr_pem)).await?;
        key_of.cluster_id = cluster_id;
        key_of.csr = key.csr_pem;
        Ok(key_of.value().into())
    }

    async fn delete(&self, op: &Op<'_>, prior: &Value) -> Result<(), Failure> {
        let prior = attr::ConsumerKey::of(prior);
        let secrets: Api<Secret> = Api::namespaced(self.cluster.client().await?, &prior.tenant_namespace);
        Ok(crate::kube::delete_and_wait(op.ctx, &secrets, &prior.key_secret_name, op.deadline.left()).await?)
    }

    async fn observe(&self, ctx: &Ctx, state: &Value) -> Result<Done, Failure> {
        let key_of = attr::ConsumerKey::of(state);
        Ok(match self.sound_secret(ctx, &key_of.tenant_namespace, &key_of.provider_cluster_id).await? {
            Some((csr, cn)) if csr == key_of.csr && cn == key_of.cluster_id => state.clone().into(),
            // Gone, or holding another key than the state's CSR: make a new key (and the peer follows).
            _ => Value::Null.into(),
        })
    }

    /// Only the key Secrets this provider made: a peering made by `liqoctl peer` has none (Liqo keeps its key in
    /// `authentication-keys`, which no liqo_consumer_key owns).
    async fn find(ctx: &Ctx, client: kube::Client, remote: Option<&str>) -> Result<Vec<Found>, OpError> {
        let api: Api<Secret> = Api::all(client);
        let base = format!("{},{}={}", labels::REMOTE_CLUSTER_ID, labels::MANAGED_BY, crate::kube::FIELD_MANAGER);
        Ok(crate::kube::list(ctx, &api, &by_peer(&base, labels::REMOTE_CLUSTER_ID, remote))
            .await?
            .iter()
            .filter_map(|secret| {
                let provider = label(&secret.metadata, labels::REMOTE_CLUSTER_ID)?;
                (secret.metadata.name.as_deref() == Some(key_secret_name(provider).as_str())).then(|| {
                    let ns = secret.metadata.namespace.as_deref().unwrap_or_default();
                    Found::new(format!("{ns}/{provider}"), "key Secret", Some(provider))
                })
            })
            .collect())
    }

    async fn import(&self, ctx: &Ctx, id: &str) -> Result<Value, Failure> {
        let type_name = Self::TYPE_NAME;
        let [ns, provider] = Self::IMPORT_ID.parse(type_name, id)?;
        let (ns, provider) = (ns.as_str(), provider.as_str());
        let (csr, cluster_id) = self.sound_secret(ctx, ns, provider).await?.ok_or_else(|| {
            Diagnostic::error(
                format!("Cannot import {type_name} {id}"),
                format!(
                    "Secret {ns}/{} does not exist on this cluster, or it does not hold a private key (`{PRIVATE_KEY}`) \
                     and a CSR (`{CSR}`) for that key. Create the key with this resource instead of importing it.",
                    key_secret_name(provider)
                ),
            )
        })?;
        Ok(attr::ConsumerKey {
            tenant_namespace: ns.to_string(),
            provider_cluster_id: provider.to_string(),
            cluster_id,
            csr,
            key_secret_name: key_secret_name(provider),
            ..attr::ConsumerKey::defaults()
        }
        .value())
    }
}
