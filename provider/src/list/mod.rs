//! List resources (`list` blocks of `terraform query`, Terraform ≥ 1.14): one per managed type, each finding in
//! the cluster of its provider block the objects that type manages — made by this provider, by `liqoctl peer`
//! or by hand — with the identity that imports them. Each found object comes with the state import and read
//! give it, so `terraform query -generate-config-out=…` writes configuration that plans empty once imported.
//!
//! An object the managed type cannot adopt (import refuses it) is not listed: the query shows a warning with
//! import's reason instead, so no generated block would plan a replacement unannounced.
use crate::cluster_api::ClusterApi;
use crate::errors::{not_adoptable, op_diags};
use crate::import_id::Found;
use crate::kube::OpError;
use crate::protocol::{Ctx, IdentitySchema, ListResource, Listed};
use crate::resources::lifecycle::Managed;
use crate::validate::Validator;
use async_trait::async_trait;
use liqo_schema::tf::{Block, Diagnostics, Schema, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Every list resource, bound to the provider block's cluster: one per managed type.
pub fn all(cluster: &Arc<ClusterApi>) -> Vec<Arc<dyn ListResource>> {
    listers(cluster).into_iter().map(|l| Arc::new(l) as Arc<dyn ListResource>).collect()
}

fn listers(cluster: &Arc<ClusterApi>) -> Vec<Lister> {
    crate::resources::all(cluster).into_iter().map(|resource| Lister { cluster: cluster.clone(), resource }).collect()
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

struct Lister {
    cluster: Arc<ClusterApi>,
    resource: Arc<dyn Managed>,
}

impl Lister {
    /// The objects of this type in the cluster, for one peer when `remote` is set, sorted by ID so the generated
    /// names (`<list name>_<index>`) are stable from one query to the next.
    async fn find(&self, ctx: &Ctx, client: kube::Client, remote: Option<&str>) -> Result<Vec<Found>, OpError> {
        let mut out = self.resource.find(ctx, client, remote).await?;
        out.sort_by(|a, b| a.id.cmp(&b.id));
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
                    self.resource
                        .import_id()
                        .parts
                        .iter()
                        .map(|(n, _)| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                attr::declared()
                    .into_iter()
                    .map(|d| {
                        let text = format!(
                            "Liqo cluster ID of one peer: list only {}. Omit it to list them all.",
                            self.resource.listed_for_peer()
                        );
                        d.describe(text).attribute()
                    })
                    .collect(),
            ),
        }
    }

    fn identity(&self) -> IdentitySchema {
        self.resource.import_id().identity()
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

    fn identity(type_name: &str) -> IdentitySchema {
        let types = crate::resources::all(&Arc::new(ClusterApi::default()));
        types.iter().find(|t| t.type_name() == type_name).expect("a managed type").import_id().identity()
    }

    #[test]
    fn identities_name_the_parts_of_each_import_id() {
        let cases = [
            ("liqo_generate", "liqo-tenant-rome", vec![("tenant_namespace", "liqo-tenant-rome")]),
            ("liqo_gateway", "liqo-tenant-rome/rome", vec![("tenant_namespace", "liqo-tenant-rome"), ("name", "rome")]),
            (
                "liqo_tenant",
                "liqo-tenant-rome/rome",
                vec![("tenant_namespace", "liqo-tenant-rome"), ("consumer_cluster_id", "rome")],
            ),
            (
                "liqo_peer",
                "liqo-tenant-milan/milan",
                vec![("tenant_namespace", "liqo-tenant-milan"), ("resource_slice_name", "milan")],
            ),
            (
                "liqo_consumer_key",
                "liqo-tenant-milan/milan",
                vec![("tenant_namespace", "liqo-tenant-milan"), ("provider_cluster_id", "milan")],
            ),
            ("liqo_offload", "demo", vec![("namespace", "demo")]),
        ];
        for (kind, id, parts) in cases {
            let identity = identity(kind);
            let value = identity.of_id(id);
            assert_eq!(value, Value::object(parts.into_iter().map(|(k, v)| (k, Value::string(v)))), "{kind:?}");
            assert_eq!(identity.import_id(&value).unwrap(), id, "{kind:?} round trip");
        }
    }

    #[test]
    fn an_id_of_another_shape_has_no_identity_and_a_partial_identity_no_id() {
        let peer = identity("liqo_peer");
        assert!(peer.of_id("only-a-namespace").is_null());
        assert!(peer.of_id("a/b/c").is_null());
        assert!(peer.of_id("a/").is_null());
        let partial = Value::object([("tenant_namespace", Value::string("liqo-tenant-milan"))]);
        let err = peer.import_id(&partial).unwrap_err();
        assert!(err.iter().any(|d| d.summary.contains("`resource_slice_name` is missing")), "{err:?}");
    }
}
