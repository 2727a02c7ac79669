//! `liqo_generate`'s Terraform state: the inputs an operation works from, and the full state it records.
use liqo_schema::liqo::labels;
use liqo_schema::tf::Value;

use crate::cluster_facts::ClusterFacts;

/// What apply works from; at apply time every input is known.
pub struct Inputs {
    pub remote: String,
    pub namespace: String,
}

impl Inputs {
    pub fn from_value(v: &Value) -> Inputs {
        let s = |a: &str| v.get(a).as_str().unwrap_or_default().to_string();
        Inputs { remote: s("remote_cluster_id"), namespace: s("tenant_namespace") }
    }
}

/// The full state for `inputs` with this cluster's facts and the public key (null when not written yet).
pub fn state_of(inputs: &Inputs, facts: &ClusterFacts, public_key: Option<String>, timeouts: &Value) -> Value {
    Value::object([
        ("id", Value::string(&inputs.namespace)),
        ("remote_cluster_id", Value::string(&inputs.remote)),
        ("tenant_namespace", Value::string(&inputs.namespace)),
        ("cluster_id", Value::string(&facts.cluster_id)),
        ("pod_cidrs", Value::string_list(facts.pod_cidrs.clone())),
        ("external_cidr", Value::string(&facts.external_cidr)),
        ("api_server_url", Value::string(&facts.api_server_url)),
        ("wireguard_public_key", Value::opt_string(public_key)),
        ("key_secret_name", Value::string(labels::KEY_SECRET_NAME)),
        ("timeouts", timeouts.clone()),
    ])
}
