//! List resources (`list` blocks of `terraform query`, Terraform ≥ 1.14): one per managed type, each finding in
//! the cluster of its provider block the objects that type manages — made by this provider, by `liqoctl peer`
//! or by hand — with the identity that imports them. Each found object comes with the state import and read
//! give it, so `terraform query -generate-config-out=…` writes configuration that plans empty once imported.
//!
//! An object the managed type cannot adopt (import refuses it) is not listed: the query shows a warning with
//! import's reason instead, so no generated block would plan a replacement unannounced.
use crate::cluster_api::ClusterApi;
use crate::errors::{not_adoptable, op_diags};
use crate::kube::OpError;
use crate::protocol::{Ctx, IdentitySchema, ListResource, Listed, Resource};
use crate::resources::{consumer_key, gateway, generate, offload, peer, tenant};
use crate::validate::Validator;
use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::Api;
use liqo_schema::liqo::{GatewayClient, GatewayServer, NamespaceOffloading, ResourceSlice, Tenant, labels};
use liqo_schema::tf::{Block, Diagnostics, Schema, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Every list resource, bound to the provider block's cluster.
pub fn all(cluster: &Arc<ClusterApi>) -> Vec<Arc<dyn ListResource>> {
    listers(cluster).into_iter().map(|l| Arc::new(l) as Arc<dyn ListResource>).collect()
}

fn listers(cluster: &Arc<ClusterApi>) -> Vec<Lister> {
    let lister = |kind: Kind, resource: Arc<dyn Resource>| Lister { kind, cluster: cluster.clone(), resource };
    vec![
        lister(Kind::Generate, generate::resource(cluster.clone())),
        lister(Kind::Gateway, gateway::resource(cluster.clone())),
        lister(Kind::Tenant, tenant::resource(cluster.clone())),
        lister(Kind::ConsumerKey, consumer_key::resource(cluster.clone())),
        lister(Kind::Peer, peer::resource(cluster.clone())),
        lister(Kind::Offload, offload::resource(cluster.clone())),
    ]
}

/// The import IDs of every managed type's objects on the cluster, keyed by type name (for clients without
/// list resources: the `liqo_import_ids` data source).
pub async fn import_ids(
    ctx: &Ctx,
    cluster: &Arc<ClusterApi>,
    remote: Option<&str>,
) -> Result<BTreeMap<&'static str, Vec<String>>, Diagnostics> {
    let client = cluster.client().await?;
    let mut ids = BTreeMap::new();
    for lister in listers(cluster) {
        let found = lister.find(ctx, client.clone(), remote).await.map_err(|e| op_diags(&e))?;
        ids.insert(lister.resource.type_name(), found.into_iter().map(|f| f.id).collect());
    }
    Ok(ids)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Generate,
    Gateway,
    Tenant,
    ConsumerKey,
    Peer,
    Offload,
}

const TENANT_NAMESPACE: (&str, &str) = ("tenant_namespace", "Name of the tenant namespace the object lives in.");

impl Kind {
    fn identity(self) -> IdentitySchema {
        let parts = match self {
            Kind::Generate => vec![TENANT_NAMESPACE],
            Kind::Gateway => {
                vec![TENANT_NAMESPACE, ("name", "Name of the GatewayServer or GatewayClient (the peer's cluster ID).")]
            }
            Kind::Tenant => {
                vec![TENANT_NAMESPACE, ("consumer_cluster_id", "Name of the Tenant: the consumer's cluster ID.")]
            }
            Kind::ConsumerKey => {
                vec![TENANT_NAMESPACE, ("provider_cluster_id", "Liqo cluster ID of the provider the key is for.")]
            }
            Kind::Peer => vec![TENANT_NAMESPACE, ("resource_slice_name", "Name of the ResourceSlice.")],
            Kind::Offload => vec![("namespace", "The offloaded namespace (holding NamespaceOffloading `offloading`).")],
        };
        IdentitySchema { parts }
    }

    /// What `remote_cluster_id` filters on, for the docs of the list block.
    fn filter_meaning(self) -> &'static str {
        match self {
            Kind::Generate => "tenant namespaces for that peer",
            Kind::Gateway => "the gateway to that peer",
            Kind::Tenant => "the Tenant of that consumer",
            Kind::ConsumerKey => "the key for that provider",
            Kind::Peer => "ResourceSlices asking that provider",
            Kind::Offload => "namespaces offloaded to that provider",
        }
    }
}

struct Lister {
    kind: Kind,
    cluster: Arc<ClusterApi>,
    resource: Arc<dyn Resource>,
}

/// One object found: its import ID and what `terraform query` shows.
struct Found {
    id: String,
    display_name: String,
}

fn found(id: String, what: &str, peer: Option<&str>) -> Found {
    let display_name = match peer {
        Some(peer) => format!("{what} {id} (peer {peer})"),
        None => format!("{what} {id}"),
    };
    Found { id, display_name }
}

