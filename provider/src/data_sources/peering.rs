//! `data "liqo_peering"`: the state of the peering with one remote cluster as this cluster's Liqo sees it, read
//! from the cluster-scoped ForeignCluster (core.liqo.io/v1beta1) that Liqo names after the peer's cluster ID
//! (reference §3.15). Liqo's ForeignCluster controller creates it as soon as any peering object on this cluster
//! names the peer, and writes its role, tenant namespaces and one status per module (networking,
//! authentication, offloading). The data source reports the status exactly as Liqo wrote it: with a Secret-only
//! control-plane identity (what liqo_peer writes) Liqo records the API server URL and no tenant namespace. Module health follows `liqoctl info` (reference §5.1): `Disabled` when the module
//! is not enabled, `Healthy` when it is and every condition is `Established` or `Ready`, else `Unhealthy`.
//!
//! Nothing is written; the data source only reads.
use crate::cluster_api::ClusterApi;
use crate::errors::op_diags;
use crate::protocol::{Ctx, DataSource};
use crate::validate::Validator;
use async_trait::async_trait;
use kube::api::Api;
use liqo_schema::liqo::core::ROLE_UNKNOWN;
use liqo_schema::liqo::{Configuration, ForeignCluster, LiqoCondition, Module, Modules, labels};
use liqo_schema::tf::{Diagnostic, Diagnostics, Schema, Value};
use std::sync::Arc;

const TYPE_NAME: &str = "liqo_peering";

/// The module statuses `liqoctl info` prints.
const HEALTHY: &str = "Healthy";
const UNHEALTHY: &str = "Unhealthy";
const DISABLED: &str = "Disabled";

/// `liqoctl info`'s status of one module.
fn module_status(module: &Module) -> &'static str {
    match (module.enabled, module.is_healthy()) {
        (false, _) => DISABLED,
        (true, true) => HEALTHY,
        (true, false) => UNHEALTHY,
    }
}

/// True when at least one module is enabled and every enabled module is healthy. A peering with no module
/// enabled (a ForeignCluster whose status Liqo has not written yet, or whose peering objects are all gone) is
/// not reported healthy: there is nothing working to vouch for.
fn peering_healthy(modules: &Modules) -> bool {
    let all = [&modules.networking, &modules.authentication, &modules.offloading];
    all.iter().any(|m| m.enabled) && all.iter().filter(|m| m.enabled).all(|m| module_status(m) == HEALTHY)
}

