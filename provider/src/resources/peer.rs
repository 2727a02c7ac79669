//! `liqo_peer`: resource negotiation, on the **consumer** cluster.
//!
//! Owns, in the consumer's tenant namespace for the provider:
//! - the control-plane identity Secret `kubeconfig-controlplane-<provider id>` (labels
//!   `liqo.io/identity-type: ControlPlane` and `liqo.io/remote-cluster-id`, annotation
//!   `liqo.io/remote-tenant-namespace`), which Liqo's crd-replicator uses to copy ResourceSlices to the provider.
//!   Its kubeconfig is assembled here, inside the consumer cluster: the public parts `liqo_tenant` returns
//!   (`api_server_url`, `cluster_ca_certificate`, `client_certificate`) joined to the private key that
//!   `liqo_consumer_key` wrote to `client_key_secret`, so no key passes through Terraform. For clusters that cannot
//!   issue client certificates a whole kubeconfig may be brought instead, as the write-only `kubeconfig_wo`;
//! - the ResourceSlice `resource_slice_name` (default: the provider cluster ID) asking for `resources`.
//!
//! Create/update waits for the slice's `Authentication` and `Resources` conditions to be `Accepted` (a `Denied`
//! condition fails at once with Liqo's reason), then — unless `wait_for_virtual_node = false` — for the
//! VirtualNode Liqo creates (same name) and its core Node to be `Ready`. Delete follows Liqo's order
//! (reference §6): slice (wait gone; its finalizer needs the credentials), VirtualNode and Node (wait gone), then
//! the Secret (wait gone; Liqo releases its finalizer when nothing replicated remains).
//!
//! With no credentials at all (neither the issued-certificate flow nor `kubeconfig_wo`) the identity Secret is one
//! Liqo minted in its handshake (`liqoctl peer`; an Identity owns it): it is kept as it is, never written, its key
//! never read (not even its public parts go to state), and destroy deletes the Identity as `liqoctl unpeer` does.
//!
//! Import ID: `<tenant_namespace>/<resource_slice_name>`; an imported peer whose identity Liqo minted keeps it
//! (no credential attribute set); any other is taken to use the issued-certificate flow with the key Secret
//! `liqo_consumer_key` names (`controlplane-key-<provider id>`).
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Node, Secret};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, ObjectMeta};
use liqo_schema::liqo::{
    CONNECTION_CONNECTED, Connection, Identity, RESOURCE_SLICE_CLASS_DEFAULT, RESOURCE_SLICE_CONDITION_AUTHENTICATION,
    RESOURCE_SLICE_CONDITION_RESOURCES, RESOURCE_SLICE_DENIED, ResourceSlice, ResourceSliceSpec,
    VIRTUAL_NODE_CONDITION_NODE, VIRTUAL_NODE_CONDITION_VIRTUAL_KUBELET, VIRTUAL_NODE_RUNNING, VirtualNode, labels,
};
use liqo_schema::tf::{Attribute, AttributePath, Block, Diagnostic, Diagnostics, Schema, Type, Value};

use super::consumer_key;
use super::lifecycle::{Deadline, Timeouts, timeouts_block};
use crate::cluster_api::ClusterApi;
use crate::crypto;
use crate::errors::op_diags;
use crate::kube::{OpError, Verdict, is_terminating};
use crate::protocol::{
    ApplyRequest, ApplyResponse, Ctx, ImportedResource, PlanRequest, PlanResponse, ReadResponse, Resource,
};
use crate::validate::{Validator, check_dns_label, check_qualified_name};

const TYPE_NAME: &str = "liqo_peer";
/// 1: `kubeconfig` (with the consumer's private key) replaced by the public parts and the key Secret's name.
const SCHEMA_VERSION: i64 = 1;
/// The issued-certificate flow's inputs: all four or none.
const ISSUED: [&str; 4] = ["api_server_url", "cluster_ca_certificate", "client_certificate", "client_key_secret"];
/// Names in the assembled kubeconfig (Liqo's `GenerateKubeconfig` shape: one cluster, one user, one context).
const KUBECONFIG_CONTEXT: &str = "default-context";
const KUBECONFIG_USER: &str = "liqo-controlplane";

/// liqoctl gives `peer` 10 minutes end to end; a virtual kubelet may take a while to register its node.
const DEFAULT_TIMEOUTS: Timeouts = Timeouts::uniform(Duration::from_secs(600));

/// Inputs whose change makes Liqo treat the peering as a different one (another slice, another provider,
/// another replication target, or a virtual node Liqo would not add/remove on an annotation flip).
const REPLACE_ON_CHANGE: [&str; 6] = [
    "tenant_namespace",
    "provider_cluster_id",
    "provider_tenant_namespace",
    "resource_slice_name",
    "class",
    "create_virtual_node",
];

/// Name of the control-plane identity Secret for `provider` (the name Liqo's Identity controller would use).
pub fn identity_secret_name(provider: &str) -> String {
    format!("kubeconfig-controlplane-{provider}")
}

pub struct PeerResource {
    cluster: Arc<ClusterApi>,
}

impl PeerResource {
    pub fn new(cluster: Arc<ClusterApi>) -> PeerResource {
        PeerResource { cluster }
    }
}

/// `peer` as the protocol layer serves it.
pub fn resource(cluster: Arc<ClusterApi>) -> Arc<dyn Resource> {
    Arc::new(PeerResource::new(cluster))
}

// -------------------------------------------------------------------------------------------------------------
// Schema
// -------------------------------------------------------------------------------------------------------------

fn schema() -> Schema {
    let attributes = vec![
        Attribute::computed("id", Type::String)
            .describe("`<tenant_namespace>/<resource_slice_name>`; also the import ID."),
        Attribute::required("tenant_namespace", Type::String).describe(
            "Tenant namespace for the provider on this (consumer) cluster, usually \
             `liqo_generate.<consumer>.tenant_namespace`. The identity Secret and the ResourceSlice are created in \
             it: Liqo only replicates ResourceSlices from the namespace of the identity Secret. Changing it \
             replaces the resource.",
        ),
        Attribute::required("provider_cluster_id", Type::String).describe(
            "Liqo cluster ID of the provider cluster (the one sharing resources), e.g. \
             `liqo_generate.<provider>.cluster_id`. Changing it replaces the resource.",
        ),
        Attribute::required("provider_tenant_namespace", Type::String).describe(
            "Tenant namespace for this consumer on the provider cluster, where Liqo replicates the ResourceSlice: \
             `liqo_tenant.<name>.tenant_namespace`. Changing it replaces the resource.",
        ),
        Attribute::optional("api_server_url", Type::String).describe(
            "URL of the provider cluster's API server as this cluster reaches it: `liqo_tenant.<name>.api_server_url`. \
             One of the four attributes of the issued-certificate flow (with `cluster_ca_certificate`, \
             `client_certificate` and `client_key_secret`), which carries no secret through Terraform. A new value \
             updates the identity Secret in place.",
        ),
        Attribute::optional("cluster_ca_certificate", Type::String).describe(
            "PEM CA that verifies `api_server_url`: `liqo_tenant.<name>.cluster_ca_certificate`. A new value updates \
             the identity Secret in place.",
        ),
        Attribute::optional("client_certificate", Type::String).describe(
            "PEM client certificate the provider issued for this cluster's key: \
             `liqo_tenant.<name>.client_certificate`. It must be issued for the key in `client_key_secret` (checked \
             before the identity Secret is written). A renewed certificate updates the identity Secret in place, \
             and Liqo reconnects with it.",
        ),
        Attribute::optional("client_key_secret", Type::String).describe(
            "Name of the Secret in `tenant_namespace` holding this cluster's private key (data `privateKey`): \
             `liqo_consumer_key.<name>.key_secret_name`. The key is read inside this cluster and written into the \
             identity Secret; it never reaches Terraform.",
        ),
        Attribute::optional("kubeconfig_wo", Type::String).sensitive().write_only().describe(
            "A kubeconfig you bring instead of the issued-certificate flow, for provider clusters that cannot issue \
             client certificates (e.g. EKS: a token or an `exec` plugin). **Write-only**: Terraform passes it to the \
             provider on each apply and never stores it in state or plans (Terraform 1.11 or OpenTofu 1.11 and \
             later; older clients are refused). It is the one path where a credential passes through Terraform: \
             it lives in your configuration or wherever you read it from (prefer an ephemeral source), and in the \
             identity Secret on this cluster. Set `kubeconfig_wo_version` with it and change that number to push a \
             new kubeconfig.",
        ),
        Attribute::optional("kubeconfig_wo_version", Type::Number).describe(
            "Version of `kubeconfig_wo`: Terraform cannot see a write-only value change, so change this number (e.g. \
             increment it) to have the identity Secret rewritten with the current `kubeconfig_wo`. Required with \
             `kubeconfig_wo`.",
        ),
        Attribute::optional("resources", Type::map(Type::String)).describe(
            "Resources requested from the provider, as Kubernetes quantities keyed by resource name: `cpu`, \
             `memory`, `pods`, `ephemeral-storage` or any extended resource (e.g. `nvidia.com/gpu`), e.g. \
             `{ cpu = \"4\", memory = \"8Gi\", pods = \"110\" }`. Omitted keys (or the whole map) get the \
             provider's defaults. Changing it updates the ResourceSlice in place and waits until the provider has \
             accepted the new request.",
        ),
        Attribute::optional_computed("class", Type::String).describe(
            "ResourceSlice class (default `default`, served by Liqo's built-in controller, which grants exactly \
             what is requested; other classes are served by custom controllers on the provider). Changing it \
             replaces the resource.",
        ),
        Attribute::optional_computed("create_virtual_node", Type::Bool).describe(
            "Whether Liqo creates a virtual node for this slice once it is accepted (default `true`). Changing it \
             replaces the resource.",
        ),
        Attribute::optional_computed("resource_slice_name", Type::String).describe(
            "Name of the ResourceSlice and of the virtual node Liqo derives from it (default: the provider cluster \
             ID). Must be unique among this cluster's ResourceSlices. Changing it replaces the resource.",
        ),
        Attribute::optional_computed("wait_for_virtual_node", Type::Bool).describe(
            "Whether create and update also wait for the VirtualNode to run and its Node to be `Ready` (default \
             `true`). With networking configured for the provider, Liqo keeps the Node NotReady until the \
             Connection is `Connected`, so make this resource depend on the client `liqo_gateway` (whose create \
             waits for it); a timeout names the Connection and its state. Has no effect when \
             `create_virtual_node` is `false`. Changing it never touches the cluster.",
        ),
        Attribute::computed("virtual_node_name", Type::String).describe(
            "Name of the VirtualNode and of the core Node that represent the provider on this cluster (null when \
             `create_virtual_node` is `false`).",
        ),
        Attribute::computed("accepted_resources", Type::map(Type::String)).describe(
            "Resources the provider granted (the ResourceSlice's `status.resources`), refreshed on every read.",
        ),
    ];
    Schema {
        version: SCHEMA_VERSION,
        block: Block::new(
            "Peers this (consumer) cluster with a provider cluster: writes the control-plane identity Secret and a \
             ResourceSlice, waits for the provider to accept it and for the virtual node to be Ready. Destroying \
             it unpeers (the virtual node goes away) and leaves networking (`liqo_gateway`) and authentication \
             (`liqo_tenant`) in place. With no credentials configured (neither the issued-certificate flow nor \
             `kubeconfig_wo`) it keeps the identity Liqo minted in its handshake (`liqoctl peer`, an Identity owns \
             the Secret): never written, nothing of it read into state, and destroy deletes that Identity as \
             `liqoctl unpeer` does.",
            attributes,
        )
        .with_block(timeouts_block(DEFAULT_TIMEOUTS)),
    }
}

// -------------------------------------------------------------------------------------------------------------
// Validation
// -------------------------------------------------------------------------------------------------------------

