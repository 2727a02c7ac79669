//! `liqo_generate`'s Terraform state: the full state an operation records.
use super::schema::attr;
use crate::cluster_facts::ClusterFacts;

/// The full state of the peering side `generate` names (its peer and tenant namespace), with this cluster's facts
/// and the key Secret: its name and its public key (null when not written yet, or for a peering without one).
pub fn state_of(
    generate: &attr::Generate,
    facts: &ClusterFacts,
    key_secret_name: Option<String>,
    public_key: Option<String>,
) -> attr::Generate {
    attr::Generate {
        remote_cluster_id: generate.remote_cluster_id.clone(),
        tenant_namespace: generate.tenant_namespace.clone(),
        cluster_id: facts.cluster_id.clone(),
        pod_cidrs: facts.pod_cidrs.clone(),
        external_cidr: facts.external_cidr.clone(),
        api_server_url: facts.api_server_url.clone(),
        wireguard_public_key: public_key,
        key_secret_name,
        ..attr::Generate::defaults()
    }
}
