//! `data "liqo_import_ids"`: the import IDs of the objects each managed type would adopt on this cluster, for
//! clients without `terraform query` (OpenTofu, Terraform < 1.14). Found as the list resources find them
//! (`crate::list`): tenant namespaces, gateways, Tenants, the consumer's ResourceSlices and offloaded namespaces,
//! whoever made them. Nothing is written; the data source only reads.
use crate::cluster_api::ClusterApi;
use crate::list;
use crate::protocol::{Ctx, DataSource};
use crate::validate::Validator;
use async_trait::async_trait;
use liqo_schema::tf::{Diagnostics, Schema, Value};
use std::sync::Arc;

const TYPE_NAME: &str = "liqo_import_ids";

pub struct ImportIdsDataSource {
    cluster: Arc<ClusterApi>,
}

impl ImportIdsDataSource {
    pub fn new(cluster: Arc<ClusterApi>) -> ImportIdsDataSource {
        ImportIdsDataSource { cluster }
    }
}

/// `liqo_import_ids`' attributes.
pub mod attr {
    use crate::attributes::*;
    use liqo_schema::tf::Type;

    attributes! {
        remote_cluster_id: optional(Type::String).check(Check::ClusterId).describe(
            "Liqo cluster ID of one peer: list only the objects of the peering with it. Omit it to list all.",
        );
        ids: computed(Type::map(Type::list(Type::String))).describe(
            "Import IDs keyed by resource type (`liqo_generate`, `liqo_gateway`, `liqo_tenant`, \
             `liqo_consumer_key`, `liqo_peer`, `liqo_offload`), each list sorted; a type with nothing to \
             adopt here has an empty list.",
        );
    }
}

fn schema() -> Schema {
    Schema {
        version: 0,
        block: crate::attributes::block(
            "Import IDs of the Liqo objects on this cluster that each resource type of this provider can adopt, \
             whoever made them (`liqoctl peer`, by hand, or this provider): the IDs `import` blocks take on \
             OpenTofu and Terraform before 1.14, which have no `terraform query`.",
            &attr::declared(),
        ),
    }
}

#[async_trait]
impl DataSource for ImportIdsDataSource {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        let mut c = Validator::new(config);
        c.declared(&attr::declared(), config, None);
        c.finish()
    }

    async fn read(&self, ctx: &Ctx, config: Value) -> (Value, Diagnostics) {
        let remote = config.get(attr::remote_cluster_id).as_str().map(str::to_string);
        match list::import_ids(ctx, &self.cluster, remote.as_deref()).await {
            Ok(ids) => {
                let ids = ids.into_iter().map(|(ty, ids)| (ty.to_string(), Value::string_list(ids))).collect();
                let mut state = config;
                state.set(attr::ids, Value::Map(ids));
                (state, Diagnostics::new())
            }
            Err(d) => (Value::Null, d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_describes_everything_and_takes_only_the_filter() {
        let s = schema();
        for a in &s.block.attributes {
            assert!(!a.description.is_empty(), "{} has no description", a.name);
        }
        assert!(s.block.attribute("remote_cluster_id").unwrap().optional);
        let ids = s.block.attribute("ids").unwrap();
        assert!(ids.computed && !ids.optional);
    }
}