fn validate(config: &Value) -> Diagnostics {
    let mut c = Validator::new(config);
    c.namespace("tenant_namespace");
    c.cluster_id("provider_cluster_id");
    c.namespace("provider_tenant_namespace");
    if let Some(name) = config.get("resource_slice_name").as_str()
        && let Err(why) = check_dns_label(name)
    {
        c.error(
            AttributePath::root("resource_slice_name"),
            "Invalid ResourceSlice name for `resource_slice_name`",
            format!(
                "`{name}` {why}. The name is also used for the virtual node, so it must be a DNS label: lowercase \
                 letters, digits and '-', at most 63 characters. Omit it to use the provider cluster ID."
            ),
        );
    }
    if config.get("class").as_str() == Some("") {
        c.error(
            AttributePath::root("class"),
            "Empty ResourceSlice class for `class`",
            "Omit `class` (or set it to `default`) for Liqo's built-in class, or name the custom class the \
             provider serves.",
        );
    }
    check_credentials(&mut c);
    if let Some(entries) = config.get("resources").entries() {
        for (key, value) in entries {
            let path = AttributePath::root("resources").key(key);
            if let Err(why) = check_qualified_name(key) {
                c.error(
                    path.clone(),
                    format!("Invalid resource name `{key}` in `resources`"),
                    format!(
                        "`{key}` {why}. Use a Kubernetes resource name: `cpu`, `memory`, `pods`, \
                         `ephemeral-storage` or an extended resource such as `nvidia.com/gpu`."
                    ),
                );
            }
            if let Some(q) = value.as_str()
                && let Err(why) = quantity::parse(q)
            {
                c.error(
                    path,
                    format!("Invalid quantity for `{key}` in `resources`"),
                    format!(
                        "`{q}` {why}. Write a Kubernetes quantity: a non-negative number with an optional suffix, \
                         e.g. `4`, `500m`, `8Gi`, `1e3`."
                    ),
                );
            }
        }
    }
    c.timeouts();
    c.finish()
}

/// At most one way to authenticate: the four attributes of the issued-certificate flow, or `kubeconfig_wo` with
/// its version; none keeps the identity Liqo minted (an adopted `liqoctl peer` peering). Values are checked when
/// known; an unknown value only counts as set.
fn check_credentials(c: &mut Validator<'_>) {
    let set = |c: &Validator<'_>, a: &str| !c.value(a).is_null();
    let issued: Vec<&str> = ISSUED.iter().copied().filter(|a| set(c, a)).collect();
    let brought = set(c, "kubeconfig_wo");
    let flows = "Either pass the issued-certificate flow's four attributes (`api_server_url`, `cluster_ca_certificate` \
                 and `client_certificate` from the provider's liqo_tenant, `client_key_secret` from liqo_consumer_key \
                 on this cluster), or bring a kubeconfig as `kubeconfig_wo` with `kubeconfig_wo_version`.";
    if brought && !issued.is_empty() {
        c.error(
            AttributePath::root("kubeconfig_wo"),
            "Conflicting credentials for liqo_peer",
            format!("`kubeconfig_wo` and {} are both set. {flows}", quoted(&issued)),
        );
        return;
    }
    // Neither: the identity Liqo minted in its handshake (`liqoctl peer`) is kept; apply fails if there is none.
    if !brought && issued.is_empty() {
        if set(c, "kubeconfig_wo_version") {
            c.error(
                AttributePath::root("kubeconfig_wo"),
                "`kubeconfig_wo` is required with `kubeconfig_wo_version`",
                format!(
                    "`kubeconfig_wo_version` only versions a brought kubeconfig. {flows} Set none of them to keep \
                     the identity Liqo minted (an adopted `liqoctl peer` peering)."
                ),
            );
        }
        return;
    }
    if brought {
        if !set(c, "kubeconfig_wo_version") {
            c.error(
                AttributePath::root("kubeconfig_wo_version"),
                "`kubeconfig_wo_version` is required with `kubeconfig_wo`",
                "Terraform never stores `kubeconfig_wo`, so it cannot tell when it changes: set \
                 `kubeconfig_wo_version = 1` and increase it whenever the kubeconfig changes.",
            );
        }
        if let Some(kubeconfig) = c.value("kubeconfig_wo").as_str()
            && let Err(why) = check_kubeconfig(kubeconfig)
        {
            // Never echo the value: it may hold a key or a token.
            c.error(
                AttributePath::root("kubeconfig_wo"),
                "Invalid kubeconfig for `kubeconfig_wo`",
                format!("{why}. Pass a kubeconfig for the provider cluster, e.g. `file(\"milan.kubeconfig\")`."),
            );
        }
        return;
    }
    for missing in ISSUED.iter().filter(|a| !issued.contains(a)) {
        c.error(
            AttributePath::root(missing),
            format!("`{missing}` is required with {}", quoted(&issued)),
            format!("The issued-certificate flow needs all four attributes. {flows}"),
        );
    }
    c.api_server_url("api_server_url", "Pass the provider's `liqo_tenant.<name>.api_server_url`.");
    c.ca_bundle("cluster_ca_certificate", "Pass the provider's `liqo_tenant.<name>.cluster_ca_certificate`.");
    if let Some(cert) = c.value("client_certificate").as_str()
        && let Err(why) = crypto::certificate_public_key(cert.as_bytes())
    {
        c.error(
            AttributePath::root("client_certificate"),
            "Invalid certificate for `client_certificate`",
            format!("The value is not one PEM certificate: {why}. Pass the provider's `liqo_tenant.<name>.client_certificate`."),
        );
    }
    if let Some(name) = c.value("client_key_secret").as_str()
        && let Err(why) = check_dns_label(name)
    {
        c.error(
            AttributePath::root("client_key_secret"),
            "Invalid Secret name for `client_key_secret`",
            format!("`{name}` {why}. Pass `liqo_consumer_key.<name>.key_secret_name`."),
        );
    }
}

fn quoted(attrs: &[&str]) -> String {
    attrs.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
}

/// A kubeconfig must be YAML with at least one cluster and one user; the message never quotes the content.
fn check_kubeconfig(text: &str) -> Result<(), String> {
    if text.trim().is_empty() {
        return Err("The kubeconfig is empty".into());
    }
    let doc: serde_yaml::Value =
        serde_yaml::from_str(text).map_err(|_| "The kubeconfig is not valid YAML".to_string())?;
    for section in ["clusters", "users"] {
        let ok = doc.get(section).and_then(|s| s.as_sequence()).is_some_and(|s| !s.is_empty());
        if !ok {
            return Err(format!("The kubeconfig has no `{section}` entry"));
        }
    }
    Ok(())
}

// -------------------------------------------------------------------------------------------------------------
// Plan
// -------------------------------------------------------------------------------------------------------------

/// Fills defaults and computed outputs; returns the planned state and the attributes that force replacement.
fn plan_values(prior: &Value, proposed: &Value, config: &Value) -> (Value, Vec<AttributePath>) {
    let mut planned = proposed.clone();
    if config.get("class").is_null() {
        planned.set("class", Value::string(RESOURCE_SLICE_CLASS_DEFAULT));
    }
    if config.get("create_virtual_node").is_null() {
        planned.set("create_virtual_node", Value::Bool(true));
    }
    if config.get("wait_for_virtual_node").is_null() {
        planned.set("wait_for_virtual_node", Value::Bool(true));
    }
    // The default follows the provider cluster ID (also when that changes), not the prior state.
    if config.get("resource_slice_name").is_null() {
        planned.set("resource_slice_name", proposed.get("provider_cluster_id").clone());
    }

    let slice = planned.get("resource_slice_name").clone();
    planned.set(
        "id",
        match (planned.get("tenant_namespace").as_str(), slice.as_str()) {
            (Some(ns), Some(name)) => Value::string(format!("{ns}/{name}")),
            _ => Value::Unknown,
        },
    );
    planned.set(
        "virtual_node_name",
        match planned.get("create_virtual_node") {
            Value::Bool(true) => slice,
            Value::Bool(false) => Value::Null,
            _ => Value::Unknown,
        },
    );
    // The grant only changes when the request does (or on a new slice).
    let request_changed = prior.is_null() || prior.get("resources") != planned.get("resources");
    planned.set(
        "accepted_resources",
        if request_changed { Value::Unknown } else { prior.get("accepted_resources").clone() },
    );

    let mut replace = Vec::new();
    if !prior.is_null() {
        for attr in REPLACE_ON_CHANGE {
            // A value that vanished from the cluster (null in the refreshed state) is repaired in place.
            if !prior.get(attr).is_null() && prior.get(attr) != planned.get(attr) {
                replace.push(AttributePath::root(attr));
            }
        }
    }
    (planned, replace)
}

// -------------------------------------------------------------------------------------------------------------
// Objects
// -------------------------------------------------------------------------------------------------------------

/// How this cluster's Liqo authenticates to the provider.
#[derive(Clone, Debug, PartialEq)]
enum Credentials {
    /// Public parts from liqo_tenant; the key stays in the Secret `key_secret` of this cluster.
    Issued { server: String, ca_pem: String, cert_pem: String, key_secret: String },
    /// A kubeconfig the user brings (`kubeconfig_wo`, from the configuration only).
    Brought(Brought),
    /// None configured: the identity Liqo minted in its handshake (`liqoctl peer`) is kept as it is.
    Liqo,
}

/// A brought kubeconfig; its Debug form never shows the content (it may hold a key or a token).
#[derive(Clone, PartialEq)]
struct Brought(String);

impl std::fmt::Debug for Brought {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Brought(..)")
    }
}

/// The known inputs of a planned state.
#[derive(Clone, Debug, PartialEq)]
struct Peer {
    tenant_namespace: String,
    provider_cluster_id: String,
    provider_tenant_namespace: String,
    credentials: Credentials,
    resources: Option<BTreeMap<String, String>>,
    class: String,
    create_virtual_node: bool,
    slice_name: String,
    wait_for_virtual_node: bool,
}

impl Peer {
    /// `v` is the planned state; `config` supplies the write-only `kubeconfig_wo`, which no state carries.
    fn from_value(v: &Value, config: &Value) -> Result<Peer, Diagnostic> {
        let s = |attr: &str| {
            v.get(attr).as_str().map(str::to_string).ok_or_else(|| {
                Diagnostic::attr_error(
                    attr,
                    format!("`{attr}` is not known at apply time"),
                    "This is a bug in the provider (the plan should have filled it); please report it.",
                )
            })
        };
        let resources = match v.get("resources") {
            Value::Null => None,
            other => Some(
                other
                    .entries()
                    .into_iter()
                    .flatten()
                    .map(|(k, q)| (k.clone(), q.as_str().unwrap_or_default().to_string()))
                    .collect(),
            ),
        };
        Ok(Peer {
            tenant_namespace: s("tenant_namespace")?,
            provider_cluster_id: s("provider_cluster_id")?,
            provider_tenant_namespace: s("provider_tenant_namespace")?,
            credentials: match config.get("kubeconfig_wo").as_str() {
                Some(kubeconfig) => Credentials::Brought(Brought(kubeconfig.to_string())),
                None if v.get("kubeconfig_wo_version").is_null() && ISSUED.iter().all(|a| v.get(a).is_null()) => {
                    Credentials::Liqo
                }
                None => Credentials::Issued {
                    server: s("api_server_url")?,
                    ca_pem: s("cluster_ca_certificate")?,
                    cert_pem: s("client_certificate")?,
                    key_secret: s("client_key_secret")?,
                },
            },
            resources,
            class: s("class")?,
            create_virtual_node: v.get("create_virtual_node").as_bool().unwrap_or(true),
            slice_name: s("resource_slice_name")?,
            wait_for_virtual_node: v.get("wait_for_virtual_node").as_bool().unwrap_or(true),
        })
    }

    fn secret_name(&self) -> String {
        identity_secret_name(&self.provider_cluster_id)
    }

