//! `liqo_generate`'s Terraform state: the inputs an operation works from, and the full state it records.
use liqo_schema::liqo::labels;
use liqo_schema::tf::Value;

use super::schema::attr;
use crate::attributes::Key;
use crate::cluster_facts::ClusterFacts;

/// What apply works from; at apply time every input is known.
pub struct Inputs {
    pub remote: String,
    pub namespace: String,
}

impl Inputs {
    pub fn from_value(v: &Value) -> Inputs {
        let s = |a: Key| v.get(a).as_str().unwrap_or_default().to_string();
        Inputs { remote: s(attr::remote_cluster_id), namespace: s(attr::tenant_namespace) }
    }
}

/// The full state for `inputs` with this cluster's facts and the public key (null when not written yet).
pub fn state_of(inputs: &Inputs, facts: &ClusterFacts, public_key: Option<String>) -> Value {
    Value::object([
        (attr::remote_cluster_id, Value::string(&inputs.remote)),
        (attr::tenant_namespace, Value::string(&inputs.namespace)),
        (attr::cluster_id, Value::string(&facts.cluster_id)),
        (attr::pod_cidrs, Value::string_list(facts.pod_cidrs.clone())),
        (attr::external_cidr, Value::string(&facts.external_cidr)),
        (attr::api_server_url, Value::string(&facts.api_server_url)),
        (attr::wireguard_public_key, Value::opt_string(public_key)),
        (attr::key_secret_name, Value::string(labels::KEY_SECRET_NAME)),
    ])
}