fn label<'a>(meta: &'a kube::api::ObjectMeta, key: &str) -> Option<&'a str> {
    meta.labels.as_ref()?.get(key).map(String::as_str)
}

fn namespaced_id(meta: &kube::api::ObjectMeta) -> String {
    format!("{}/{}", meta.namespace.as_deref().unwrap_or_default(), meta.name.as_deref().unwrap_or_default())
}

impl Lister {
    /// The objects of this kind in the cluster, for one peer when `remote` is set, sorted by ID so the generated
    /// names (`<list name>_<index>`) are stable from one query to the next.
    async fn find(&self, ctx: &Ctx, client: kube::Client, remote: Option<&str>) -> Result<Vec<Found>, OpError> {
        let by_peer = |base: &str, key: &str| match remote {
            Some(r) => format!("{base},{key}={r}"),
            None => base.to_string(),
        };
        let mut out = match self.kind {
            Kind::Generate => {
                let api: Api<Namespace> = Api::all(client);
                let selector = by_peer(labels::TENANT_NAMESPACE, labels::REMOTE_CLUSTER_ID);
                crate::kube::list(ctx, &api, &selector)
                    .await?
                    .iter()
                    .map(|ns| {
                        let name = ns.metadata.name.clone().unwrap_or_default();
                        found(name, "tenant namespace", label(&ns.metadata, labels::REMOTE_CLUSTER_ID))
                    })
                    .collect()
            }
            Kind::Gateway => {
                let selector = by_peer(labels::REMOTE_CLUSTER_ID, labels::REMOTE_CLUSTER_ID);
                let servers: Api<GatewayServer> = Api::all(client.clone());
                let clients: Api<GatewayClient> = Api::all(client);
                let mut all: Vec<Found> = crate::kube::list(ctx, &servers, &selector)
                    .await?
                    .iter()
                    .map(|g| {
                        found(
                            namespaced_id(&g.metadata),
                            "GatewayServer",
                            label(&g.metadata, labels::REMOTE_CLUSTER_ID),
                        )
                    })
                    .collect();
                all.extend(crate::kube::list(ctx, &clients, &selector).await?.iter().map(|g| {
                    found(namespaced_id(&g.metadata), "GatewayClient", label(&g.metadata, labels::REMOTE_CLUSTER_ID))
                }));
                all
            }
            Kind::Tenant => {
                let api: Api<Tenant> = Api::all(client);
                crate::kube::list(ctx, &api, "")
                    .await?
                    .iter()
                    .filter(|t| remote.is_none_or(|r| t.spec.cluster_id.as_deref() == Some(r)))
                    .map(|t| found(namespaced_id(&t.metadata), "Tenant", t.spec.cluster_id.as_deref()))
                    .collect()
            }
            Kind::ConsumerKey => {
                // Only the key Secrets this provider made: a peering made by `liqoctl peer` has none (Liqo keeps
                // its key in `authentication-keys`, which no liqo_consumer_key owns).
                let api: Api<Secret> = Api::all(client);
                let base =
                    format!("{},{}={}", labels::REMOTE_CLUSTER_ID, labels::MANAGED_BY, crate::kube::FIELD_MANAGER);
                crate::kube::list(ctx, &api, &by_peer(&base, labels::REMOTE_CLUSTER_ID))
                    .await?
                    .iter()
                    .filter_map(|secret| {
                        let provider = label(&secret.metadata, labels::REMOTE_CLUSTER_ID)?;
                        (secret.metadata.name.as_deref() == Some(consumer_key::key_secret_name(provider).as_str()))
                            .then(|| {
                                let ns = secret.metadata.namespace.as_deref().unwrap_or_default();
                                found(format!("{ns}/{provider}"), "key Secret", Some(provider))
                            })
                    })
                    .collect()
            }
            Kind::Peer => {
                // Only the consumer's own slices: the provider's replicated copies carry `liqo.io/replicated`.
                let api: Api<ResourceSlice> = Api::all(client);
                let selector = by_peer(&format!("{}={}", labels::REPLICATION, labels::TRUE), labels::REMOTE_ID);
                crate::kube::list(ctx, &api, &selector)
                    .await?
                    .iter()
                    .map(|rs| {
                        found(namespaced_id(&rs.metadata), "ResourceSlice", label(&rs.metadata, labels::REMOTE_ID))
                    })
                    .collect()
            }
            Kind::Offload => {
                let api: Api<NamespaceOffloading> = Api::all(client);
                crate::kube::list(ctx, &api, "")
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
                    .map(|o| found(o.metadata.namespace.clone().unwrap_or_default(), "offloaded namespace", None))
                    .collect()
            }
        };
        out.sort_by(|a: &Found, b: &Found| a.id.cmp(&b.id));
        Ok(out)
    }