    /// The control-plane identity Secret around `kubeconfig`, exactly as Liqo's crd-replicator expects it
    /// (reference §3.10).
    fn identity_secret(&self, kubeconfig: &str) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some(self.secret_name()),
                namespace: Some(self.tenant_namespace.clone()),
                labels: Some(BTreeMap::from([
                    (labels::IDENTITY_TYPE.to_string(), labels::IDENTITY_TYPE_CONTROL_PLANE.to_string()),
                    (labels::REMOTE_CLUSTER_ID.to_string(), self.provider_cluster_id.clone()),
                ])),
                annotations: Some(BTreeMap::from([(
                    labels::REMOTE_TENANT_NAMESPACE.to_string(),
                    self.provider_tenant_namespace.clone(),
                )])),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(
                labels::KUBECONFIG_KEY.to_string(),
                ByteString(kubeconfig.as_bytes().to_vec()),
            )])),
            ..Default::default()
        }
    }

    /// The ResourceSlice with only the fields this resource owns: `spec.consumerClusterID` and `spec.csr` are
    /// written by Liqo's consumer controller and never claimed here.
    fn resource_slice(&self) -> ResourceSlice {
        let spec = ResourceSliceSpec {
            provider_cluster_id: Some(self.provider_cluster_id.clone()),
            class: Some(self.class.clone()),
            resources: self
                .resources
                .as_ref()
                .map(|r| r.iter().map(|(k, q)| (k.clone(), Quantity(q.clone()))).collect()),
            ..Default::default()
        };
        let mut rs = ResourceSlice::new(&self.slice_name, spec);
        rs.metadata.namespace = Some(self.tenant_namespace.clone());
        rs.metadata.labels = Some(BTreeMap::from([
            (labels::REMOTE_CLUSTER_ID.to_string(), self.provider_cluster_id.clone()),
            (labels::REMOTE_ID.to_string(), self.provider_cluster_id.clone()),
            (labels::REPLICATION.to_string(), labels::TRUE.to_string()),
        ]));
        rs.metadata.annotations =
            Some(BTreeMap::from([(labels::CREATE_VIRTUAL_NODE.to_string(), self.create_virtual_node.to_string())]));
        rs
    }

    /// Liqo's built-in class grants exactly what is requested, so a wait can tell the new grant from the old.
    fn grants_request(&self) -> bool {
        self.class.is_empty() || self.class == RESOURCE_SLICE_CLASS_DEFAULT
    }

    /// The state after a (possibly partial) apply: planned values with every computed output resolved.
    fn state(&self, planned: &Value, accepted: Option<&BTreeMap<String, String>>) -> Value {
        let mut s = planned.clone();
        s.set("id", Value::string(format!("{}/{}", self.tenant_namespace, self.slice_name)));
        s.set(
            "virtual_node_name",
            if self.create_virtual_node { Value::string(&self.slice_name) } else { Value::Null },
        );
        s.set("accepted_resources", accepted.map(|a| Value::string_map(a.clone())).unwrap_or(Value::Null));
        s
    }
}

/// The issued certificate's parts and this cluster's key, as Liqo's `GenerateKubeconfig` writes a control-plane
/// kubeconfig: cluster named after the provider, context `default-context` in the provider tenant namespace.
struct KubeconfigParts<'a> {
    server: &'a str,
    ca_pem: &'a str,
    cert_pem: &'a str,
    key_pem: &'a str,
    cluster_name: &'a str,
    namespace: &'a str,
}

fn assemble_kubeconfig(p: &KubeconfigParts<'_>) -> zeroize::Zeroizing<String> {
    let b64 = |s: &str| STANDARD.encode(s.as_bytes());
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": p.cluster_name, "cluster": {"server": p.server, "certificate-authority-data": b64(p.ca_pem)}}],
        "users": [{"name": KUBECONFIG_USER, "user": {
            "client-certificate-data": b64(p.cert_pem),
            "client-key-data": b64(p.key_pem),
        }}],
        "contexts": [{"name": KUBECONFIG_CONTEXT, "context": {"cluster": p.cluster_name, "user": KUBECONFIG_USER, "namespace": p.namespace}}],
        "current-context": KUBECONFIG_CONTEXT,
    });
    zeroize::Zeroizing::new(serde_yaml::to_string(&doc).expect("a JSON document always serialises to YAML"))
}

/// The public parts (server, CA, client certificate) of an identity kubeconfig, for drift detection and import;
/// `None` for a kubeconfig without them (e.g. a brought one using a token).
fn public_parts(kubeconfig: &str) -> Option<(String, String, String)> {
    let doc: serde_yaml::Value = serde_yaml::from_str(kubeconfig).ok()?;
    let decode = |v: &serde_yaml::Value| String::from_utf8(STANDARD.decode(v.as_str()?).ok()?).ok();
    let cluster = doc.get("clusters")?.get(0)?.get("cluster")?;
    let user = doc.get("users")?.get(0)?.get("user")?;
    Some((
        cluster.get("server")?.as_str()?.to_string(),
        decode(cluster.get("certificate-authority-data")?)?,
        decode(user.get("client-certificate-data")?)?,
    ))
}

/// The private key of the key Secret, checked to be the one `cert_pem` was issued for. The errors name the Secret
/// and never quote the key.
fn key_for_certificate(
    secret: Option<&Secret>,
    object: &str,
    cert_pem: &str,
) -> Result<zeroize::Zeroizing<String>, OpError> {
    let failed =
        |reason: String, hint: &str| OpError::Failed { object: object.to_string(), reason, hint: hint.to_string() };
    let Some(secret) = secret.filter(|s| !is_terminating(*s)) else {
        return Err(failed(
            "it does not exist on this cluster".into(),
            "It holds this cluster's control-plane key, written by liqo_consumer_key: pass that resource's \
             `key_secret_name` as `client_key_secret` (Terraform then creates the key first), or apply again if it \
             was deleted out of band (liqo_consumer_key then makes a new key and the provider signs it).",
        ));
    };
    let key = secret
        .data
        .as_ref()
        .and_then(|d| d.get(consumer_key::PRIVATE_KEY))
        .and_then(|b| String::from_utf8(b.0.clone()).ok())
        .map(zeroize::Zeroizing::new)
        .ok_or_else(|| {
            failed(
                format!("it has no `{}` entry", consumer_key::PRIVATE_KEY),
                "Pass the Secret liqo_consumer_key wrote (`key_secret_name`).",
            )
        })?;
    let ours = crypto::private_key_public_key(&key).map_err(|why| {
        failed(
            format!("`{}`: {why}", consumer_key::PRIVATE_KEY),
            "Pass the Secret liqo_consumer_key wrote (`key_secret_name`).",
        )
    })?;
    let certified = crypto::certificate_public_key(cert_pem.as_bytes()).map_err(|why| {
        failed(format!("client_certificate: {why}"), "Pass the provider's liqo_tenant `client_certificate`.")
    })?;
    if ours != certified {
        return Err(failed(
            "client_certificate was issued for another key than the one in this Secret".into(),
            "The certificate and the key must come from the same peering: pass liqo_tenant's `client_certificate` \
             for the CSR of the liqo_consumer_key whose `key_secret_name` is `client_key_secret`. After a key \
             rotation, apply again so that liqo_tenant signs the new CSR first.",
        ));
    }
    Ok(key)
}

// -------------------------------------------------------------------------------------------------------------
// Waits (pure checks, unit-tested)
// -------------------------------------------------------------------------------------------------------------

fn condition_summary(rs: &ResourceSlice) -> String {
    let status = rs.status.as_ref();
    let show = |t: &str| {
        status.and_then(|s| s.condition(t)).map(|c| c.status.clone()).unwrap_or_else(|| "not reported".into())
    };
    format!(
        "Authentication = {}, Resources = {}",
        show(RESOURCE_SLICE_CONDITION_AUTHENTICATION),
        show(RESOURCE_SLICE_CONDITION_RESOURCES)
    )
}

fn denied_hint(condition: &str, peer: &Peer) -> String {
    if condition == RESOURCE_SLICE_CONDITION_AUTHENTICATION {
        format!(
            "The provider cluster `{}` did not accept this consumer's credentials for the slice. Check that the \
             liqo_tenant for this consumer exists in the provider's tenant namespace `{}`, that this namespace is \
             labelled for this consumer cluster, and that the provider runs Liqo 1.0.3 or later (1.0.2 denies \
             slices of TolerateNoHandshake tenants). Then run apply again.",
            peer.provider_cluster_id, peer.provider_tenant_namespace
        )
    } else {
        format!(
            "The provider cluster `{}` refused the requested resources: its Tenant for this consumer may be \
             Cordoned or Drained (liqo_tenant `tenant_condition`), or the controller of ResourceSlice class `{}` \
             declined the request. Fix that (or ask for less), then run apply again.",
            peer.provider_cluster_id, peer.class
        )
    }
}

/// Slice accepted (and, for the built-in class, granting the current request) → the granted resources.
fn slice_check(rs: Option<&ResourceSlice>, peer: &Peer) -> Verdict<BTreeMap<String, String>> {
    let Some(rs) = rs else {
        return Verdict::Pending("the ResourceSlice does not exist".into());
    };
    let status = rs.status.clone().unwrap_or_default();
    for t in [RESOURCE_SLICE_CONDITION_AUTHENTICATION, RESOURCE_SLICE_CONDITION_RESOURCES] {
        if let Some(c) = status.condition(t).filter(|c| c.status == RESOURCE_SLICE_DENIED) {
            return Verdict::Failed {
                reason: format!(
                    "Condition {t} is Denied (reason: {}; message: {}).",
                    c.reason.as_deref().unwrap_or("none given"),
                    c.message.as_deref().unwrap_or("none given")
                ),
                hint: denied_hint(t, peer),
            };
        }
    }
    if !status.is_accepted() {
        return Verdict::Pending(condition_summary(rs));
    }
    let granted: BTreeMap<String, String> =
        status.resources.iter().flatten().map(|(k, q)| (k.clone(), q.0.clone())).collect();
    if peer.grants_request() {
        for (key, wanted) in peer.resources.iter().flatten() {
            let got = granted.get(key);
            if !got.is_some_and(|g| quantity::same(g, wanted)) {
                return Verdict::Pending(format!(
                    "both conditions Accepted, but status.resources[{key}] is {} while {wanted} is requested \
                     (the provider has not processed the current request yet)",
                    got.map(|g| format!("`{g}`")).unwrap_or_else(|| "absent".into())
                ));
            }
        }
    }
    Verdict::Ready(granted)
}

/// VirtualNode running → whether Liqo also creates a core Node for it.
fn virtual_node_check(vn: Option<&VirtualNode>) -> Verdict<bool> {
    let Some(vn) = vn else {
        return Verdict::Pending("the VirtualNode does not exist (Liqo creates it once the slice is accepted)".into());
    };
    if is_terminating(vn) {
        return Verdict::Pending("the previous VirtualNode of this name is being deleted".into());
    }
    let create_node = vn.spec.create_node.unwrap_or(true);
    let status = vn.status.clone().unwrap_or_default();
    let show = |t: &str| status.condition(t).map(|c| c.status.clone()).unwrap_or_else(|| "not reported".into());
    let kubelet = show(VIRTUAL_NODE_CONDITION_VIRTUAL_KUBELET);
    let node = show(VIRTUAL_NODE_CONDITION_NODE);
    if kubelet == VIRTUAL_NODE_RUNNING && (!create_node || node == VIRTUAL_NODE_RUNNING) {
        Verdict::Ready(create_node)
    } else {
        Verdict::Pending(format!("VirtualKubelet = {kubelet}, Node = {node}"))
    }
}

