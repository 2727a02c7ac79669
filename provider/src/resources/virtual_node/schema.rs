//! `liqo_virtual_node`'s attributes and its plan-time checks.
use liqo_schema::liqo::labels;
use liqo_schema::tf::Type;

use crate::validate::{Validator, check_dns_label};

/// `liqo_virtual_node`'s attributes.
pub mod attr {
    use super::*;
    use crate::attributes::*;

    attributes! {
        id: computed(Type::String).describe("`<tenant_namespace>/<name>`; also the import ID.");
        name: required(Type::String).replace_on_change().describe(
            "Name of the VirtualNode and of the core Node Liqo registers for it. Must be unique among this \
             cluster's nodes. Changing it replaces the resource.",
        );
        tenant_namespace: required(Type::String).replace_on_change().check(Check::Namespace).describe(
            "Tenant namespace for the provider on this (consumer) cluster, where the ResourceSlice is: \
             `liqo_peer.<name>.tenant_namespace`. Changing it replaces the resource.",
        );
        provider_cluster_id: required(Type::String).replace_on_change().check(Check::ClusterId).describe(
            "Liqo cluster ID of the provider cluster the node runs pods on: `liqo_peer.<name>.provider_cluster_id`. \
             Changing it replaces the resource.",
        );
        resource_slice_name: required(Type::String).replace_on_change().check(Check::ObjectName {
            kind: "ResourceSlice",
            fix: "Use `liqo_peer.<name>.resource_slice_name`.",
        }).describe(
            "The ResourceSlice whose credentials the node's virtual kubelet uses: `liqo_peer.<name>.resource_slice_name` \
             of a liqo_peer with `create_virtual_node = false` (with `true`, Liqo makes a virtual node of its own for \
             the slice, and apply refuses to make a second one). Changing it replaces the resource.",
        );
        resources: required(Type::map(Type::String)).check(Check::Quantities).describe(
            "Resources the node offers, as Kubernetes quantities keyed by resource name: usually \
             `liqo_peer.<name>.accepted_resources`, what the provider granted the slice (a resize of the slice then \
             updates the node in the same apply). Updated in place.",
        );
        labels: optional(Type::map(Type::String)).check(Check::Labels).describe(
            "Labels of the Node, besides Liqo's own (`liqo.io/type`, `liqo.io/remote-cluster-id`, …), e.g. \
             `{ \"example.com/accelerator\" = \"gpu\" }`: what workloads select this node by (`nodeSelector`, \
             affinity) and what liqo_offload's `cluster_selector` matches. Updated in place: Liqo's virtual kubelet \
             relabels the Node.",
        );
    }
}

pub const DESCRIPTION: &str = "A virtual node of this (consumer) cluster for a provider's ResourceSlice, with labels of your \
             choice, as `liqoctl create virtualnode --resource-slice-name` makes: writes Liqo's VirtualNode and waits \
             for its Node to be Ready with those labels. Use it with a liqo_peer whose `create_virtual_node` is \
             `false`, e.g. to give each of several slices of one provider (a GPU slice) a node that workloads can \
             select. Destroying it removes the node (Liqo drains it first); the slice stays.";

/// The node's name is a Node name Liqo also gives the virtual kubelet's Deployment; Liqo owns its own label.
pub fn validate(c: &mut Validator<'_>) {
    let config = c.config;
    if let Some(name) = config.get(attr::name).as_str()
        && let Err(why) = check_dns_label(name)
    {
        c.error(
            attr::name.path(),
            "Invalid virtual node name for `name`",
            format!(
                "`{name}` {why}. Liqo names the Node and its virtual kubelet after it, so it must be a DNS label: \
                 lowercase letters, digits and '-', at most 63 characters."
            ),
        );
    }
    if config.get(attr::labels).entries().is_some_and(|l| l.contains_key(labels::REMOTE_CLUSTER_ID)) {
        c.error(
            attr::labels.path().key(labels::REMOTE_CLUSTER_ID),
            format!("`{}` is Liqo's label", labels::REMOTE_CLUSTER_ID),
            "Liqo sets it to the provider cluster ID on every virtual node (from `provider_cluster_id`); remove it \
             from `labels`.",
        );
    }
}
