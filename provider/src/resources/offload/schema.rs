//! `liqo_offload`'s attributes, its plan-time checks and the configuration generated for an imported offloading.
use liqo_schema::liqo::{
    MAPPING_DEFAULT_NAME, MAPPING_ENFORCE_SAME_NAME, MAPPING_SELECTED_NAME, POD_OFFLOADING_LOCAL,
    POD_OFFLOADING_LOCAL_AND_REMOTE, POD_OFFLOADING_REMOTE,
};
use liqo_schema::tf::{Nesting, Type, Value};

use crate::resources::lifecycle::Declared;
use crate::resources::shared::node_selector::{self, Wording};
use crate::validate::Validator;

const MAPPING_STRATEGIES: [&str; 3] = [MAPPING_DEFAULT_NAME, MAPPING_ENFORCE_SAME_NAME, MAPPING_SELECTED_NAME];
const POD_STRATEGIES: [&str; 3] = [POD_OFFLOADING_LOCAL_AND_REMOTE, POD_OFFLOADING_LOCAL, POD_OFFLOADING_REMOTE];

/// `liqo_offload`'s attributes.
pub mod attr {
    use super::*;
    use crate::attributes::*;

    attributes! {
        struct Offload;
        id: Unset = computed(Type::String).describe("The namespace name; also the import ID.");
        namespace: String = required(Type::String).replace_on_change().check(Check::Namespace).describe(
            "Namespace to offload. It must exist (create it with `kubernetes_namespace`, `kubectl create namespace` \
             or `create_namespace = true`). Changing it replaces the resource.",
        );
        create_namespace: bool = optional_computed(Type::Bool).default(Value::Bool(false)).describe(
            "Whether this resource creates `namespace` when it is missing and deletes it on destroy, with \
             everything in it (default `false`: the namespace is yours and is left alone). Meant for demos \
             without the kubernetes provider. Only a namespace this resource created (labelled \
             `app.kubernetes.io/managed-by=terraform-provider-liqo`) is ever deleted; an existing one is used as \
             it is. Setting it back to `false` releases the namespace (it stays).",
        );
        namespace_mapping_strategy: String = optional_computed(Type::String).replace_on_change().default(Value::string(MAPPING_DEFAULT_NAME)).check(Check::OneOf(&MAPPING_STRATEGIES)).describe(
            "How the remote namespace is named: `DefaultName` (default, `<namespace>-<this cluster's ID>`), \
             `EnforceSameName` (same name as `namespace`) or `SelectedName` (`remote_namespace_name`). Liqo makes \
             it immutable: changing it replaces the resource.",
        );
        // Unknown until Liqo reports it (DefaultName).
        remote_namespace_name: Value = optional_computed(Type::String).replace_on_change().check(Check::Namespace).describe(
            "Name of the namespace on the provider clusters. Choose it only with `namespace_mapping_strategy = \
             \"SelectedName\"` (required then); otherwise it is an output reported by Liqo, and a configuration \
             may only repeat the name Liqo reported (as OpenTofu's generated configuration of an imported \
             offloading does). Liqo makes it immutable: changing it replaces the resource.",
        );
        pod_offloading_strategy: String = optional_computed(Type::String).default(Value::string(POD_OFFLOADING_LOCAL_AND_REMOTE)).check(Check::OneOf(&POD_STRATEGIES)).describe(
            "Where pods of the namespace may run: `LocalAndRemote` (default), `Local` or `Remote`. Updated in place; \
             Liqo warns that pods already running against a stricter setting keep running.",
        );
        // The shared node selector terms are read and written as values (`node_selector`).
        cluster_selector: Value = nested(Nesting::List, node_selector::term::declared()).describe(
            "Which virtual nodes (remote clusters) the namespace is offloaded to: a list of node selector terms, \
             any of which may match (OR). Omit it to offload to every virtual node. Updated in place.",
        );
        offloading_phase: Option<String> = computed(Type::String).output().describe(
            "Liqo's `status.offloadingPhase`: `Ready`, or `NoClusterSelected` when no virtual node matches \
             `cluster_selector`; refreshed on every read.",
        );
        // The name of the Go provider 0.1.x.
        cluster_selector_terms: Unset = removed("`cluster_selector`, the same list of `{ match_expressions = [...] }`.");
    }
}