fn node_check(node: Option<&Node>) -> Verdict<()> {
    let Some(node) = node else {
        return Verdict::Pending("the Node does not exist (the virtual kubelet registers it)".into());
    };
    if is_terminating(node) {
        return Verdict::Pending("the previous Node of this name is being deleted".into());
    }
    let ready =
        node.status.as_ref().and_then(|s| s.conditions.as_ref()).and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
    match ready {
        Some(c) if c.status == "True" => Verdict::Ready(()),
        Some(c) => Verdict::Pending(format!(
            "Ready = {} ({})",
            c.status,
            c.message.as_deref().or(c.reason.as_deref()).unwrap_or("no message")
        )),
        None => Verdict::Pending("no Ready condition yet".into()),
    }
}

/// Why a virtual node may stay NotReady, from the Connections to the provider on this cluster: with networking
/// configured Liqo's virtual kubelet (`--node-check-network`, on by default) keeps the node NotReady until the
/// Connection is `Connected`. `None` when a Connection is Connected (the tunnel is not the cause).
fn network_note(connections: &[Connection], provider: &str) -> Option<String> {
    let because = format!(
        "With networking to {provider} configured, Liqo keeps the virtual node NotReady until the network Connection \
         is {CONNECTION_CONNECTED} (virtual kubelet --node-check-network)"
    );
    if connections.is_empty() {
        return Some(format!(
            "{because}, and no Connection labelled {}={provider} exists on this cluster yet: if this peering uses \
             liqo_gateway, make this liqo_peer depend on the client gateway (depends_on), whose create waits for \
             {CONNECTION_CONNECTED}",
            labels::REMOTE_CLUSTER_ID
        ));
    }
    if connections.iter().any(|c| c.status.as_ref().and_then(|s| s.value.as_deref()) == Some(CONNECTION_CONNECTED)) {
        return None;
    }
    let states: Vec<String> = connections
        .iter()
        .map(|c| {
            format!(
                "{} is {}",
                crate::kube::describe::<Connection>(
                    c.metadata.namespace.as_deref(),
                    c.metadata.name.as_deref().unwrap_or("")
                ),
                c.status.as_ref().and_then(|s| s.value.as_deref()).unwrap_or("without status")
            )
        })
        .collect();
    Some(format!(
        "{because}; {}. Fix the tunnel (see the liqo_gateway resources of this peering and the Connection's events)",
        states.join(", ")
    ))
}

// -------------------------------------------------------------------------------------------------------------
// Read / import
// -------------------------------------------------------------------------------------------------------------

/// The state as the cluster has it. `prior` is the previous state (Null on import): values the cluster does
/// not hold (timeouts, wait flag) come from it, and quantities equal in value keep the user's spelling.
fn observed_state(prior: &Value, rs: &ResourceSlice, secret: &Secret) -> Value {
    let mut s = if prior.is_null() {
        Value::object([
            ("wait_for_virtual_node", Value::Bool(true)),
            ("kubeconfig_wo", Value::Null),
            ("kubeconfig_wo_version", Value::Null),
            ("timeouts", Value::Null),
        ])
    } else {
        prior.clone()
    };
    let ns = rs.metadata.namespace.clone().unwrap_or_default();
    let name = rs.metadata.name.clone().unwrap_or_default();
    s.set("id", Value::string(format!("{ns}/{name}")));
    s.set("tenant_namespace", Value::string(ns));
    s.set("resource_slice_name", Value::string(&name));
    let label = |k: &str| rs.metadata.labels.as_ref().and_then(|l| l.get(k)).cloned();
    let provider = label(labels::REMOTE_CLUSTER_ID).or_else(|| rs.spec.provider_cluster_id.clone());
    s.set("provider_cluster_id", Value::opt_string(provider.clone()));
    let annotation = secret.metadata.annotations.as_ref().and_then(|a| a.get(labels::REMOTE_TENANT_NAMESPACE));
    // The annotation tells Liqo where the slice lives on the provider, and Liqo's slice finalizer needs it to clean
    // up there: an out-of-band change is drift repaired in place (null, see `plan_values`), never a replacement,
    // whose delete would wait forever on a finalizer the broken annotation holds.
    let tenant_namespace = match prior.get("provider_tenant_namespace").as_str() {
        Some(ours) if annotation.map(String::as_str) != Some(ours) => Value::Null,
        _ => Value::opt_string(annotation.cloned()),
    };
    s.set("provider_tenant_namespace", tenant_namespace);
    // Liqo's own identity (imported, or kept so by configuring no credentials) is Liqo's: nothing of it is read.
    let liqo_identity = if prior.is_null() {
        minted_by_liqo(secret)
    } else {
        prior.get("kubeconfig_wo_version").is_null() && ISSUED.iter().all(|a| prior.get(a).is_null())
    };
    if liqo_identity {
        for attr in ISSUED {
            s.set(attr, Value::Null);
        }
    }
    // The issued-certificate flow's public parts as the Secret holds them (an edit shows as drift and is rewritten);
    // never the key. A brought kubeconfig is write-only: nothing of it is read back.
    if !liqo_identity && prior.get("kubeconfig_wo_version").is_null() {
        let parts = secret
            .data
            .as_ref()
            .and_then(|d| d.get(labels::KUBECONFIG_KEY))
            .and_then(|b| std::str::from_utf8(&b.0).ok())
            .and_then(public_parts);
        let (server, ca, cert) = match parts {
            Some((server, ca, cert)) => (Value::string(server), Value::string(ca), Value::string(cert)),
            None => (Value::Null, Value::Null, Value::Null),
        };
        s.set("api_server_url", server);
        s.set("cluster_ca_certificate", ca);
        s.set("client_certificate", cert);
        if prior.is_null() {
            s.set(
                "client_key_secret",
                Value::string(consumer_key::key_secret_name(provider.as_deref().unwrap_or_default())),
            );
        }
    }
    let managed = (!prior.is_null()).then(|| prior.get("resources"));
    s.set("resources", observed_resources(managed, rs.spec.resources.as_ref()));
    s.set("class", Value::opt_string(rs.spec.class.clone()));
    let create_vn = rs.metadata.annotations.as_ref().and_then(|a| a.get(labels::CREATE_VIRTUAL_NODE));
    let create_vn = match create_vn.map(String::as_str) {
        Some("true") => Value::Bool(true),
        Some("false") => Value::Bool(false),
        // Missing or mangled: null, so the next apply re-asserts it in place.
        _ => Value::Null,
    };
    match create_vn {
        Value::Bool(true) => s.set("virtual_node_name", Value::string(&name)),
        Value::Bool(false) => s.set("virtual_node_name", Value::Null),
        _ => {}
    }
    s.set("create_virtual_node", create_vn);
    let granted = rs.status.as_ref().and_then(|st| st.resources.as_ref());
    s.set(
        "accepted_resources",
        granted.map(|g| Value::string_map(g.iter().map(|(k, q)| (k.clone(), q.0.clone())))).unwrap_or(Value::Null),
    );
    s
}

/// The Identity that owns a control-plane Secret Liqo made from its authentication handshake, if any.
fn owning_identity(secret: &Secret) -> Option<String> {
    let owners = secret.metadata.owner_references.as_ref()?;
    owners
        .iter()
        .find(|o| o.kind == "Identity" && o.api_version.starts_with("authentication.liqo.io/"))
        .map(|o| o.name.clone())
}

fn minted_by_liqo(secret: &Secret) -> bool {
    owning_identity(secret).is_some()
}

/// `spec.resources` as state. `managed` is the prior state's map — the keys this resource asks for, so a changed
/// or removed one shows as drift, while keys someone else added are not ours and stay out of the state (server-side
/// apply leaves them alone too). A live quantity equal in value to the prior one keeps the prior spelling
/// (`1000m` vs `1`). On import (`None`) the whole live request is taken.
fn observed_resources(managed: Option<&Value>, live: Option<&BTreeMap<String, Quantity>>) -> Value {
    let live = live.cloned().unwrap_or_default();
    let Some(managed) = managed else {
        return if live.is_empty() { Value::Null } else { Value::string_map(live.into_iter().map(|(k, q)| (k, q.0))) };
    };
    let Some(keys) = managed.entries() else {
        return managed.clone();
    };
    Value::Map(
        keys.iter()
            .filter_map(|(k, prior)| {
                let q = live.get(k)?;
                let same = prior.as_str().is_some_and(|p| quantity::same(p, &q.0));
                Some((k.clone(), if same { prior.clone() } else { Value::string(&q.0) }))
            })
            .collect(),
    )
}

fn parse_import_id(id: &str) -> Result<(String, String), Diagnostic> {
    let bad = || {
        Diagnostic::error(
            "Invalid import ID for liqo_peer",
            format!(
                "Expected `<tenant_namespace>/<resource_slice_name>` (e.g. `liqo-tenant-milan/milan`), got `{id}`."
            ),
        )
    };
    let (ns, name) = id.split_once('/').ok_or_else(bad)?;
    if check_dns_label(ns).is_err() || check_dns_label(name).is_err() {
        return Err(bad());
    }
    Ok((ns.to_string(), name.to_string()))
}

// -------------------------------------------------------------------------------------------------------------
// The resource
// -------------------------------------------------------------------------------------------------------------

impl PeerResource {
    /// Writes both objects and waits; `written` tells the caller whether anything reached the cluster.
    async fn converge(
        &self,
        ctx: &Ctx,
        client: &kube::Client,
        peer: &Peer,
        deadline: Deadline,
        written: &mut bool,
        accepted: &mut Option<BTreeMap<String, String>>,
    ) -> Result<(), OpError> {
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &peer.tenant_namespace);
        let slices: Api<ResourceSlice> = Api::namespaced(client.clone(), &peer.tenant_namespace);

        // An identity Secret deleted out of band stays until Liqo has nothing replicated: take the slice down
        // first, then rebuild both (this apply is a re-creation anyway).
        let secret = crate::kube::get_opt(ctx, &secrets, &peer.secret_name()).await?;
        if secret.as_ref().is_some_and(is_terminating) {
            self.unpeer_slice(ctx, client, &peer.tenant_namespace, &peer.slice_name, deadline).await?;
            crate::kube::settle(ctx, &secrets, &peer.secret_name(), deadline.left()).await?;
        }
        let kubeconfig = match &peer.credentials {
            Credentials::Issued { server, ca_pem, cert_pem, key_secret } => Some({
                let found = crate::kube::get_opt(ctx, &secrets, key_secret).await?;
                let object = crate::kube::describe::<Secret>(Some(&peer.tenant_namespace), key_secret);
                let key = key_for_certificate(found.as_ref(), &object, cert_pem)?;
                assemble_kubeconfig(&KubeconfigParts {
                    server,
                    ca_pem,
                    cert_pem,
                    key_pem: &key,
                    cluster_name: &peer.provider_cluster_id,
                    namespace: &peer.provider_tenant_namespace,
                })
            }),
            Credentials::Brought(Brought(kubeconfig)) => Some(zeroize::Zeroizing::new(kubeconfig.clone())),
            Credentials::Liqo if secret.as_ref().is_some_and(|s| !is_terminating(s)) => None,
            Credentials::Liqo => {
                return Err(OpError::Failed {
                    object: crate::kube::describe::<Secret>(Some(&peer.tenant_namespace), &peer.secret_name()),
                    reason: "no credentials are configured, which keeps the control-plane identity Liqo minted, but \
                             that identity does not exist (any more)."
                        .into(),
                    hint: "Configure the issued-certificate flow (`api_server_url`, `cluster_ca_certificate` and \
                           `client_certificate` from liqo_tenant, `client_key_secret` from liqo_consumer_key) or \
                           `kubeconfig_wo`, or authenticate again with `liqoctl authenticate`, then apply again."
                        .into(),
                });
            }
        };
        // The Secret first: the crd-replicator needs it to replicate the slice. A new kubeconfig (a renewed
        // certificate, a rotated key) replaces the old one in place, and Liqo's crd-replicator reconnects with it.
        if let Some(kubeconfig) = kubeconfig {
            crate::kube::apply(ctx, &secrets, &peer.identity_secret(&kubeconfig)).await?;
            *written = true;
        }
        crate::kube::settle(ctx, &slices, &peer.slice_name, deadline.left()).await?;
        crate::kube::apply(ctx, &slices, &peer.resource_slice()).await?;
        *written = true;