fn condition_value(c: &LiqoCondition) -> Value {
    use attr::module::condition;
    Value::object([
        (condition::r#type, Value::string(&c.type_)),
        (condition::status, Value::string(&c.status)),
        (condition::reason, Value::opt_string(c.reason.clone())),
        (condition::message, Value::opt_string(c.message.clone())),
    ])
}

fn module_value(module: &Module) -> Value {
    Value::object([
        (attr::module::enabled, Value::Bool(module.enabled)),
        (attr::module::status, Value::string(module_status(module))),
        (attr::module::conditions, Value::List(module.conditions.iter().flatten().map(condition_value).collect())),
    ])
}

/// The data source's state from the ForeignCluster. A status Liqo has not written yet reads as role `Unknown`
/// with every module disabled (what Liqo's own defaults say).
fn state(remote_cluster_id: &str, fc: &ForeignCluster, configuration: Option<&Configuration>) -> Value {
    let status = fc.status.clone().unwrap_or_default();
    let modules = status.modules.unwrap_or_default();
    let role = Some(status.role).filter(|r| !r.is_empty()).unwrap_or_else(|| ROLE_UNKNOWN.to_string());
    let namespaces = status.tenant_namespace.unwrap_or_default();
    let remapped = configuration.map(Configuration::remapped);
    let pods = remapped.as_ref().map(|r| Value::string_list(r.pods())).unwrap_or(Value::Null);
    let external = Value::opt_string(remapped.as_ref().and_then(|r| r.first_external()));
    Value::object([
        (attr::id, Value::string(remote_cluster_id)),
        (attr::remote_cluster_id, Value::string(remote_cluster_id)),
        (attr::role, Value::string(role)),
        (attr::api_server_url, Value::opt_string(status.api_server_url.filter(|u| !u.is_empty()))),
        (attr::tenant_namespace_local, Value::opt_string(namespaces.local.filter(|n| !n.is_empty()))),
        (attr::tenant_namespace_remote, Value::opt_string(namespaces.remote.filter(|n| !n.is_empty()))),
        (attr::remapped_pod_cidrs, pods),
        (attr::remapped_external_cidr, external),
        (attr::networking, module_value(&modules.networking)),
        (attr::authentication, module_value(&modules.authentication)),
        (attr::offloading, module_value(&modules.offloading)),
        (attr::api_server_status, Value::opt_string(crate::gone::api_server_condition(fc).map(|c| c.status.clone()))),
        (attr::permanently_unreachable, Value::Bool(crate::gone::marked_gone(fc))),
        (attr::healthy, Value::Bool(peering_healthy(&modules) && crate::gone::unreachable(fc).is_none())),
    ])
}

/// A plan that reads the peering warns while Liqo reports the peer's API server unreachable, before anyone runs a
/// destroy that would wait for it.
fn unreachable_warning(fc: &ForeignCluster) -> Diagnostics {
    match crate::gone::unreachable(fc) {
        None => Diagnostics::new(),
        Some(seen) => Diagnostic::warning(
            "Liqo reports the peer cluster unreachable",
            format!(
                "{seen}.\nWhile it is, Liqo cannot unpeer from it: a destroy of this peering would wait for it. If \
                 it is only down for now, wait for it; if it is gone for good, see docs/guides/day-2.md \
                 (`permanently_unreachable`, `permanently_unreachable_peers`)."
            ),
        )
        .into(),
    }
}

/// Liqo keeps one Configuration per peer; with several, which one holds the peer's addresses is not known (liqoctl
/// refuses too), so the remapped CIDRs stay null and the read says which.
fn several_configurations(remote_cluster_id: &str, found: &[Configuration]) -> Diagnostic {
    let names: Vec<String> = found
        .iter()
        .map(|c| {
            format!("{}/{}", c.metadata.namespace.as_deref().unwrap_or(""), c.metadata.name.as_deref().unwrap_or(""))
        })
        .collect();
    Diagnostic::warning(
        format!("Several Configurations for peer {remote_cluster_id}"),
        format!(
            "Configurations {} are all labelled liqo.io/remote-cluster-id={remote_cluster_id}; Liqo expects one per \
             peer, so `remapped_pod_cidrs` and `remapped_external_cidr` are null. Delete the ones no gateway uses.",
            names.join(", ")
        ),
    )
}

fn not_found(remote_cluster_id: &str) -> Diagnostic {
    Diagnostic::error(
        format!("ForeignCluster {remote_cluster_id} not found"),
        format!(
            "This cluster has no ForeignCluster (core.liqo.io/v1beta1) named `{remote_cluster_id}`. Liqo creates it \
             once any peering object for that peer exists on this cluster: a Configuration, GatewayServer or \
             GatewayClient (liqo_gateway), a Tenant (liqo_tenant), a control-plane identity Secret or a VirtualNode \
             (liqo_peer), labelled liqo.io/remote-cluster-id={remote_cluster_id}. Check that `remote_cluster_id` is \
             the peer's cluster ID (`liqoctl info --get clusterid` on the peer) and that this provider block points at \
             the right cluster. When the peering is created in the same configuration, make this data source depend \
             on it (reference its outputs or use `depends_on`) so that it is read after the peering exists."
        ),
    )
    .at(attr::remote_cluster_id.path())
}

/// No API calls: the remote cluster ID must look like one (unknown values pass).
fn validate(config: &Value) -> Diagnostics {
    let mut c = Validator::new(config);
    c.declared(&attr::declared(), config, None);
    c.finish()
}

/// The `liqo_peering` data source type, bound to the provider block's cluster.
pub struct PeeringDataSource {
    cluster: Arc<ClusterApi>,
}

impl PeeringDataSource {
    pub fn new(cluster: Arc<ClusterApi>) -> PeeringDataSource {
        PeeringDataSource { cluster }
    }
}

/// `liqo_peering`'s attributes.
pub mod attr {
    use crate::attributes::*;
    use liqo_schema::tf::{Nesting, Type};

    attributes! {
        remote_cluster_id: required(Type::String).check(Check::ClusterId)
            .describe("Cluster ID of the peer (`liqoctl info --get clusterid` on it, or liqo_cluster's `cluster_id`).");
        id: computed(Type::String).describe("The remote cluster ID (the ForeignCluster's name).");
        role: computed(Type::String).describe(
            "What the peer is to this cluster: `Provider` (this cluster consumes its resources), `Consumer`, \
             `ConsumerAndProvider`, or `Unknown` (networking only, or not yet known).",
        );
        api_server_url: computed(Type::String).describe(
            "The peer's API server URL as Liqo records it (`status.apiServerURL`): set when this cluster \
             consumes from the peer, from the control-plane identity (liqo_peer's Secret, or an Identity \
             resource); null otherwise.",
        );
        tenant_namespace_local: computed(Type::String).describe(
            "Tenant namespace for the peer on this cluster, as Liqo records it (`status.tenantNamespace.local`). \
             Liqo fills it only from the peer's Tenant (`status.tenantNamespace`, i.e. when the peer consumes \
             from this cluster through liqo_tenant and the Tenant is not Drained) or from an Identity resource; \
             it stays null for networking-only peerings and on a consumer peered with liqo_peer, whose \
             control-plane Secret Liqo reads only for the API server URL.",
        );
        tenant_namespace_remote: computed(Type::String).describe(
            "Tenant namespace for this cluster on the peer, as Liqo records it \
             (`status.tenantNamespace.remote`). Liqo fills it only from an Identity resource (liqoctl's \
             handshake-based peering), so it is **always null for peerings made with this provider**: \
             liqo_peer's control-plane Secret names the provider's tenant namespace in an annotation that \
             Liqo does not copy here. Use `liqo_tenant.tenant_namespace` instead.",
        );
        remapped_pod_cidrs: computed(Type::list(Type::String)).describe(
            "The addresses this cluster reaches the peer's pods at: the peer's pod CIDRs as Liqo's IPAM mapped them \
             (`status.remote.cidr.pod` of the Configuration labelled `liqo.io/remote-cluster-id` with the peer's ID, \
             as `liqoctl info peer` shows them). Overlapping ones are given another range. Null without a \
             Configuration for the peer (no networking on this cluster).",
        );
        remapped_external_cidr: computed(Type::String).describe(
            "The peer's external CIDR as Liqo's IPAM mapped it on this cluster (`status.remote.cidr.external` of \
             the same Configuration); null without one.",
        );
        networking: module("networking", "The networking module (Configuration, gateway and Connection).");
        authentication: module("authentication", "The authentication module (Tenant, identity towards the peer's API server).");
        offloading: module("offloading", "The offloading module (virtual nodes for the peer).");
        api_server_status: computed(Type::String).describe(
            "Liqo's verdict on the peer's API server (the ForeignCluster's `APIServerStatus` condition, which \
             Liqo keeps by pinging it): `Established`, or `Error` while it does not answer. Null where Liqo \
             does not check (on a provider cluster, about its consumers). A read while it is not \
             `Established` also warns.",
        );
        permanently_unreachable: computed(Type::Bool).describe(
            "True when the ForeignCluster is marked `liqo.io/foreign-cluster-permanently-unreachable` \
             (`liqoctl force unpeer`, or this provider's `permanently_unreachable_peers`).",
        );
        healthy: computed(Type::Bool).describe(
            "True when at least one module is enabled, every enabled module is `Healthy` and Liqo does not \
             report the peer's API server unreachable. Useful in `precondition`/`postcondition` blocks and \
             `check` assertions.",
        );
    }

    /// The module `name` of the peering (`status.modules.<name>`), described as `what`.
    fn module(name: &str, what: &str) -> Decl {
        let children = module::declared()
            .into_iter()
            .map(|d| match d.key {
                module::enabled => d.describe(format!(
                    "Whether Liqo considers the module in use for this peer (`status.modules.{name}.enabled`)."
                )),
                module::conditions => d.describe(format!(
                    "The module's conditions as Liqo wrote them (`status.modules.{name}.conditions`), in Liqo's order."
                )),
                _ => d,
            })
            .collect();
        nested(Nesting::Single, children).computed().describe(what)
    }

    /// The attributes of each module.
    pub mod module {
        use super::*;

        attributes! {
            /// Described per module.
            enabled: computed(Type::Bool);
            status: computed(Type::String).describe(
                "`Healthy` when enabled and every condition is `Established` or `Ready`, `Unhealthy` when enabled \
                 otherwise, `Disabled` when not enabled (as `liqoctl info` reports it).",
            );
            /// Described per module.
            conditions: nested(Nesting::List, condition::declared()).computed();
        }

        /// One condition of a module.
        pub mod condition {
            use super::*;

            attributes! {
                r#type: computed(Type::String).describe("Condition type, e.g. `NetworkConnectionStatus`.");
                status: computed(Type::String).describe(
                    "Condition status: `None`, `Pending`, `Established`, `Error`, `Ready`, `NotReady` or `SomeNotReady`.",
                );
                reason: computed(Type::String).describe("Liqo's reason for the status; null when Liqo gives none.");
                message: computed(Type::String).describe("Liqo's message for the status; null when Liqo gives none.");
            }
        }
    }
}

pub const DESCRIPTION: &str = "Reads the state of the peering with one remote cluster as this cluster's Liqo reports it: the \
             ForeignCluster named after the remote cluster ID, with its role, tenant namespaces and the health of \
             each module, computed as `liqoctl info` does.";

fn schema() -> Schema {
    Schema { version: 0, block: crate::attributes::block(DESCRIPTION, &attr::declared()) }
}

#[async_trait]
impl DataSource for PeeringDataSource {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        validate(config)
    }

    async fn read(&self, ctx: &Ctx, config: Value) -> (Value, Diagnostics) {
        // Terraform defers reading a data source whose configuration is not yet known, so this is a string.
        let Some(remote) = config.get(attr::remote_cluster_id).as_str().map(str::to_owned) else {
            let d = Diagnostic::error(
                "Missing remote cluster ID",
                "`remote_cluster_id` must be known to read the peering.",
            )
            .at(attr::remote_cluster_id.path());
            return (Value::Null, d.into());
        };
        let client = match self.cluster.client().await {
            Ok(c) => c,
            Err(d) => return (Value::Null, d.into()),
        };
        let api: Api<ForeignCluster> = Api::all(client.clone());
        let fc = match crate::kube::get_opt(ctx, &api, &remote).await {
            Ok(Some(fc)) => fc,
            Ok(None) => return (Value::Null, not_found(&remote).into()),
            Err(e) => return (Value::Null, op_diags(&e)),
        };
        // The peer's Configuration, found as liqoctl finds it: by its label, in any namespace.
        let configurations: Api<Configuration> = Api::all(client);
        let selector = format!("{}={remote}", labels::REMOTE_CLUSTER_ID);
        let found = match crate::kube::list(ctx, &configurations, &selector).await {
            Ok(found) => found,
            Err(e) => return (Value::Null, op_diags(&e)),
        };
        let mut diags = unreachable_warning(&fc);
        let configuration = match found.as_slice() {
            [] => None,
            [one] => Some(one),
            many => {
                diags.push(several_configurations(&remote, many));
                None
            }
        };
        (state(&remote, &fc, configuration), diags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use liqo_schema::liqo::core::{
        AUTH_TENANT_STATUS, NETWORK_CONFIGURATION_STATUS, NETWORK_CONNECTION_STATUS, OFFLOADING_NODE_STATUS,
        OFFLOADING_VIRTUAL_NODE_STATUS, ROLE_CONSUMER, STATUS_ERROR, STATUS_ESTABLISHED, STATUS_NOT_READY,
        STATUS_PENDING, STATUS_READY, STATUS_SOME_NOT_READY,
    };
    use liqo_schema::liqo::{ForeignClusterSpec, ForeignClusterStatus, TenantNamespaces};

    fn cond(type_: &str, status: &str) -> LiqoCondition {
        LiqoCondition {
            type_: type_.into(),
            status: status.into(),
            reason: None,
            message: Some(format!("{type_} is {status}")),
            last_transition_time: None,
        }
    }

    fn module(enabled: bool, conditions: &[(&str, &str)]) -> Module {
        let list: Vec<LiqoCondition> = conditions.iter().map(|(t, s)| cond(t, s)).collect();
        Module { enabled, conditions: (!list.is_empty()).then_some(list) }
    }

    /// What a consumer's ForeignCluster says while its provider's API server is gone (seen on real Liqo 1.2.0).
    #[test]
    fn an_unreachable_peer_is_reported_unhealthy_with_a_warning_until_marked_gone() {
        let mut fc = ForeignCluster::new("milan", ForeignClusterSpec { cluster_id: Some("milan".into()) });
        let up = module(true, &[(NETWORK_CONNECTION_STATUS, STATUS_ESTABLISHED)]);
        fc.status = Some(ForeignClusterStatus {
            role: "Provider".into(),
            modules: Some(Modules { networking: up.clone(), authentication: up.clone(), offloading: up }),
            conditions: Some(vec![cond("APIServerStatus", STATUS_ERROR)]),
            api_server_url: Some("https://127.0.0.1:6443".into()),
            ..Default::default()
        });
        let v = state("milan", &fc, None);
        assert_eq!(v.get(attr::api_server_status).as_str(), Some(STATUS_ERROR));
        assert_eq!(v.get(attr::healthy).as_bool(), Some(false), "healthy modules, unreachable API server");
        assert_eq!(v.get(attr::permanently_unreachable).as_bool(), Some(false));
        let warnings = unreachable_warning(&fc);
        let w = warnings.iter().next().expect("a warning");
        assert!(
            w.detail.contains("APIServerStatus = Error") && w.detail.contains("https://127.0.0.1:6443"),
            "{}",
            w.detail
        );
        assert!(w.detail.contains("permanently_unreachable_peers"), "{}", w.detail);

        fc.metadata.annotations =
            Some([("liqo.io/foreign-cluster-permanently-unreachable".to_string(), "true".to_string())].into());
        assert_eq!(state("milan", &fc, None).get(attr::permanently_unreachable).as_bool(), Some(true));
        assert!(unreachable_warning(&fc).is_empty(), "marked gone: Liqo no longer waits for it");
    }

    #[test]
    fn module_status_follows_liqoctl_info() {
        type Case<'a> = (bool, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case] = &[
            (false, &[], DISABLED),
            // Disabled wins even over healthy-looking conditions left behind.
            (false, &[(NETWORK_CONNECTION_STATUS, STATUS_ESTABLISHED)], DISABLED),
            (false, &[(NETWORK_CONNECTION_STATUS, STATUS_ERROR)], DISABLED),
            // Enabled without conditions is healthy in liqoctl info (no condition fails).
            (true, &[], HEALTHY),
            (
                true,
                &[(NETWORK_CONFIGURATION_STATUS, STATUS_READY), (NETWORK_CONNECTION_STATUS, STATUS_ESTABLISHED)],
                HEALTHY,
            ),
            (
                true,
                &[(NETWORK_CONFIGURATION_STATUS, STATUS_READY), (NETWORK_CONNECTION_STATUS, STATUS_PENDING)],
                UNHEALTHY,
            ),
            (true, &[(NETWORK_CONNECTION_STATUS, STATUS_ERROR)], UNHEALTHY),
            (
                true,
                &[(OFFLOADING_VIRTUAL_NODE_STATUS, STATUS_READY), (OFFLOADING_NODE_STATUS, STATUS_SOME_NOT_READY)],
                UNHEALTHY,
            ),
            (true, &[(AUTH_TENANT_STATUS, STATUS_NOT_READY)], UNHEALTHY),
            (true, &[(AUTH_TENANT_STATUS, "None")], UNHEALTHY),
        ];
        for (enabled, conditions, want) in cases {
            assert_eq!(
                module_status(&module(*enabled, conditions)),
                *want,
                "enabled={enabled} conditions={conditions:?}"
            );
        }
    }

    #[test]
    fn peering_is_healthy_only_when_some_module_is_enabled_and_all_enabled_are_healthy() {
        let healthy = module(true, &[(NETWORK_CONNECTION_STATUS, STATUS_ESTABLISHED)]);
        let broken = module(true, &[(NETWORK_CONNECTION_STATUS, STATUS_ERROR)]);
        let off = module(false, &[]);
        let modules = |n: &Module, a: &Module, o: &Module| Modules {
            networking: n.clone(),
            authentication: a.clone(),
            offloading: o.clone(),
        };

        assert!(peering_healthy(&modules(&healthy, &healthy, &healthy)));
        assert!(peering_healthy(&modules(&healthy, &off, &off)), "disabled modules do not count");
        assert!(!peering_healthy(&modules(&healthy, &healthy, &broken)));
        assert!(!peering_healthy(&modules(&broken, &off, &off)));
        assert!(!peering_healthy(&modules(&off, &off, &off)), "nothing enabled is not a healthy peering");
    }

    #[test]
    fn state_maps_the_foreign_cluster() {
        let mut fc = ForeignCluster::new("rome", ForeignClusterSpec { cluster_id: Some("rome".into()) });
        fc.status = Some(ForeignClusterStatus {
            role: ROLE_CONSUMER.into(),
            modules: Some(Modules {
                networking: module(true, &[(NETWORK_CONNECTION_STATUS, STATUS_ERROR)]),
                authentication: module(true, &[(AUTH_TENANT_STATUS, STATUS_READY)]),
                offloading: module(false, &[]),
            }),
            api_server_url: Some("https://rome.example:6443".into()),
            tenant_namespace: Some(TenantNamespaces { local: Some("liqo-tenant-rome".into()), remote: None }),
            ..Default::default()
        });
        let s = state("rome", &fc, None);
        assert_eq!(s.get(attr::id).as_str(), Some("rome"));
        assert_eq!(s.get(attr::role).as_str(), Some(ROLE_CONSUMER));
        assert_eq!(s.get(attr::api_server_url).as_str(), Some("https://rome.example:6443"));
        assert_eq!(s.get(attr::tenant_namespace_local).as_str(), Some("liqo-tenant-rome"));
        assert!(s.get(attr::tenant_namespace_remote).is_null());
        assert_eq!(s.get(attr::healthy).as_bool(), Some(false));

        let net = s.get(attr::networking);
        assert_eq!(net.get(attr::module::enabled).as_bool(), Some(true));
        assert_eq!(net.get(attr::module::status).as_str(), Some(UNHEALTHY));
        let c = &net.get(attr::module::conditions).elements()[0];
        assert_eq!(c.get(attr::module::condition::r#type).as_str(), Some(NETWORK_CONNECTION_STATUS));
        assert_eq!(c.get(attr::module::condition::status).as_str(), Some(STATUS_ERROR));
        assert!(c.get(attr::module::condition::reason).is_null());
        assert_eq!(c.get(attr::module::condition::message).as_str(), Some("NetworkConnectionStatus is Error"));
        assert_eq!(s.get(attr::authentication).get(attr::module::status).as_str(), Some(HEALTHY));
        let off = s.get(attr::offloading);
        assert_eq!(
            (off.get(attr::module::enabled).as_bool(), off.get(attr::module::status).as_str()),
            (Some(false), Some(DISABLED))
        );
        assert_eq!(off.get(attr::module::conditions), &Value::List(vec![]), "no conditions is an empty list, not null");
    }

    #[test]
    fn a_status_not_written_yet_reads_as_unknown_and_disabled() {
        let fc = ForeignCluster::new("rome", ForeignClusterSpec { cluster_id: Some("rome".into()) });
        let s = state("rome", &fc, None);
        assert_eq!(s.get(attr::role).as_str(), Some(ROLE_UNKNOWN));
        assert!(s.get(attr::api_server_url).is_null() && s.get(attr::tenant_namespace_local).is_null());
        for m in [attr::networking, attr::authentication, attr::offloading] {
            assert_eq!(s.get(m).get(attr::module::status).as_str(), Some(DISABLED), "{m}");
        }
        assert_eq!(s.get(attr::healthy).as_bool(), Some(false));
    }

    /// The remapped CIDRs are the peer's Configuration's `status.remote`; null without a Configuration, and with
    /// several the read warns, naming them.
    #[test]
    fn remapped_cidrs_come_from_the_peers_configuration() {
        use liqo_schema::liqo::{ClusterConfig, ClusterConfigCidr, ConfigurationSpec, ConfigurationStatus};
        let fc = ForeignCluster::new("milan", ForeignClusterSpec { cluster_id: Some("milan".into()) });
        let mut c = Configuration::new("milan", ConfigurationSpec::default());
        c.metadata.namespace = Some("liqo-tenant-milan".into());
        c.status = Some(ConfigurationStatus {
            remote: Some(ClusterConfig {
                cidr: Some(ClusterConfigCidr {
                    pod: Some(vec!["10.71.0.0/18".into()]),
                    external: Some(vec!["10.72.0.0/16".into()]),
                }),
            }),
            conditions: None,
        });
        let s = state("milan", &fc, Some(&c));
        assert_eq!(s.get(attr::remapped_pod_cidrs), &Value::string_list(["10.71.0.0/18"]));
        assert_eq!(s.get(attr::remapped_external_cidr).as_str(), Some("10.72.0.0/16"));
        let none = state("milan", &fc, None);
        assert!(none.get(attr::remapped_pod_cidrs).is_null() && none.get(attr::remapped_external_cidr).is_null());
        let mut other = c.clone();
        other.metadata.namespace = Some("default".into());
        let w = several_configurations("milan", &[c, other]);
        assert!(w.detail.contains("liqo-tenant-milan/milan, default/milan"), "{}", w.detail);
    }

    #[test]
    fn state_matches_the_schema() {
        let fc = ForeignCluster::new("rome", ForeignClusterSpec { cluster_id: Some("rome".into()) });
        let s = state("rome", &fc, None);
        let schema = schema();
        let mut names: Vec<&str> = schema.block.attributes.iter().map(|a| a.name.as_str()).collect();
        names.sort_unstable();
        let keys: Vec<&str> = s.entries().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, names, "every schema attribute is set, and nothing else");
    }

    #[test]
    fn missing_foreign_cluster_is_named_with_how_liqo_creates_it() {
        let d = not_found("rome");
        assert_eq!(d.summary, "ForeignCluster rome not found");
        assert!(
            d.detail.contains("once any peering object for that peer exists") && d.detail.contains("`depends_on`"),
            "{}",
            d.detail
        );
    }

    #[test]
    fn remote_cluster_id_is_validated_and_unknown_passes() {
        let bad = validate(&Value::object([(attr::remote_cluster_id, Value::string("Rome_1"))]));
        assert_eq!(bad.0.len(), 1);
        assert!(bad.0[0].summary.contains("`remote_cluster_id`"));
        assert!(validate(&Value::object([(attr::remote_cluster_id, Value::string("rome"))])).0.is_empty());
        assert!(validate(&Value::object([(attr::remote_cluster_id, Value::Unknown)])).0.is_empty());
    }

    #[test]
    fn schema_has_one_required_input_and_describes_everything() {
        fn all_described(attrs: &[liqo_schema::tf::Attribute]) -> bool {
            attrs
                .iter()
                .all(|a| !a.description.is_empty() && a.nested.as_ref().is_none_or(|n| all_described(&n.attributes)))
        }
        let s = schema();
        let required: Vec<&str> = s
            .block
            .attributes
            .iter()
            .filter(|a| crate::attributes::shown_required(a))
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(required, [attr::remote_cluster_id]);
        assert!(
            s.block
                .attributes
                .iter()
                .filter(|a| !crate::attributes::shown_required(a))
                .all(|a| a.computed && !a.optional)
        );
        assert!(all_described(&s.block.attributes));
    }
}
