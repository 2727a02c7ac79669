//! `liqo_generate`'s attributes, its plan-time checks and the schema versions its state may come in.
use liqo_schema::tf::Type;

use crate::resources::lifecycle::Declared;

/// `liqo_generate`'s attributes.
pub mod attr {
    use super::*;
    use crate::attributes::*;

    attributes! {
        struct Generate;
        id: Unset = computed(Type::String).describe("Name of the tenant namespace (the import ID).");
        remote_cluster_id: String = required(Type::String).replace_on_change().check(Check::ClusterId).describe(
            "Liqo cluster ID of the peer cluster (e.g. `liqo_generate.<peer>.cluster_id`, or a literal such as `rome`). \
             Changing it replaces the resource.",
        );
        tenant_namespace: String = optional_computed(Type::String).replace_on_change().check(Check::Namespace).describe(
            "Namespace on this cluster dedicated to the peer (default `liqo-tenant-<remote_cluster_id>`, Liqo's own \
             name). An existing namespace is adopted and kept on destroy; one created by this resource is deleted on \
             destroy, with everything in it. Changing it replaces the resource.",
        );
        cluster_id: String = computed(Type::String).output().describe(
            "This cluster's Liqo cluster ID (`CLUSTER_ID` of the ConfigMap labelled \
             `app.kubernetes.io/name=clusterid-configmap` in the Liqo namespace). Give it to the peer as its \
             `remote_cluster_id`.",
        );
        pod_cidrs: Vec<String> = computed(Type::list(Type::String)).output()
            .describe("This cluster's pod CIDR(s) as Liqo's IPAM assigned them (`status.cidr` of the pod-cidr Networks).");
        external_cidr: String = computed(Type::String).output()
            .describe("This cluster's external CIDR (`status.cidr` of the external-cidr Network).");
        api_server_url: String = computed(Type::String).output().describe("This cluster's API server URL, as the provider block reaches it.");
        wireguard_public_key: Option<String> = computed(Type::String).output().describe(
            "Public half of this side's WireGuard key (standard base64, 44 characters); give it to the peer's \
             `liqo_gateway` as `remote_public_key`. The private half stays in the `gw-keys` Secret and never enters \
             Terraform state.",
        );
        key_secret_name: Option<String> = computed(Type::String).describe(
            "Name of the WireGuard key Secret in `tenant_namespace`: `gw-keys` when this resource wrote it; for an \
             imported peering the Secret found (Liqo's own `gw-<gateway>`), or null when it has no networking.",
        );
        // Names of the Go provider 0.0.x (Liqo 0.x): its liqo_generate took no arguments but `liqo_namespace`
        // and gave these to its liqo_peer.
        liqo_namespace: Unset = removed("`liqo_namespace` in the provider block.");
        cluster_name: Unset = removed("nothing: Liqo 1.x knows clusters by cluster ID only (`cluster_id`).");
        auth_ep: Unset = removed(
            "`api_server_url`: Liqo 1.x has no authentication endpoint; the consumer reaches the provider's API server.",
        );
        local_token: Unset = removed("no token in Liqo 1.x: the provider signs the consumer's own key (liqo_consumer_key, liqo_tenant, liqo_peer), so no secret passes through Terraform.");
    }
}

pub const DESCRIPTION: &str = "Prepares this cluster for a peering with one remote cluster: creates (or adopts) the tenant namespace for \
             the peer and a WireGuard key pair for the gateway, generated inside the provider and written straight to \
             the cluster, and exposes the values the peer needs (cluster ID, CIDRs, API server URL, public key). \
             Declare one per cluster and peer, each with the provider block of its own cluster.";

/// What `liqo_generate` declares to the lifecycle driver.
pub const DECLARED: Declared =
    Declared { description: DESCRIPTION, attributes: attr::declared, rules: super::plan::RULES, ..Declared::NONE };