        let waiting_for = if peer.grants_request() && peer.resources.is_some() {
            "conditions Authentication and Resources = Accepted, granting the requested resources"
        } else {
            "conditions Authentication and Resources = Accepted"
        };
        let granted = crate::kube::wait_for(ctx, &slices, &peer.slice_name, waiting_for, deadline.left(), |rs| {
            slice_check(rs, peer)
        })
        .await?;
        *accepted = Some(granted);

        if peer.create_virtual_node && peer.wait_for_virtual_node {
            let vns: Api<VirtualNode> = Api::namespaced(client.clone(), &peer.tenant_namespace);
            let create_node = crate::kube::wait_for(
                ctx,
                &vns,
                &peer.slice_name,
                "conditions VirtualKubelet and Node = Running",
                deadline.left(),
                virtual_node_check,
            )
            .await?;
            if create_node {
                let nodes: Api<Node> = Api::all(client.clone());
                let ready = crate::kube::wait_for(
                    ctx,
                    &nodes,
                    &peer.slice_name,
                    "condition Ready = True",
                    deadline.left(),
                    node_check,
                )
                .await;
                if let Err(OpError::Timeout { object, waiting_for, last_seen, after }) = ready {
                    // Name the Connection in the error: the most common reason a new virtual node stays NotReady.
                    let connections: Api<Connection> = Api::all(client.clone());
                    let selector = format!("{}={}", labels::REMOTE_CLUSTER_ID, peer.provider_cluster_id);
                    let last_seen = match crate::kube::list(ctx, &connections, &selector).await {
                        Ok(found) => match network_note(&found, &peer.provider_cluster_id) {
                            Some(note) => format!("{last_seen}. {note}"),
                            None => last_seen,
                        },
                        Err(_) => last_seen,
                    };
                    return Err(OpError::Timeout { object, waiting_for, last_seen, after });
                }
                ready?;
            }
        }
        Ok(())
    }

    /// Liqo's teardown order (reference §6); each step waits for the object to be gone.
    async fn remove(&self, ctx: &Ctx, client: &kube::Client, prior: &Value, deadline: Deadline) -> Result<(), OpError> {
        let ns = prior.get("tenant_namespace").as_str().unwrap_or_default();
        let name = prior.get("resource_slice_name").as_str().unwrap_or_default();
        let provider = prior.get("provider_cluster_id").as_str().unwrap_or_default();
        self.unpeer_slice(ctx, client, ns, name, deadline).await?;

        // Other slices for the same provider still need the shared identity Secret (and would hold its finalizer).
        let slices: Api<ResourceSlice> = Api::namespaced(client.clone(), ns);
        let selector = format!("{}={provider}", labels::REMOTE_CLUSTER_ID);
        let others = crate::kube::list(ctx, &slices, &selector).await?;
        if others.iter().all(|rs| rs.metadata.name.as_deref() == Some(name)) {
            let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
            let secret_name = identity_secret_name(provider);
            // Liqo's identity goes as `liqoctl unpeer` removes it: through its Identity, which owns the Secret.
            let owner = crate::kube::get_opt(ctx, &secrets, &secret_name).await?.as_ref().and_then(owning_identity);
            if let Some(identity) = owner {
                let identities: Api<Identity> = Api::namespaced(client.clone(), ns);
                crate::kube::delete_and_wait(ctx, &identities, &identity, deadline.left()).await?;
            }
            crate::kube::delete_and_wait(ctx, &secrets, &secret_name, deadline.left()).await?;
        }
        Ok(())
    }

    /// The slice (its finalizer needs the credentials, still present), then the VirtualNode and Node Liqo derived
    /// from it, each waited for until gone.
    async fn unpeer_slice(
        &self,
        ctx: &Ctx,
        client: &kube::Client,
        ns: &str,
        name: &str,
        deadline: Deadline,
    ) -> Result<(), OpError> {
        let slices: Api<ResourceSlice> = Api::namespaced(client.clone(), ns);
        crate::kube::delete_and_wait(ctx, &slices, name, deadline.left()).await?;

        let vns: Api<VirtualNode> = Api::namespaced(client.clone(), ns);
        crate::kube::wait_deleted(ctx, &vns, name, "deletion by Liqo (it follows its ResourceSlice)", deadline.left())
            .await?;
        let nodes: Api<Node> = Api::all(client.clone());
        crate::kube::wait_deleted(ctx, &nodes, name, "deletion by the virtual kubelet", deadline.left()).await
    }

    async fn delete(&self, ctx: &Ctx, prior: Value) -> ApplyResponse {
        let deadline = Deadline::after(Timeouts::from_value(&prior, DEFAULT_TIMEOUTS).delete);
        let result = match self.cluster.client().await {
            Ok(client) => self.remove(ctx, &client, &prior, deadline).await.map_err(|e| op_diags(&e)),
            Err(d) => Err(d.into()),
        };
        match result {
            Ok(()) => ApplyResponse { new_state: Value::Null, private: vec![], diagnostics: Diagnostics::new() },
            // Still (partly) there: keep it in state so the next destroy resumes.
            Err(diagnostics) => ApplyResponse { new_state: prior, private: vec![], diagnostics },
        }
    }
}

#[async_trait]
impl Resource for PeerResource {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        validate(config)
    }

    async fn plan(&self, _ctx: &Ctx, req: PlanRequest) -> PlanResponse {
        let (planned, requires_replace) = plan_values(&req.prior, &req.proposed, &req.config);
        PlanResponse { planned, requires_replace, private: req.private, diagnostics: Diagnostics::new() }
    }

    async fn apply(&self, ctx: &Ctx, req: ApplyRequest) -> ApplyResponse {
        if req.planned.is_null() {
            return self.delete(ctx, req.prior).await;
        }
        let unchanged =
            |diagnostics: Diagnostics| ApplyResponse { new_state: req.prior.clone(), private: vec![], diagnostics };
        let peer = match Peer::from_value(&req.planned, &req.config) {
            Ok(p) => p,
            Err(d) => return unchanged(d.into()),
        };
        let client = match self.cluster.client().await {
            Ok(c) => c,
            Err(d) => return unchanged(d.into()),
        };
        let timeouts = Timeouts::from_value(&req.planned, DEFAULT_TIMEOUTS);
        let budget = if req.prior.is_null() { timeouts.create } else { timeouts.update };
        let (mut written, mut accepted) = (false, None);
        let result = self.converge(ctx, &client, &peer, Deadline::after(budget), &mut written, &mut accepted).await;
        match result {
            Ok(()) => ApplyResponse {
                new_state: peer.state(&req.planned, accepted.as_ref()),
                private: vec![],
                diagnostics: Diagnostics::new(),
            },
            // Objects were written: record them (a failed create is tainted and replaced), nothing is orphaned.
            Err(e) if written => ApplyResponse {
                new_state: peer.state(&req.planned, accepted.as_ref()),
                private: vec![],
                diagnostics: op_diags(&e),
            },
            Err(e) => unchanged(op_diags(&e)),
        }
    }

    async fn read(&self, ctx: &Ctx, state: Value, private: Vec<u8>) -> ReadResponse {
        let client = match self.cluster.client().await {
            Ok(c) => c,
            Err(d) => return ReadResponse { new_state: state, private, diagnostics: d.into() },
        };
        let ns = state.get("tenant_namespace").as_str().unwrap_or_default().to_string();
        let name = state.get("resource_slice_name").as_str().unwrap_or_default().to_string();
        let provider = state.get("provider_cluster_id").as_str().unwrap_or_default().to_string();
        let slices: Api<ResourceSlice> = Api::namespaced(client.clone(), &ns);
        let secrets: Api<Secret> = Api::namespaced(client, &ns);
        let objects = async {
            let rs = crate::kube::get_opt(ctx, &slices, &name).await?;
            let secret = crate::kube::get_opt(ctx, &secrets, &identity_secret_name(&provider)).await?;
            Ok::<_, OpError>((rs, secret))
        };
        match objects.await {
            Ok((Some(rs), Some(secret))) if !is_terminating(&rs) && !is_terminating(&secret) => ReadResponse {
                new_state: observed_state(&state, &rs, &secret),
                private,
                diagnostics: Diagnostics::new(),
            },
            // Either object gone or going: Terraform plans to create it again (apply waits out the deletion,
            // and is idempotent for the rest).
            Ok(_) => ReadResponse { new_state: Value::Null, private, diagnostics: Diagnostics::new() },
            Err(e) => ReadResponse { new_state: state, private, diagnostics: op_diags(&e) },
        }
    }

    /// From 0.2.0 (version 0): the `kubeconfig` holding the private key is dropped; the configuration then sets
    /// the issued-certificate attributes, and the next apply rewrites the identity Secret in place.
    fn upgrade(&self, version: i64, state: serde_json::Value) -> Result<serde_json::Value, Diagnostics> {
        crate::resources::common::upgrade_dropping_v0_attribute(TYPE_NAME, "kubeconfig", SCHEMA_VERSION, version, state)
    }

    async fn import(&self, ctx: &Ctx, id: &str) -> Result<Vec<ImportedResource>, Diagnostics> {
        let (ns, name) = parse_import_id(id)?;
        let client = self.cluster.client().await?;
        let slices: Api<ResourceSlice> = Api::namespaced(client.clone(), &ns);
        let rs = crate::kube::get_opt(ctx, &slices, &name).await.map_err(|e| op_diags(&e))?.ok_or_else(|| {
            Diagnostic::error(
                format!("ResourceSlice {ns}/{name} not found"),
                "Nothing to import: check the namespace and name (`kubectl get resourceslices -A` on the consumer \
                 cluster), or create the peering with this resource instead.",
            )
        })?;
        let provider = rs
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::REMOTE_CLUSTER_ID))
            .cloned()
            .or_else(|| rs.spec.provider_cluster_id.clone())
            .ok_or_else(|| {
                Diagnostic::error(
                    format!("ResourceSlice {ns}/{name} names no provider cluster"),
                    format!(
                        "It has neither the `{}` label nor `spec.providerClusterID`, so it is not a peering \
                         liqo_peer can manage.",
                        labels::REMOTE_CLUSTER_ID
                    ),
                )
            })?;
        let secrets: Api<Secret> = Api::namespaced(client, &ns);
        let secret_name = identity_secret_name(&provider);
        let secret =
            crate::kube::get_opt(ctx, &secrets, &secret_name).await.map_err(|e| op_diags(&e))?.ok_or_else(|| {
                Diagnostic::error(
                    format!("Secret {ns}/{secret_name} not found"),
                    format!(
                        "liqo_peer manages (or, for an identity Liqo minted, keeps) the control-plane identity Secret \
                     `{secret_name}` next to the ResourceSlice, and this peering has none: Liqo cannot replicate \
                     the slice without it. Authenticate first (`liqoctl authenticate`, or liqo_tenant with \
                     liqo_consumer_key and this resource's credentials), then import."
                    ),
                )
            })?;
        Ok(vec![ImportedResource { state: observed_state(&Value::Null, &rs, &secret), private: vec![] }])
    }
}

// -------------------------------------------------------------------------------------------------------------
// Kubernetes quantities
// -------------------------------------------------------------------------------------------------------------