pub const DESCRIPTION: &str = "Offloads a namespace of this (consumer) cluster to its peered provider clusters, by managing Liqo's \
             NamespaceOffloading `offloading` in it. Create it before the workloads that should run remotely: pods \
             created before the offloading exists stay Pending.";

/// The remote name against the strategy, and the cluster selector's terms.
pub fn validate(c: &mut Validator<'_>) {
    let config = c.config;
    let offload = attr::Offload::of(config);
    // An unknown strategy is checked at the next plan.
    let strategy = match config.get(attr::namespace_mapping_strategy) {
        Value::Unknown => None,
        _ => Some(offload.namespace_mapping_strategy.as_str()),
    };
    let remote = &offload.remote_namespace_name;
    match strategy {
        Some(MAPPING_SELECTED_NAME) if remote.is_null() => c.error(
            attr::remote_namespace_name.path(),
            "Missing `remote_namespace_name` for the SelectedName strategy",
            "`namespace_mapping_strategy = \"SelectedName\"` names the remote namespace after \
             `remote_namespace_name`: set it, or choose `DefaultName` or `EnforceSameName`.",
        ),
        Some(s)
            if s != MAPPING_SELECTED_NAME
                && !remote.is_null()
                && !is_liqos_choice(s, remote, config.get(attr::namespace)) =>
        {
            c.error(
                attr::remote_namespace_name.path(),
                format!("`remote_namespace_name` cannot be set with the {s} strategy"),
                format!(
                    "With `{s}` Liqo chooses the remote name (DefaultName: `<namespace>-<this cluster's ID>`, \
                 EnforceSameName: the namespace's own name) and reports it in `remote_namespace_name`. Remove the \
                 argument, or set `namespace_mapping_strategy = \"SelectedName\"`."
                ),
            )
        }
        _ => {}
    }

    node_selector::validate(c, attr::cluster_selector, &CLUSTER_SELECTOR);
}

const CLUSTER_SELECTOR: Wording = Wording {
    example_key: "liqo.io/remote-cluster-id",
    empty_term: "Empty cluster selector term",
    empty_term_fix: "A term without match expressions matches no virtual node. Add at least one expression, or drop \
                     `cluster_selector` to offload to every virtual node.",
};

/// A configuration generated from an imported offloading (OpenTofu's `-generate-config-out` writes every optional
/// argument from state) repeats the remote name Liqo chose; that is allowed when it is the name the strategy gives:
/// the namespace's own name with EnforceSameName, `<namespace>-…` with DefaultName, whose cluster-ID suffix only the
/// plan can compare (`plan::check_default_name`). Either name unknown is no such name.
fn is_liqos_choice(strategy: &str, remote: &Value, namespace: &Value) -> bool {
    let (Some(remote), Some(namespace)) = (remote.as_str(), namespace.as_str()) else {
        return false;
    };
    match strategy {
        MAPPING_ENFORCE_SAME_NAME => remote == namespace,
        MAPPING_DEFAULT_NAME => {
            remote.strip_prefix(namespace).and_then(|r| r.strip_prefix('-')).is_some_and(|id| !id.is_empty())
        }
        _ => false,
    }
}

/// Only `SelectedName` takes `remote_namespace_name` as an input; otherwise Liqo chose it.
pub fn generated_config(mut config: Value) -> Value {
    if attr::Offload::of(&config).namespace_mapping_strategy != MAPPING_SELECTED_NAME {
        config.set(attr::remote_namespace_name, Value::Null);
    }
    config
}

/// What `liqo_offload` declares to the lifecycle driver.
pub const DECLARED: Declared = Declared {
    description: DESCRIPTION,
    attributes: attr::declared,
    validate,
    rules: super::plan::RULES,
    ..Declared::NONE
};