    /// The state import and read give the object: what Terraform records after importing it.
    async fn state(&self, ctx: &Ctx, id: &str) -> Result<Value, Diagnostics> {
        let imported = self.resource.import(ctx, id).await?;
        let Some(first) = imported.into_iter().next() else {
            return Ok(Value::Null);
        };
        let read = self.resource.read(ctx, first.state, first.private).await;
        if read.diagnostics.has_errors() {
            return Err(read.diagnostics);
        }
        Ok(read.new_state)
    }
}

/// A list resource's configuration.
mod attr {
    use crate::attributes::*;
    use liqo_schema::tf::Type;

    attributes! {
        /// Described per type.
        remote_cluster_id: optional(Type::String).check(Check::ClusterId);
    }
}

#[async_trait]
impl ListResource for Lister {
    fn type_name(&self) -> &'static str {
        self.resource.type_name()
    }

    fn schema(&self) -> Schema {
        Schema {
            version: 0,
            block: Block::new(
                format!(
                    "Lists the {} objects that exist on the cluster of the provider block, whoever made them \
                     (this provider, `liqoctl peer`, or by hand), with the identity that imports them ({}: the \
                     parts of the import ID). Objects import would refuse are left out, with a warning saying \
                     why. See the guide \"Adopting peerings made with liqoctl\".",
                    self.resource.type_name(),
                    self.kind.identity().parts.iter().map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                ),
                attr::declared()
                    .into_iter()
                    .map(|d| {
                        let text = format!(
                            "Liqo cluster ID of one peer: list only {}. Omit it to list them all.",
                            self.kind.filter_meaning()
                        );
                        d.describe(text).attribute()
                    })
                    .collect(),
            ),
        }
    }

    fn identity(&self) -> IdentitySchema {
        self.kind.identity()
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        let mut c = Validator::new(config);
        c.declared(&attr::declared(), config, None);
        c.finish()
    }

    async fn list(&self, ctx: &Ctx, config: Value, include_state: bool) -> Result<Vec<Listed>, Diagnostics> {
        let remote = config.get(attr::remote_cluster_id).as_str().map(str::to_string);
        let client = self.cluster.client().await?;
        let objects = self.find(ctx, client, remote.as_deref()).await.map_err(|e| op_diags(&e))?;
        let mut listed = Vec::with_capacity(objects.len());
        for Found { id, display_name } in objects {
            // Import decides whether the object can be adopted as it is; its refusal is the reason shown.
            let (state, diagnostics) = match self.state(ctx, &id).await {
                Ok(state) if include_state => (state, Diagnostics::new()),
                Ok(_) => (Value::Null, Diagnostics::new()),
                Err(d) => (Value::Null, not_adoptable(self.resource.type_name(), &id, d)),
            };
            listed.push(Listed { display_name, id, state, diagnostics });
        }
        Ok(listed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_name_the_parts_of_each_import_id() {
        let cases = [
            (Kind::Generate, "liqo-tenant-rome", vec![("tenant_namespace", "liqo-tenant-rome")]),
            (Kind::Gateway, "liqo-tenant-rome/rome", vec![("tenant_namespace", "liqo-tenant-rome"), ("name", "rome")]),
            (
                Kind::Tenant,
                "liqo-tenant-rome/rome",
                vec![("tenant_namespace", "liqo-tenant-rome"), ("consumer_cluster_id", "rome")],
            ),
            (
                Kind::Peer,
                "liqo-tenant-milan/milan",
                vec![("tenant_namespace", "liqo-tenant-milan"), ("resource_slice_name", "milan")],
            ),
            (
                Kind::ConsumerKey,
                "liqo-tenant-milan/milan",
                vec![("tenant_namespace", "liqo-tenant-milan"), ("provider_cluster_id", "milan")],
            ),
            (Kind::Offload, "demo", vec![("namespace", "demo")]),
        ];
        for (kind, id, parts) in cases {
            let identity = kind.identity();
            let value = identity.of_id(id);
            assert_eq!(value, Value::object(parts.into_iter().map(|(k, v)| (k, Value::string(v)))), "{kind:?}");
            assert_eq!(identity.import_id(&value).unwrap(), id, "{kind:?} round trip");
        }
    }

    #[test]
    fn an_id_of_another_shape_has_no_identity_and_a_partial_identity_no_id() {
        let peer = Kind::Peer.identity();
        assert!(peer.of_id("only-a-namespace").is_null());
        assert!(peer.of_id("a/b/c").is_null());
        assert!(peer.of_id("a/").is_null());
        let partial = Value::object([("tenant_namespace", Value::string("liqo-tenant-milan"))]);
        let err = peer.import_id(&partial).unwrap_err();
        assert!(err.iter().any(|d| d.summary.contains("`resource_slice_name` is missing")), "{err:?}");
    }
}