/// Kubernetes resource quantities (`4`, `500m`, `8Gi`, `1e3`): the grammar Liqo's CRD accepts for a
/// `ResourceList` value, restricted to what Kubernetes keeps exactly (non-negative, integer exponents, no finer
/// than `1n`), and equality by value, because Liqo writes quantities back in canonical form (`1000m` → `1`).
mod quantity {
    /// A parsed quantity: `mantissa × 10^exp10 × 2^exp2`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Parsed {
        mantissa: Option<u128>,
        exp10: i64,
        exp2: u32,
    }

    const BINARY: [(&str, u32); 6] = [("Ki", 10), ("Mi", 20), ("Gi", 30), ("Ti", 40), ("Pi", 50), ("Ei", 60)];
    const DECIMAL: [(&str, i64); 9] =
        [("n", -9), ("u", -6), ("m", -3), ("k", 3), ("M", 6), ("G", 9), ("T", 12), ("P", 15), ("E", 18)];

    pub fn parse(s: &str) -> Result<Parsed, String> {
        if s.is_empty() {
            return Err("is empty".into());
        }
        let body = match s.as_bytes()[0] {
            b'-' => return Err("is negative".into()),
            b'+' => &s[1..],
            _ => s,
        };
        let num_len = body.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(body.len());
        let (number, suffix) = body.split_at(num_len);
        let (int, frac) = number.split_once('.').unwrap_or((number, ""));
        if int.is_empty() && frac.is_empty() {
            return Err("does not start with a number".into());
        }
        if frac.contains('.') {
            return Err("has more than one decimal point".into());
        }
        let (exp10, exp2) = suffix_scale(suffix)?;
        let exp10 = exp10 - frac.len() as i64;
        let digits = format!("{int}{frac}");
        let digits = digits.trim_start_matches('0');
        // More digits than u128 holds: valid, but only comparable by spelling.
        let mantissa = if digits.is_empty() { Some(0) } else { digits.parse::<u128>().ok() };
        let parsed = Parsed { mantissa, exp10, exp2 };
        if parsed.canonical().is_some_and(|(m, e)| m != 0 && e < -9) {
            return Err("is more precise than 1n (Kubernetes rounds such values up)".into());
        }
        Ok(parsed)
    }

    fn suffix_scale(suffix: &str) -> Result<(i64, u32), String> {
        if suffix.is_empty() {
            return Ok((0, 0));
        }
        if let Some((_, p)) = BINARY.iter().find(|(s, _)| *s == suffix) {
            return Ok((0, *p));
        }
        if let Some((_, p)) = DECIMAL.iter().find(|(s, _)| *s == suffix) {
            return Ok((*p, 0));
        }
        if let Some(exp) = suffix.strip_prefix(['e', 'E']) {
            let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
            if !digits.is_empty() && digits.len() <= 4 && digits.bytes().all(|b| b.is_ascii_digit()) {
                return Ok((exp.parse::<i64>().map_err(|_| format!("has an invalid exponent `{suffix}`"))?, 0));
            }
            return Err(format!("has an invalid exponent `{suffix}` (write a whole number after e, like `1e3`)"));
        }
        Err(format!(
            "has an unknown suffix `{suffix}` (use Ki, Mi, Gi, Ti, Pi, Ei for powers of 1024; n, u, m, k, M, G, T, \
             P, E for powers of 1000; or an exponent like e3)"
        ))
    }

    impl Parsed {
        /// `(mantissa, exp10)` with the binary factor folded in and trailing zeros removed: equal values have
        /// equal canonical forms. None when it does not fit in 128 bits.
        fn canonical(&self) -> Option<(u128, i64)> {
            let mut m = self.mantissa?.checked_mul(1u128.checked_shl(self.exp2)?)?;
            let mut e = self.exp10;
            if m == 0 {
                return Some((0, 0));
            }
            while m % 10 == 0 {
                m /= 10;
                e += 1;
            }
            Some((m, e))
        }
    }

    /// True when both are valid quantities of the same value, or (when a value is too large to compare
    /// exactly) spelled the same.
    pub fn same(a: &str, b: &str) -> bool {
        match (parse(a).ok().and_then(|p| p.canonical()), parse(b).ok().and_then(|p| p.canonical())) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use liqo_schema::liqo::{LiqoCondition, ResourceSliceStatus, VirtualNodeSpec, VirtualNodeStatus};
    use liqo_schema::tf::{Nesting, Severity};

    fn config() -> Value {
        Value::object([
            ("tenant_namespace", Value::string("liqo-tenant-milan")),
            ("provider_cluster_id", Value::string("milan")),
            ("provider_tenant_namespace", Value::string("liqo-tenant-rome")),
            ("api_server_url", Value::string("https://milan.example.com:6443")),
            ("cluster_ca_certificate", Value::string(&issued().ca)),
            ("client_certificate", Value::string(&issued().cert)),
            ("client_key_secret", Value::string("controlplane-key-milan")),
            ("kubeconfig_wo", Value::Null),
            ("kubeconfig_wo_version", Value::Null),
            ("resources", Value::string_map([("cpu", "4"), ("memory", "8Gi"), ("pods", "110")])),
            ("class", Value::Null),
            ("create_virtual_node", Value::Null),
            ("resource_slice_name", Value::Null),
            ("wait_for_virtual_node", Value::Null),
            ("id", Value::Null),
            ("virtual_node_name", Value::Null),
            ("accepted_resources", Value::Null),
            ("timeouts", Value::Null),
        ])
    }

    /// A CA, a client certificate it signed and the client's key, made once per test process.
    struct Issued {
        ca: String,
        cert: String,
        key: String,
    }

    fn issued() -> &'static Issued {
        static ISSUED: std::sync::OnceLock<Issued> = std::sync::OnceLock::new();
        ISSUED.get_or_init(|| {
            let ca_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
            let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            let ca = ca_params.self_signed(&ca_key).unwrap();
            let issuer = rcgen::Issuer::new(ca_params, &ca_key);
            let client = crypto::new_client_key("rome", "liqo.io").unwrap();
            let key = rcgen::KeyPair::from_pem(&client.key_pem).unwrap();
            let cert = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap().signed_by(&key, &issuer).unwrap();
            Issued { ca: ca.pem(), cert: cert.pem(), key: client.key_pem.to_string() }
        })
    }

    fn key_secret(key_pem: &str) -> Secret {
        Secret {
            data: Some(BTreeMap::from([(
                consumer_key::PRIVATE_KEY.to_string(),
                ByteString(key_pem.as_bytes().to_vec()),
            )])),
            ..Default::default()
        }
    }

    fn error_paths(d: &Diagnostics) -> Vec<String> {
        d.iter().filter(|d| d.severity == Severity::Error).map(|d| d.attribute.as_ref().unwrap().to_string()).collect()
    }

    fn planned_peer() -> (Value, Peer) {
        let (planned, _) = plan_values(&Value::Null, &config(), &config());
        let mut known = planned.clone();
        known.set("accepted_resources", Value::Null);
        let peer = Peer::from_value(&known, &config()).unwrap();
        (planned, peer)
    }

    fn cond(t: &str, s: &str) -> LiqoCondition {
        LiqoCondition { type_: t.into(), status: s.into(), ..Default::default() }
    }

    fn slice_with(conditions: Vec<LiqoCondition>, granted: &[(&str, &str)]) -> ResourceSlice {
        let (_, peer) = planned_peer();
        let mut rs = peer.resource_slice();
        rs.status = Some(ResourceSliceStatus {
            conditions: Some(conditions),
            resources: Some(granted.iter().map(|(k, v)| (k.to_string(), Quantity(v.to_string()))).collect()),
            ..Default::default()
        });
        rs
    }

    #[test]
    fn schema_describes_everything_and_keeps_the_brought_kubeconfig_out_of_state() {
        let s = schema();
        for a in &s.block.attributes {
            assert!(!a.description.is_empty(), "{} has no description", a.name);
        }
        assert!(s.block.attribute("kubeconfig").is_none(), "no key passes through state");
        let wo = s.block.attribute("kubeconfig_wo").unwrap();
        assert!(wo.write_only && wo.sensitive && wo.optional);
        for public in ISSUED {
            let a = s.block.attribute(public).unwrap();
            assert!(a.optional && !a.sensitive && !a.write_only, "{public}");
        }
        for out in ["id", "virtual_node_name", "accepted_resources"] {
            let a = s.block.attribute(out).unwrap();
            assert!(a.computed && !a.optional && !a.required, "{out} must be computed only");
        }
        for input in ["tenant_namespace", "provider_cluster_id", "provider_tenant_namespace"] {
            assert!(s.block.attribute(input).unwrap().required, "{input} must be required");
        }
        assert!(s.block.blocks.iter().any(|b| b.type_name == "timeouts" && b.nesting == Nesting::Single));
    }

    #[test]
    fn validation_names_each_bad_attribute() {
        let mut c = config();
        c.set("tenant_namespace", Value::string("Tenant_NS"));
        c.set("provider_cluster_id", Value::string("-milan"));
        c.set("provider_tenant_namespace", Value::Unknown);
        c.set("client_certificate", Value::string("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"));
        c.set("resource_slice_name", Value::string("a.b"));
        c.set("class", Value::string(""));
        c.set(
            "resources",
            Value::Map(BTreeMap::from([
                ("cpu".to_string(), Value::string("-1")),
                ("memory".to_string(), Value::string("8GB")),
                ("pods".to_string(), Value::Unknown),
                ("bad key!".to_string(), Value::string("1")),
                ("nvidia.com/gpu".to_string(), Value::string("2")),
            ])),
        );
        c.set("timeouts", Value::object([("create", Value::string("10 minutes"))]));
        let d = validate(&c);
        assert_eq!(
            error_paths(&d),
            [
                "tenant_namespace",
                "provider_cluster_id",
                "resource_slice_name",
                "class",
                "client_certificate",
                r#"resources["bad key!"]"#,
                r#"resources["cpu"]"#,
                r#"resources["memory"]"#,
                "timeouts.create",
            ]
        );
        let cert = d.iter().find(|d| d.attribute.as_ref().unwrap().to_string() == "client_certificate").unwrap();
        assert!(cert.detail.contains("PRIVATE KEY") && !cert.detail.contains("AAAA"), "{}", cert.detail);
        assert!(validate(&config()).is_empty());
    }

    /// One flow or the other, complete; each mistake names the attribute to fix.
    #[test]
    fn credentials_are_one_complete_flow() {
        let brought = |version: Value, kubeconfig: &str| {
            let mut c = config();
            for a in ISSUED {
                c.set(a, Value::Null);
            }
            c.set("kubeconfig_wo", Value::string(kubeconfig));
            c.set("kubeconfig_wo_version", version);
            c
        };
        let good = "clusters: [{name: milan}]\nusers: [{name: eks, user: {token: SECRET-TOKEN}}]\n";
        assert!(validate(&brought(Value::Number(1.0), good)).is_empty());
        assert_eq!(error_paths(&validate(&brought(Value::Null, good))), ["kubeconfig_wo_version"]);
        let d = validate(&brought(Value::Number(1.0), "clusters: []\nusers: [{user: {token: SECRET-TOKEN}}]"));
        assert_eq!(error_paths(&d), ["kubeconfig_wo"]);
        assert!(d.0[0].detail.contains("no `clusters` entry") && !d.0[0].detail.contains("SECRET"), "never echoed");

        let mut both = config();
        both.set("kubeconfig_wo", Value::string(good));
        assert_eq!(error_paths(&validate(&both)), ["kubeconfig_wo"]);
        let mut none = config();
        for a in ISSUED {
            none.set(a, Value::Null);
        }
        assert!(validate(&none).is_empty(), "no credentials keep the identity Liqo minted");
        let mut version_only = none.clone();
        version_only.set("kubeconfig_wo_version", Value::Number(1.0));
        assert_eq!(error_paths(&validate(&version_only)), ["kubeconfig_wo"]);
        let (planned, _) = plan_values(&Value::Null, &none, &none);
        assert_eq!(Peer::from_value(&planned, &none).unwrap().credentials, Credentials::Liqo);
        let mut partial = config();
        partial.set("client_key_secret", Value::Null);
        partial.set("api_server_url", Value::Unknown);
        assert_eq!(error_paths(&validate(&partial)), ["client_key_secret"]);
        let mut bad = config();
        bad.set("api_server_url", Value::string("http://milan:6443"));
        bad.set("cluster_ca_certificate", Value::string(format!("{}{}", issued().ca, issued().key)));
        assert_eq!(error_paths(&validate(&bad)), ["api_server_url", "cluster_ca_certificate"]);
    }

    /// The assembled kubeconfig has Liqo's shape and loads in kube-rs with the P-256 key; its public parts read
    /// back for drift detection, the key never does.
    #[tokio::test]
    async fn the_identity_kubeconfig_joins_the_public_parts_to_the_local_key() {
        let (_, peer) = planned_peer();
        let Credentials::Issued { server, ca_pem, cert_pem, .. } = &peer.credentials else { panic!("issued flow") };
        let key =
            key_for_certificate(Some(&key_secret(&issued().key)), "Secret liqo-tenant-milan/k", cert_pem).unwrap();
        let yaml = assemble_kubeconfig(&KubeconfigParts {
            server,
            ca_pem,
            cert_pem,
            key_pem: &key,
            cluster_name: "milan",
            namespace: "liqo-tenant-rome",
        });
        let kc = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
        assert_eq!(kc.current_context.as_deref(), Some("default-context"));
        let context = kc.contexts[0].context.as_ref().unwrap();
        assert_eq!((context.cluster.as_str(), context.namespace.as_deref()), ("milan", Some("liqo-tenant-rome")));
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await.unwrap();
        assert_eq!(config.default_namespace, "liqo-tenant-rome");
        // Building the client loads the identity into rustls: this fails if rustls rejects the key format.
        kube::Client::try_from(config).expect("rustls accepts the P-256 PKCS#8 client key");
        assert_eq!(public_parts(&yaml), Some((server.clone(), ca_pem.clone(), cert_pem.clone())));

        // Read reflects those parts and never the key.
        let (planned, _) = planned_peer();
        let prior = peer.state(&planned, None);
        let rs = peer.resource_slice();
        let s = observed_state(&prior, &rs, &peer.identity_secret(&yaml));
        for a in ISSUED {
            assert_eq!(s.get(a), prior.get(a), "{a}");
        }
        assert!(!format!("{s:?}").contains(issued().key.lines().nth(1).unwrap()));
        // An identity Secret edited to another certificate shows as drift.
        let edited = yaml.replace(&STANDARD.encode(cert_pem.as_bytes()), &STANDARD.encode(issued().ca.as_bytes()));
        let s = observed_state(&prior, &rs, &peer.identity_secret(&edited));
        assert_eq!(s.get("client_certificate").as_str(), Some(issued().ca.as_str()));
    }

    #[test]
    fn the_key_must_be_the_certified_one() {
        let object = "Secret liqo-tenant-milan/controlplane-key-milan";
        let cert = &issued().cert;
        let other = crypto::new_client_key("rome", "liqo.io").unwrap();
        let reason = |r: Result<zeroize::Zeroizing<String>, OpError>| match r {
            Err(OpError::Failed { object: o, reason, .. }) => {
                assert_eq!(o, object);
                reason
            }
            _ => panic!("expected a failure"),
        };
        assert!(reason(key_for_certificate(None, object, cert)).contains("does not exist"));
        let mismatch = reason(key_for_certificate(Some(&key_secret(&other.key_pem)), object, cert));
        assert!(mismatch.contains("another key"), "{mismatch}");
        assert!(!mismatch.contains(other.key_pem.lines().nth(1).unwrap()));
        assert!(reason(key_for_certificate(Some(&Secret::default()), object, cert)).contains("privateKey"));
        assert!(key_for_certificate(Some(&key_secret(&issued().key)), object, cert).is_ok());
    }

    /// A brought kubeconfig comes from the configuration only and never shows in Debug output.
    #[test]
    fn a_brought_kubeconfig_comes_from_the_configuration() {
        let (planned, _) = planned_peer();
        let mut cfg = config();
        cfg.set("kubeconfig_wo", Value::string("clusters: [{}]\nusers: [{user: {token: SECRET-TOKEN}}]"));
        let peer = Peer::from_value(&planned, &cfg).unwrap();
        assert!(matches!(&peer.credentials, Credentials::Brought(Brought(k)) if k.contains("SECRET-TOKEN")));
        assert!(!format!("{peer:?}").contains("SECRET-TOKEN"));
    }

    #[test]
    fn upgrading_0_2_0_state_drops_the_kubeconfig() {
        let resource = PeerResource::new(Arc::new(ClusterApi::default()));
        let old = serde_json::json!({"id": "liqo-tenant-milan/milan", "kubeconfig": "users: [{user: {client-key-data: S0VZ}}]"});
        let upgraded = resource.upgrade(0, old).unwrap();
        assert_eq!(upgraded, serde_json::json!({"id": "liqo-tenant-milan/milan"}));
        assert!(resource.upgrade(2, upgraded).is_err());
    }

    #[test]
    fn quantities_follow_the_kubernetes_grammar() {
        for ok in
            ["4", "500m", "8Gi", "1e3", "1E3", "0.5", ".5", "5.", "+2", "110", "1Ei", "1E", "2e-3", "100u", "1n", "0"]
        {
            assert!(quantity::parse(ok).is_ok(), "{ok} should parse");
        }
        for bad in ["", "-1", "8GB", "1.2.3", "Gi", "e3", "1e", "1e3.5", "4 ", " 4", "1ki", "0.1n", "1e-10", "abc"] {
            assert!(quantity::parse(bad).is_err(), "{bad} should be rejected");
        }
        assert!(quantity::same("1000m", "1"));
        assert!(quantity::same("1Gi", "1073741824"));
        assert!(quantity::same("1.5Gi", "1536Mi"));
        assert!(quantity::same("1e3", "1k"));
        assert!(quantity::same("0", "0m"));
        assert!(!quantity::same("1G", "1Gi"));
        assert!(!quantity::same("4", "8"));
    }

    #[test]
    fn create_plan_fills_defaults_and_leaves_the_grant_unknown() {
        let (planned, replace) = plan_values(&Value::Null, &config(), &config());
        assert!(replace.is_empty());
        assert_eq!(planned.get("class"), &Value::string("default"));
        assert_eq!(planned.get("create_virtual_node"), &Value::Bool(true));
        assert_eq!(planned.get("wait_for_virtual_node"), &Value::Bool(true));
        assert_eq!(planned.get("resource_slice_name"), &Value::string("milan"));
        assert_eq!(planned.get("id"), &Value::string("liqo-tenant-milan/milan"));
        assert_eq!(planned.get("virtual_node_name"), &Value::string("milan"));
        assert!(planned.get("accepted_resources").is_unknown());

        // Cross-resource references unknown at plan time stay unknown, without errors.
        let mut c = config();
        c.set("provider_cluster_id", Value::Unknown);
        let (planned, _) = plan_values(&Value::Null, &c, &c);
        assert!(planned.get("resource_slice_name").is_unknown());
        assert!(planned.get("id").is_unknown());
        assert!(planned.get("virtual_node_name").is_unknown());
    }

    #[test]
    fn resizing_updates_in_place_and_renaming_replaces() {
        let (planned, peer) = planned_peer();
        let prior = peer.state(&planned, Some(&BTreeMap::from([("cpu".to_string(), "4".to_string())])));

        // Same config: nothing changes, the grant is kept.
        let (again, replace) = plan_values(&prior, &prior, &config());
        assert!(replace.is_empty());
        assert_eq!(again, prior);

        // Resize: in place, grant unknown until the provider answers.
        let mut proposed = prior.clone();
        proposed.set("resources", Value::string_map([("cpu", "8")]));
        let mut cfg = config();
        cfg.set("resources", proposed.get("resources").clone());
        let (planned, replace) = plan_values(&prior, &proposed, &cfg);
        assert!(replace.is_empty());
        assert!(planned.get("accepted_resources").is_unknown());

        // A renewed certificate, or a new kubeconfig version: in place.
        for (attr, value) in
            [("client_certificate", Value::string("renewed")), ("kubeconfig_wo_version", Value::Number(2.0))]
        {
            let mut proposed = prior.clone();
            proposed.set(attr, value);
            assert!(plan_values(&prior, &proposed, &config()).1.is_empty(), "{attr}");
        }

        for (attr, value) in [
            ("resource_slice_name", Value::string("other")),
            ("class", Value::string("gold")),
            ("create_virtual_node", Value::Bool(false)),
            ("provider_tenant_namespace", Value::string("elsewhere")),
        ] {
            let mut proposed = prior.clone();
            proposed.set(attr, value.clone());
            let mut cfg = config();
            cfg.set(attr, value);
            let (_, replace) = plan_values(&prior, &proposed, &cfg);
            assert_eq!(replace, vec![AttributePath::root(attr)], "{attr}");
        }

        // A value that vanished from the cluster (null after refresh) is re-asserted in place.
        let mut drifted = prior.clone();
        drifted.set("create_virtual_node", Value::Null);
        let (planned, replace) = plan_values(&drifted, &prior, &config());
        assert!(replace.is_empty());
        assert_eq!(planned.get("create_virtual_node"), &Value::Bool(true));
    }

    #[test]
    fn objects_carry_liqo_labels_and_never_claim_liqo_fields() {
        let (_, peer) = planned_peer();
        let secret = serde_json::to_value(peer.identity_secret("apiVersion: v1\n")).unwrap();
        assert_eq!(secret["metadata"]["name"], "kubeconfig-controlplane-milan");
        assert_eq!(secret["metadata"]["namespace"], "liqo-tenant-milan");
        assert_eq!(secret["metadata"]["labels"]["liqo.io/identity-type"], "ControlPlane");
        assert_eq!(secret["metadata"]["labels"]["liqo.io/remote-cluster-id"], "milan");
        assert_eq!(secret["metadata"]["annotations"]["liqo.io/remote-tenant-namespace"], "liqo-tenant-rome");
        assert!(secret["data"]["kubeconfig"].is_string());

        let rs = serde_json::to_value(peer.resource_slice()).unwrap();
        assert_eq!(rs["apiVersion"], "authentication.liqo.io/v1beta1");
        assert_eq!(rs["kind"], "ResourceSlice");
        assert_eq!(rs["metadata"]["name"], "milan");
        let l = &rs["metadata"]["labels"];
        assert_eq!(
            (l["liqo.io/remote-cluster-id"].as_str(), l["liqo.io/remoteID"].as_str()),
            (Some("milan"), Some("milan"))
        );
        assert_eq!(l["liqo.io/replication"], "true");
        assert_eq!(rs["metadata"]["annotations"]["liqo.io/create-virtual-node"], "true");
        assert_eq!(
            rs["spec"],
            serde_json::json!({
                "class": "default",
                "providerClusterID": "milan",
                "resources": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            })
        );
        assert!(rs.get("status").is_none());

        let no_vn = Peer { create_virtual_node: false, resources: None, ..peer };
        let rs = serde_json::to_value(no_vn.resource_slice()).unwrap();
        assert_eq!(rs["metadata"]["annotations"]["liqo.io/create-virtual-node"], "false");
        assert!(rs["spec"].get("resources").is_none(), "no request: no null, the provider's defaults apply");
    }

    #[test]
    fn slice_wait_follows_the_conditions() {
        let (_, peer) = planned_peer();
        assert!(matches!(slice_check(None, &peer), Verdict::Pending(_)));

        let rs = slice_with(vec![cond("Authentication", "Accepted")], &[]);
        let Verdict::Pending(seen) = slice_check(Some(&rs), &peer) else { panic!("expected pending") };
        assert_eq!(seen, "Authentication = Accepted, Resources = not reported");

        let mut denied = cond("Resources", "Denied");
        denied.reason = Some("ResourceSliceResourcesDenied".into());
        denied.message = Some("ResourceSlice resources denied".into());
        let rs = slice_with(vec![cond("Authentication", "Accepted"), denied], &[]);
        let Verdict::Failed { reason, hint } = slice_check(Some(&rs), &peer) else { panic!("expected failure") };
        assert!(reason.contains("Resources is Denied") && reason.contains("ResourceSliceResourcesDenied"));
        assert!(reason.contains("ResourceSlice resources denied"));
        assert!(hint.contains("Cordoned"));

        let rs = slice_with(vec![cond("Authentication", "Denied")], &[]);
        let Verdict::Failed { hint, .. } = slice_check(Some(&rs), &peer) else { panic!("expected failure") };
        assert!(hint.contains("liqo-tenant-rome"));

        // Accepted but still granting the old request (resize not processed yet): keep waiting.
        let accepted = vec![cond("Authentication", "Accepted"), cond("Resources", "Accepted")];
        let rs = slice_with(accepted.clone(), &[("cpu", "2"), ("memory", "8Gi"), ("pods", "110")]);
        let Verdict::Pending(seen) = slice_check(Some(&rs), &peer) else { panic!("expected pending") };
        assert!(seen.contains("status.resources[cpu] is `2` while 4 is requested"));

        // Granted in canonical spelling, plus provider defaults for other keys.
        let rs = slice_with(accepted.clone(), &[("cpu", "4000m"), ("memory", "8Gi"), ("pods", "110"), ("x", "1")]);
        let Verdict::Ready(granted) = slice_check(Some(&rs), &peer) else { panic!("expected ready") };
        assert_eq!(granted.get("cpu").map(String::as_str), Some("4000m"));
        assert_eq!(granted.len(), 4);

        // A custom class may grant something else: accepted is enough.
        let custom = Peer { class: "gold".into(), ..peer };
        let rs = slice_with(accepted, &[("cpu", "1")]);
        assert!(matches!(slice_check(Some(&rs), &custom), Verdict::Ready(_)));
    }

    #[test]
    fn virtual_node_and_node_waits() {
        assert!(matches!(virtual_node_check(None), Verdict::Pending(_)));
        let mut vn = VirtualNode::new("milan", VirtualNodeSpec::default());
        vn.status = Some(VirtualNodeStatus {
            conditions: Some(vec![cond("VirtualKubelet", "Running"), cond("Node", "Creating")]),
        });
        let Verdict::Pending(seen) = virtual_node_check(Some(&vn)) else { panic!("expected pending") };
        assert_eq!(seen, "VirtualKubelet = Running, Node = Creating");
        vn.status = Some(VirtualNodeStatus {
            conditions: Some(vec![cond("VirtualKubelet", "Running"), cond("Node", "Running")]),
        });
        assert!(matches!(virtual_node_check(Some(&vn)), Verdict::Ready(true)));
        let mut dying = vn.clone();
        dying.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        let Verdict::Pending(seen) = virtual_node_check(Some(&dying)) else {
            panic!("a dying VirtualNode is not ready")
        };
        assert!(seen.contains("being deleted"));
        vn.spec.create_node = Some(false);
        vn.status =
            Some(VirtualNodeStatus { conditions: Some(vec![cond("VirtualKubelet", "Running"), cond("Node", "None")]) });
        assert!(matches!(virtual_node_check(Some(&vn)), Verdict::Ready(false)));

        let node: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "milan"},
            "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]}
        }))
        .unwrap();
        let Verdict::Pending(seen) = node_check(Some(&node)) else { panic!("expected pending") };
        assert_eq!(seen, "Ready = False (KubeletNotReady)");
        let node: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "milan"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        }))
        .unwrap();
        assert!(matches!(node_check(Some(&node)), Verdict::Ready(())));
    }

    /// Real Liqo keeps the virtual node NotReady until the Connection is Connected: a timeout on the node names
    /// the Connection and its state, or says that none exists and how to order the resources.
    #[test]
    fn a_node_timeout_names_the_connection_and_its_state() {
        let connection = |value: Option<&str>| -> Connection {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "networking.liqo.io/v1beta1", "kind": "Connection",
                "metadata": {"name": "gw-milan", "namespace": "liqo-tenant-milan"},
                "spec": {"type": "Client"},
                "status": value.map(|v| serde_json::json!({"value": v})),
            }))
            .unwrap()
        };
        let note = network_note(&[connection(Some("Connecting"))], "milan").unwrap();
        assert!(note.contains("Connection liqo-tenant-milan/gw-milan is Connecting"), "{note}");
        assert!(note.contains("NotReady until the network Connection is Connected"), "{note}");
        let none = network_note(&[], "milan").unwrap();
        assert!(none.contains("no Connection labelled liqo.io/remote-cluster-id=milan") && none.contains("depends_on"));
        assert!(network_note(&[connection(None)], "milan").unwrap().contains("without status"));
        assert_eq!(network_note(&[connection(Some("Connected"))], "milan"), None, "a working tunnel is not blamed");
    }

    /// A `liqoctl peer` identity: its Secret is owned by an Identity; import and read never take its key.
    #[test]
    fn an_identity_liqo_minted_is_kept_without_reading_its_key() {
        let (planned, peer) = planned_peer();
        let rs = slice_with(vec![cond("Authentication", "Accepted"), cond("Resources", "Accepted")], &[("cpu", "4")]);
        let mut secret = peer.identity_secret(&assemble_kubeconfig(&KubeconfigParts {
            server: "https://milan.example.com:6443",
            ca_pem: &issued().ca,
            cert_pem: &issued().cert,
            key_pem: &issued().key,
            cluster_name: "milan",
            namespace: "liqo-tenant-rome",
        }));
        assert!(!minted_by_liqo(&secret));
        let ours = observed_state(&Value::Null, &rs, &secret);
        assert!(
            ours.get("client_certificate").as_str().is_some() && ours.get("client_key_secret").as_str().is_some(),
            "our own Secret's public parts are read"
        );
        secret.metadata.owner_references = Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "authentication.liqo.io/v1beta1".into(),
            kind: "Identity".into(),
            name: "controlplane-milan".into(),
            uid: "u".into(),
            ..Default::default()
        }]);
        assert_eq!(owning_identity(&secret).as_deref(), Some("controlplane-milan"));
        let imported = observed_state(&Value::Null, &rs, &secret);
        for attr in ISSUED {
            assert!(imported.get(attr).is_null(), "import must not read Liqo's identity into state: {attr}");
        }
        let mut kept = peer.state(&planned, None);
        for attr in ISSUED {
            kept.set(attr, Value::Null);
        }
        let read = observed_state(&kept, &rs, &secret);
        assert!(ISSUED.iter().all(|a| read.get(a).is_null()), "read keeps it out too");
        // What `-generate-config-out` writes: the state without its computed-only attributes.
        let mut generated = imported.clone();
        for computed in ["id", "virtual_node_name", "accepted_resources"] {
            generated.set(computed, Value::Null);
        }
        let (replanned, replace) = plan_values(&imported, &imported, &generated);
        assert!(replace.is_empty() && ISSUED.iter().all(|a| replanned.get(a).is_null()));
        assert!(validate(&generated).is_empty());
        assert_eq!(Peer::from_value(&replanned, &generated).unwrap().credentials, Credentials::Liqo);
    }

    #[test]
    fn read_reflects_drift_and_keeps_equal_spellings() {
        let (planned, peer) = planned_peer();
        let prior = peer.state(&planned, Some(&BTreeMap::new()));
        let mut rs = slice_with(
            vec![cond("Authentication", "Accepted"), cond("Resources", "Accepted")],
            &[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")],
        );
        let secret = peer.identity_secret(&assemble_kubeconfig(&KubeconfigParts {
            server: "https://milan.example.com:6443",
            ca_pem: &issued().ca,
            cert_pem: &issued().cert,
            key_pem: &issued().key,
            cluster_name: "milan",
            namespace: "liqo-tenant-rome",
        }));

        // Unchanged objects read back into the same state (apart from the refreshed grant).
        let s = observed_state(&prior, &rs, &secret);
        let mut expected = prior.clone();
        expected.set("accepted_resources", Value::string_map([("cpu", "4"), ("memory", "8Gi"), ("pods", "110")]));
        assert_eq!(s, expected);

        // Canonical spelling of an equal value keeps the user's spelling; a real change shows as drift.
        rs.spec.resources = Some(BTreeMap::from([
            ("cpu".to_string(), Quantity("4000m".into())),
            ("memory".to_string(), Quantity("16Gi".into())),
            ("pods".to_string(), Quantity("110".into())),
        ]));
        let s = observed_state(&prior, &rs, &secret);
        assert_eq!(s.get("resources"), &Value::string_map([("cpu", "4"), ("memory", "16Gi"), ("pods", "110")]));

        // A key removed out of band is drift; a key someone else added is not ours.
        let live = rs.spec.resources.as_mut().unwrap();
        live.remove("pods");
        live.insert("nvidia.com/gpu".into(), Quantity("1".into()));
        let s = observed_state(&prior, &rs, &secret);
        assert_eq!(s.get("resources"), &Value::string_map([("cpu", "4"), ("memory", "16Gi")]));
        let mut unset = prior.clone();
        unset.set("resources", Value::Null);
        assert!(observed_state(&unset, &rs, &secret).get("resources").is_null());
        rs.spec.resources = Some(BTreeMap::from([
            ("cpu".to_string(), Quantity("4000m".into())),
            ("memory".to_string(), Quantity("16Gi".into())),
            ("pods".to_string(), Quantity("110".into())),
        ]));

        // The remote tenant namespace annotation changed out of band: null, so the plan repairs the Secret in place
        // instead of replacing the peer (whose delete would need the broken annotation).
        let mut moved = secret.clone();
        moved.metadata.annotations =
            Some(BTreeMap::from([(labels::REMOTE_TENANT_NAMESPACE.to_string(), "elsewhere".to_string())]));
        let s = observed_state(&prior, &rs, &moved);
        assert!(s.get("provider_tenant_namespace").is_null());
        let (planned_repair, replace) = plan_values(&s, &config(), &config());
        assert!(replace.is_empty(), "{replace:?}");
        assert_eq!(planned_repair.get("provider_tenant_namespace"), prior.get("provider_tenant_namespace"));

        // Annotation removed out of band: null (repaired in place), not a replacement trigger.
        rs.metadata.annotations = None;
        let s = observed_state(&prior, &rs, &secret);
        assert!(s.get("create_virtual_node").is_null());
        assert_eq!(s.get("virtual_node_name"), &Value::string("milan"));

        // Import (no prior) rebuilds the full state with the documented defaults.
        let rs = peer.resource_slice();
        let s = observed_state(&Value::Null, &rs, &secret);
        let (want, _) = plan_values(&Value::Null, &config(), &config());
        for attr in [
            "id",
            "tenant_namespace",
            "provider_cluster_id",
            "provider_tenant_namespace",
            "api_server_url",
            "cluster_ca_certificate",
            "client_certificate",
            "client_key_secret",
            "resources",
            "class",
            "create_virtual_node",
            "resource_slice_name",
            "wait_for_virtual_node",
            "virtual_node_name",
        ] {
            assert_eq!(s.get(attr), want.get(attr), "{attr}");
        }
    }

    #[test]
    fn import_ids_are_namespace_slash_name() {
        assert_eq!(parse_import_id("liqo-tenant-milan/milan").unwrap(), ("liqo-tenant-milan".into(), "milan".into()));
        for bad in ["milan", "a/b/c", "/milan", "ns/", "NS/milan"] {
            let e = parse_import_id(bad).unwrap_err();
            assert!(e.detail.contains("<tenant_namespace>/<resource_slice_name>"), "{bad}");
        }
    }

    #[test]
    fn failure_state_has_no_unknowns() {
        let (planned, peer) = planned_peer();
        let s = peer.state(&planned, None);
        assert!(s.is_wholly_known());
        assert!(s.get("accepted_resources").is_null());
    }
}
