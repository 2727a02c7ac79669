//! `liqo_generate`: this cluster's side of a peering with one remote cluster, and what the peer needs to know.
//!
//! Owns, on the cluster of its provider block:
//! - the tenant Namespace for the peer (`liqo-tenant-<remote cluster id>` unless `tenant_namespace` says
//!   otherwise), labelled `liqo.io/remote-cluster-id=<peer>`, `liqo.io/tenant-namespace=true` and the three
//!   Pod Security labels set to `privileged` (the gateway pods are privileged), as Liqo ≥1.1 creates it;
//! - the WireGuard key Secret `gw-keys` in it (labels `liqo.io/remote-cluster-id` and
//!   `networking.liqo.io/gateway-resource=true`; `data.privateKey` / `data.publicKey` are the raw 32-byte X25519
//!   keys). The key pair is made in this process and written straight to the cluster: the private key never
//!   enters Terraform state, plans, diagnostics or logs; only the public key is an output.
//!
//! Its outputs are this cluster's facts (cluster ID, pod CIDRs, external CIDR, API server URL) and the public key,
//! for the peer's `liqo_gateway` and friends.
//!
//! A Namespace that exists already (created by Liqo, by hand, or by another Terraform resource) is adopted, not
//! recreated; only a Namespace this resource created — marked `app.kubernetes.io/managed-by=terraform-provider-liqo`
//! — is deleted on destroy. An adopted one only loses the labels this resource added. The marker lives on the
//! object rather than in Terraform's private state because private state does not survive the two situations
//! that matter: a Read that finds the key Secret gone (the resource is then recreated from scratch) and import.
//!
//! Import ID: `<tenant_namespace>` (the remote cluster ID is read from the Namespace's label). Import adopts the
//! key pair it finds and never writes one: `gw-keys`, else the one key Secret labelled for the peer (Liqo
//! generates `gw-<gateway>` for a `liqoctl peer` gateway), else none (`liqoctl peer --networking-disabled`), which
//! leaves `wireguard_public_key` and `key_secret_name` null. Only `gw-keys` is deleted on destroy: a Secret Liqo
//! generated goes with its gateway.
use crate::cluster_api::ClusterApi;
use crate::cluster_facts::ClusterFacts;
use crate::errors::{op_diags, op_error};
use crate::kube::{OpError, Verdict, created_by_provider};
use crate::protocol::{
    ApplyRequest, ApplyResponse, Ctx, ImportedResource, PlanRequest, PlanResponse, ReadResponse, Resource,
};
use crate::resources::common::changed;
use crate::resources::lifecycle::{Deadline, Timeouts, timeouts_block};
use crate::validate::{Validator, check_dns_label};
use async_trait::async_trait;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use liqo_schema::liqo::labels;
use liqo_schema::tf::{Attribute, AttributePath, Block, Diagnostic, Diagnostics, Schema, Type, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const TYPE_NAME: &str = "liqo_generate";
const DEFAULT_TIMEOUTS: Timeouts =
    Timeouts { create: Duration::from_secs(120), update: Duration::from_secs(120), delete: Duration::from_secs(300) };
/// Outputs that come from the cluster (unknown until apply, kept while the peer stays the same).
const CLUSTER_OUTPUTS: [&str; 5] =
    ["cluster_id", "pod_cidrs", "external_cidr", "api_server_url", "wireguard_public_key"];
const PHASE_ACTIVE: &str = "Active";
const PHASE_TERMINATING: &str = "Terminating";

/// The `liqo_generate` resource type, bound to the provider block's cluster.
pub struct GenerateResource {
    cluster: Arc<ClusterApi>,
}

impl GenerateResource {
    pub fn new(cluster: Arc<ClusterApi>) -> GenerateResource {
        GenerateResource { cluster }
    }
}

/// `generate` as the protocol layer serves it.
pub fn resource(cluster: Arc<ClusterApi>) -> Arc<dyn Resource> {
    Arc::new(GenerateResource::new(cluster))
}

// ---------------------------------------------------------------------------------------------------------------
// Schema and validation
// ---------------------------------------------------------------------------------------------------------------

fn schema() -> Schema {
    let attributes = vec![
        Attribute::computed("id", Type::String).describe("Name of the tenant namespace (the import ID)."),
        Attribute::required("remote_cluster_id", Type::String).describe(
            "Liqo cluster ID of the peer cluster (e.g. `liqo_generate.<peer>.cluster_id`, or a literal such as `rome`). \
             Changing it replaces the resource.",
        ),
        Attribute::optional_computed("tenant_namespace", Type::String).describe(
            "Namespace on this cluster dedicated to the peer (default `liqo-tenant-<remote_cluster_id>`, Liqo's own \
             name). An existing namespace is adopted and kept on destroy; one created by this resource is deleted on \
             destroy, with everything in it. Changing it replaces the resource.",
        ),
        Attribute::computed("cluster_id", Type::String).describe(
            "This cluster's Liqo cluster ID (`CLUSTER_ID` of the ConfigMap labelled \
             `app.kubernetes.io/name=clusterid-configmap` in the Liqo namespace). Give it to the peer as its \
             `remote_cluster_id`.",
        ),
        Attribute::computed("pod_cidrs", Type::list(Type::String))
            .describe("This cluster's pod CIDR(s) as Liqo's IPAM assigned them (`status.cidr` of the pod-cidr Networks)."),
        Attribute::computed("external_cidr", Type::String)
            .describe("This cluster's external CIDR (`status.cidr` of the external-cidr Network)."),
        Attribute::computed("api_server_url", Type::String).describe("This cluster's API server URL, as the provider block reaches it."),
        Attribute::computed("wireguard_public_key", Type::String).describe(
            "Public half of this side's WireGuard key (standard base64, 44 characters); give it to the peer's \
             `liqo_gateway` as `remote_public_key`. The private half stays in the `gw-keys` Secret and never enters \
             Terraform state.",
        ),
        Attribute::computed("key_secret_name", Type::String).describe(
            "Name of the WireGuard key Secret in `tenant_namespace`: `gw-keys` when this resource wrote it; for an \
             imported peering the Secret found (Liqo's own `gw-<gateway>`), or null when it has no networking.",
        ),
    ];
    Schema {
        version: 0,
        block: Block::new(
            "Prepares this cluster for a peering with one remote cluster: creates (or adopts) the tenant namespace for \
             the peer and a WireGuard key pair for the gateway, generated inside the provider and written straight to \
             the cluster, and exposes the values the peer needs (cluster ID, CIDRs, API server URL, public key). \
             Declare one per cluster and peer, each with the provider block of its own cluster.",
            attributes,
        )
        .with_block(timeouts_block(DEFAULT_TIMEOUTS)),
    }
}

fn validate(config: &Value) -> Diagnostics {
    let mut c = Validator::new(config);
    c.cluster_id("remote_cluster_id");
    c.namespace("tenant_namespace");
    c.timeouts();
    c.finish()
}

fn default_namespace(remote: &str) -> String {
    format!("{}{remote}", labels::TENANT_NAMESPACE_PREFIX)
}

// ---------------------------------------------------------------------------------------------------------------
// Plan
// ---------------------------------------------------------------------------------------------------------------

/// The plan rules. No API calls: the outputs are unknown until apply and kept afterwards, unless the peer or the
/// namespace changes, which replaces the resource.
fn plan_change(prior: &Value, proposed: &Value, config: &Value) -> PlanResponse {
    let mut resp = PlanResponse {
        planned: Value::Null,
        requires_replace: Vec::new(),
        private: Vec::new(),
        diagnostics: Diagnostics::new(),
    };
    let mut planned = proposed.clone();
    // The default follows the configuration, not the prior state: a new peer ID means a new default namespace.
    let namespace = match (config.get("tenant_namespace"), config.get("remote_cluster_id")) {
        (Value::Null, Value::String(remote)) => Value::string(default_namespace(remote)),
        (Value::Null, _) => Value::Unknown,
        (explicit, _) => explicit.clone(),
    };
    planned.set("tenant_namespace", namespace.clone());
    planned.set("id", namespace);

    if !prior.is_null() {
        for attr in ["remote_cluster_id", "tenant_namespace"] {
            if changed(prior, &planned, attr) {
                resp.requires_replace.push(AttributePath::root(attr));
            }
        }
    }
    // An imported key Secret (or its absence) stays as found; a create writes `gw-keys`.
    let keep = !prior.is_null() && resp.requires_replace.is_empty();
    planned.set(
        "key_secret_name",
        if keep { prior.get("key_secret_name").clone() } else { Value::string(labels::KEY_SECRET_NAME) },
    );
    for attr in CLUSTER_OUTPUTS {
        let v =
            if prior.is_null() || !resp.requires_replace.is_empty() { Value::Unknown } else { prior.get(attr).clone() };
        planned.set(attr, v);
    }
    resp.planned = planned;
    resp
}

// ---------------------------------------------------------------------------------------------------------------
// Objects
// ---------------------------------------------------------------------------------------------------------------

/// What apply works from; at apply time every input is known.
struct Inputs {
    remote: String,
    namespace: String,
}

impl Inputs {
    fn from_value(v: &Value) -> Inputs {
        let s = |a: &str| v.get(a).as_str().unwrap_or_default().to_string();
        Inputs { remote: s("remote_cluster_id"), namespace: s("tenant_namespace") }
    }
}

/// The labels Liqo looks the tenant namespace up by, plus Pod Security `privileged` (as Liqo ≥1.1 sets them).
fn tenant_namespace_labels(remote: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::REMOTE_CLUSTER_ID.to_string(), remote.to_string()),
        (labels::TENANT_NAMESPACE.to_string(), labels::TRUE.to_string()),
        (labels::POD_SECURITY_ENFORCE.to_string(), labels::POD_SECURITY_PRIVILEGED.to_string()),
        (labels::POD_SECURITY_AUDIT.to_string(), labels::POD_SECURITY_PRIVILEGED.to_string()),
        (labels::POD_SECURITY_WARN.to_string(), labels::POD_SECURITY_PRIVILEGED.to_string()),
    ])
}

/// The tenant Namespace as this resource applies it; `ours` adds the marker that makes destroy delete it.
fn namespace_object(inputs: &Inputs, ours: bool) -> Namespace {
    let mut l = tenant_namespace_labels(&inputs.remote);
    if ours {
        let (mark, by) = crate::kube::provider_mark();
        l.insert(mark, by);
    }
    Namespace {
        metadata: ObjectMeta { name: Some(inputs.namespace.clone()), labels: Some(l), ..ObjectMeta::default() },
        ..Namespace::default()
    }
}

/// The peer a Namespace is the tenant namespace of, by its label.
fn peer_of(ns: &Namespace) -> Option<&str> {
    ns.metadata.labels.as_ref()?.get(labels::REMOTE_CLUSTER_ID).map(String::as_str)
}

const POD_SECURITY_LABELS: [&str; 3] =
    [labels::POD_SECURITY_ENFORCE, labels::POD_SECURITY_AUDIT, labels::POD_SECURITY_WARN];

/// What is wrong with an existing Namespace's Liqo labels, if anything (`None`: they are as we apply them).
/// Liqo 1.0 makes its tenant namespaces without Pod Security labels: a namespace this provider did not create
/// that has none of them is taken as it is, so adopting a Liqo 1.0 peering writes nothing to it.
fn namespace_drift(ns: &Namespace, remote: &str) -> Option<String> {
    let have = ns.metadata.labels.clone().unwrap_or_default();
    let liqo_1_0 = !created_by_provider(ns) && POD_SECURITY_LABELS.iter().all(|k| !have.contains_key(*k));
    let wrong: Vec<String> = tenant_namespace_labels(remote)
        .into_iter()
        .filter(|(k, _)| !(liqo_1_0 && POD_SECURITY_LABELS.contains(&k.as_str())))
        .filter(|(k, v)| have.get(k) != Some(v))
        .map(|(k, v)| {
            format!("{k}={v} (found {})", have.get(&k).map(|x| format!("{x:?}")).unwrap_or_else(|| "nothing".into()))
        })
        .collect();
    if wrong.is_empty() { None } else { Some(wrong.join(", ")) }
}

fn key_secret_labels(remote: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::REMOTE_CLUSTER_ID.to_string(), remote.to_string()),
        (labels::GATEWAY_RESOURCE.to_string(), labels::TRUE.to_string()),
    ])
}

fn key_secret_object(inputs: &Inputs, keys: &crate::crypto::wireguard::KeyPair) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(labels::KEY_SECRET_NAME.to_string()),
            namespace: Some(inputs.namespace.clone()),
            labels: Some(key_secret_labels(&inputs.remote)),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".to_string()),
        data: Some(keys.secret_data()),
        ..Secret::default()
    }
}

/// The public key (base64) of a key Secret that still holds a valid pair labelled for `remote`; otherwise why not.
fn key_secret_public_key(secret: &Secret, remote: &str) -> Result<String, String> {
    let have = secret.metadata.labels.clone().unwrap_or_default();
    for (k, v) in key_secret_labels(remote) {
        if have.get(&k) != Some(&v) {
            return Err(format!("label {k}={v} is missing or different"));
        }
    }
    let data = secret.data.as_ref().ok_or("it has no data")?;
    crate::crypto::wireguard::verify(data).map(|public| crate::crypto::wireguard::encode(&public))
}

// ---------------------------------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------------------------------

/// True when the Deployment's pods mount the key Secret (Liqo's WireGuard gateway Deployment `gw-<gateway>`,
/// whose `wireguard-config` volume its controller points at the gateway's key Secret).
fn mounts_key_secret(d: &Deployment) -> bool {
    let volumes = d.spec.as_ref().and_then(|s| s.template.spec.as_ref()).and_then(|p| p.volumes.as_ref());
    volumes
        .into_iter()
        .flatten()
        .any(|v| v.secret.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(labels::KEY_SECRET_NAME))
}

/// The label selector of a Deployment's pods (`matchLabels` only, which is what Liqo's templates use); `None`
/// when it has none, so no pod is touched by mistake.
fn pod_selector(d: &Deployment) -> Option<String> {
    let labels = d.spec.as_ref()?.selector.match_labels.as_ref().filter(|l| !l.is_empty())?;
    Some(labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(","))
}

/// The warning the plan shows when the key Secret is gone or holds another pair: what the next apply will do.
fn key_pair_lost(namespace: &str) -> Diagnostic {
    Diagnostic::warning(
        format!("The WireGuard key pair in {namespace} is gone or was changed"),
        format!(
            "Secret {namespace}/{} no longer holds the key pair this resource wrote, so the plan \
             creates liqo_generate again: the next apply writes a NEW key pair, restarts the pods of the gateway \
             Deployment(s) in {namespace} that use it (Liqo's gateway reads its key only at start), and the peer's \
             liqo_gateway gets the new public key through `wireguard_public_key` in the same apply. The tunnel is \
             down until then. The previous private key cannot be restored (it never left the cluster).",
            labels::KEY_SECRET_NAME
        ),
    )
}

/// The full state for `inputs` with this cluster's facts and the public key (null when not written yet).
fn state_of(inputs: &Inputs, facts: &ClusterFacts, public_key: Option<String>, timeouts: &Value) -> Value {
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

fn namespace_check(ns: Option<&Namespace>) -> Verdict<()> {
    let Some(ns) = ns else {
        return Verdict::Pending("the Namespace does not exist yet".into());
    };
    match ns.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some(PHASE_ACTIVE) => Verdict::Ready(()),
        Some(PHASE_TERMINATING) => Verdict::Failed {
            reason: "The Namespace is being deleted (status.phase = Terminating).".into(),
            hint: "Wait until the deletion finishes (`kubectl get namespace`), then apply again.".into(),
        },
        other => Verdict::Pending(format!("status.phase = {other:?}")),
    }
}

impl GenerateResource {
    async fn client(&self) -> Result<kube::Client, Diagnostics> {
        self.cluster.client().await.map_err(Diagnostics::from)
    }

    /// Liqo finds the tenant namespace of a peer by label and fails on duplicates: refuse to label a second one.
    async fn check_unique_namespace(
        &self,
        ctx: &Ctx,
        api: &Api<Namespace>,
        inputs: &Inputs,
    ) -> Result<(), Diagnostics> {
        let selector = format!("{}={},{}", labels::REMOTE_CLUSTER_ID, inputs.remote, labels::TENANT_NAMESPACE);
        let others: Vec<String> = crate::kube::list(ctx, api, &selector)
            .await
            .map_err(|e| op_diags(&e))?
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .filter(|n| n != &inputs.namespace)
            .collect();
        if others.is_empty() {
            return Ok(());
        }
        Err(Diagnostic::error(
            format!("Another tenant namespace exists for {}", inputs.remote),
            format!(
                "Namespace {} is already labelled {}={} and {}, and Liqo accepts only one tenant namespace per peer. Set \
                 `tenant_namespace = \"{}\"` to use it (or import it: `terraform import <address> {}`), or delete it if it is stale.",
                others.join(", "),
                labels::REMOTE_CLUSTER_ID,
                inputs.remote,
                labels::TENANT_NAMESPACE,
                others[0],
                others[0]
            ),
        )
        .at(AttributePath::root("tenant_namespace"))
        .into())
    }

    /// Liqo's gateway finds its key Secret by label and fails on duplicates (e.g. a `gw-<gateway>` Secret Liqo
    /// generated for an earlier peering): refuse to add a second one.
    async fn check_unique_key_secret(&self, ctx: &Ctx, api: &Api<Secret>, inputs: &Inputs) -> Result<(), Diagnostics> {
        let selector =
            format!("{}={},{}={}", labels::REMOTE_CLUSTER_ID, inputs.remote, labels::GATEWAY_RESOURCE, labels::TRUE);
        let others: Vec<String> = crate::kube::list(ctx, api, &selector)
            .await
            .map_err(|e| op_diags(&e))?
            .into_iter()
            .filter_map(|s| s.metadata.name)
            .filter(|n| n != labels::KEY_SECRET_NAME)
            .collect();
        if others.is_empty() {
            return Ok(());
        }
        Err(Diagnostic::error(
            format!("Another WireGuard key Secret exists in namespace {}", inputs.namespace),
            format!(
                "Secret {} is labelled {}={} and {}=true, and Liqo's gateway accepts only one key Secret per peer. Delete \
                 it (it is left over from an earlier peering made without Terraform), then apply again.",
                others.iter().map(|n| format!("{}/{n}", inputs.namespace)).collect::<Vec<_>>().join(", "),
                labels::REMOTE_CLUSTER_ID,
                inputs.remote,
                labels::GATEWAY_RESOURCE
            ),
        )
        .into())
    }

    /// Checks that the tenant Namespace can be used for this peer, without writing anything; returns whether it
    /// is (or will be) ours, i.e. created by this provider. A Namespace still terminating is waited for.
    async fn prepare_namespace(
        &self,
        ctx: &Ctx,
        api: &Api<Namespace>,
        inputs: &Inputs,
        deadline: &Deadline,
    ) -> Result<bool, Diagnostics> {
        self.check_unique_namespace(ctx, api, inputs).await?;
        // A namespace still being deleted (e.g. by the destroy half of a replacement) cannot be reused.
        let existing =
            crate::kube::settle(ctx, api, &inputs.namespace, deadline.left()).await.map_err(|e| op_diags(&e))?;
        if let Some(other) = existing.as_ref().and_then(peer_of).filter(|o| *o != inputs.remote) {
            return Err(Diagnostic::error(
                format!("Namespace {} belongs to another peer", inputs.namespace),
                format!(
                    "It is labelled {}={other}, not {}. Choose another `tenant_namespace` (each peer needs its own).",
                    labels::REMOTE_CLUSTER_ID,
                    inputs.remote
                ),
            )
            .at(AttributePath::root("tenant_namespace"))
            .into());
        }
        Ok(existing.as_ref().is_none_or(created_by_provider))
    }

    /// Liqo's gateway reads its WireGuard private key once, at start (`pkg/gateway/tunnel/wireguard/keys.go`), so a
    /// key pair written under a running gateway breaks the tunnel until its pods restart. This restarts them: the
    /// pods of every Deployment in the namespace that mounts the key Secret are deleted (and waited out), and
    /// their ReplicaSet starts new ones that read the new pair. The Deployment itself is left alone: Liqo's
    /// WgGateway controller owns it and rewrites its whole spec on every reconcile, so a `kubectl rollout restart`
    /// annotation would be reverted at once. Returns the Deployments restarted.
    async fn restart_gateways(
        &self,
        ctx: &Ctx,
        client: &kube::Client,
        namespace: &str,
        deadline: &Deadline,
    ) -> Result<Vec<String>, OpError> {
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
        let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
        let mut restarted = Vec::new();
        for d in crate::kube::list(ctx, &deployments, "").await?.iter().filter(|d| mounts_key_secret(d)) {
            let Some(selector) = pod_selector(d) else { continue };
            for pod in crate::kube::list(ctx, &pods, &selector).await? {
                if let Some(name) = pod.metadata.name.as_deref() {
                    crate::kube::delete_and_wait(ctx, &pods, name, deadline.left()).await?;
                }
            }
            restarted.push(d.metadata.name.clone().unwrap_or_default());
        }
        Ok(restarted)
    }

    async fn create(&self, ctx: &Ctx, planned: &Value) -> (Value, Diagnostics) {
        let inputs = Inputs::from_value(planned);
        let deadline = Deadline::after(Timeouts::from_value(planned, DEFAULT_TIMEOUTS).create);
        let client = match self.client().await {
            Ok(c) => c,
            Err(d) => return (Value::Null, d),
        };
        // Read the facts first: without Liqo installed there is nothing to prepare, and nothing gets written.
        let facts = match ClusterFacts::read(ctx, &self.cluster).await {
            Ok(f) => f,
            Err(d) => return (Value::Null, d),
        };
        let timeouts = planned.get("timeouts");
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let ours = match self.prepare_namespace(ctx, &namespaces, &inputs, &deadline).await {
            Ok(ours) => ours,
            Err(d) => return (Value::Null, d),
        };
        let written = async {
            crate::kube::apply(ctx, &namespaces, &namespace_object(&inputs, ours)).await?;
            crate::kube::wait_for(
                ctx,
                &namespaces,
                &inputs.namespace,
                "status.phase = Active",
                deadline.left(),
                namespace_check,
            )
            .await
        }
        .await;
        if let Err(e) = written {
            // The Namespace may have been written before the failure: record it so a destroy (or the replacement
            // of the now tainted resource) cleans it up.
            return (state_of(&inputs, &facts, None, timeouts), op_diags(&e));
        }
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &inputs.namespace);
        let written = async {
            self.check_unique_key_secret(ctx, &secrets, &inputs).await?;
            let keys = crate::crypto::wireguard::KeyPair::generate()
                .map_err(|why| Diagnostics::from(Diagnostic::error("Cannot generate a WireGuard key", why)))?;
            crate::kube::apply(ctx, &secrets, &key_secret_object(&inputs, &keys)).await.map_err(|e| op_diags(&e))?;
            Ok::<String, Diagnostics>(keys.public_key())
        }
        .await;
        let public_key = match written {
            Ok(k) => k,
            Err(d) => return (state_of(&inputs, &facts, None, timeouts), d),
        };
        let state = state_of(&inputs, &facts, Some(public_key), timeouts);
        // A gateway already running in the namespace (the pair was rewritten after drift) holds the old key.
        match self.restart_gateways(ctx, &client, &inputs.namespace, &deadline).await {
            Ok(restarted) if !restarted.is_empty() => {
                let note = Diagnostic::warning(
                    format!("Restarted the WireGuard gateway of {} for its new key pair", inputs.namespace),
                    format!(
                        "A new key pair was written to Secret {}/{}, and Liqo's gateway reads its key \
                         only at start, so the pods of Deployment(s) {} were restarted. The peer's liqo_gateway \
                         receives the new public key through its reference to `wireguard_public_key` in this apply.",
                        inputs.namespace,
                        labels::KEY_SECRET_NAME,
                        restarted.join(", ")
                    ),
                );
                (state, note.into())
            }
            Ok(_) => (state, Diagnostics::new()),
            Err(e) => {
                let mut d = op_error(&e);
                d.detail = format!(
                    "{}\nThe new key pair is written, but the gateway pods that still hold the old key could not be \
                     restarted: restart them (kubectl -n {} delete pods of the gw-* Deployment), or the tunnel stays \
                     down.",
                    d.detail, inputs.namespace
                );
                (state, d.into())
            }
        }
    }

    /// Key Secret first, then the Namespace if this resource created it (deleting everything left in it); an
    /// adopted Namespace only gets back to the labels it had.
    async fn destroy(&self, ctx: &Ctx, prior: &Value) -> (Value, Diagnostics) {
        let inputs = Inputs::from_value(prior);
        let deadline = Deadline::after(Timeouts::from_value(prior, DEFAULT_TIMEOUTS).delete);
        let client = match self.client().await {
            Ok(c) => c,
            Err(d) => return (prior.clone(), d),
        };
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &inputs.namespace);
        let namespaces: Api<Namespace> = Api::all(client);
        let result = async {
            crate::kube::delete_and_wait(ctx, &secrets, labels::KEY_SECRET_NAME, deadline.left()).await?;
            match crate::kube::get_opt(ctx, &namespaces, &inputs.namespace).await? {
                // Labelled for another peer (relabelled out of band): not ours to delete or to change.
                Some(ns) if peer_of(&ns).is_some_and(|p| p != inputs.remote) => Ok(()),
                Some(ns) if created_by_provider(&ns) => {
                    crate::kube::delete_and_wait(ctx, &namespaces, &inputs.namespace, deadline.left()).await
                }
                // Applying the bare Namespace as our field manager drops the labels only we set; labels that Liqo
                // or whoever created it also set stay.
                Some(ns) if ns.metadata.deletion_timestamp.is_none() => {
                    let bare = Namespace {
                        metadata: ObjectMeta { name: Some(inputs.namespace.clone()), ..ObjectMeta::default() },
                        ..Namespace::default()
                    };
                    crate::kube::apply(ctx, &namespaces, &bare).await.map(|_| ())
                }
                _ => Ok(()),
            }
        }
        .await;
        match result {
            Ok(()) => (Value::Null, Diagnostics::new()),
            Err(e) => (prior.clone(), op_diags(&e)),
        }
    }

    /// What is left of this resource's objects: `Ok(None)` when the Namespace is gone or changed, else the key
    /// Secret's public key (`None` inside when the Secret is gone or unusable). Either way short of the recorded
    /// key, Terraform recreates the resource (a fresh key pair, re-applied labels).
    async fn observe(
        &self,
        ctx: &Ctx,
        client: &kube::Client,
        inputs: &Inputs,
        key_secret: Option<&str>,
    ) -> Result<Option<Option<String>>, Diagnostics> {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let ns = crate::kube::get_opt(ctx, &namespaces, &inputs.namespace).await.map_err(|e| op_diags(&e))?;
        match ns {
            Some(ns) if ns.metadata.deletion_timestamp.is_none() && namespace_drift(&ns, &inputs.remote).is_none() => {}
            _ => return Ok(None),
        }
        let Some(key_secret) = key_secret else {
            return Ok(Some(None));
        };
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &inputs.namespace);
        let secret = crate::kube::get_opt(ctx, &secrets, key_secret).await.map_err(|e| op_diags(&e))?;
        Ok(Some(secret.and_then(|s| key_secret_public_key(&s, &inputs.remote).ok())))
    }

    /// Parses and checks an import ID, then builds the full state of what is in the cluster.
    async fn import_state(&self, ctx: &Ctx, id: &str) -> Result<Value, Diagnostics> {
        let cannot =
            |detail: String| Diagnostics::from(Diagnostic::error(format!("Cannot import {TYPE_NAME} {id:?}"), detail));
        check_dns_label(id).map_err(|why| {
            cannot(format!("The import ID is the tenant namespace name, e.g. `liqo-tenant-rome`; `{id}` {why}."))
        })?;
        let client = self.client().await?;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let ns = crate::kube::get_opt(ctx, &namespaces, id).await.map_err(|e| op_diags(&e))?.ok_or_else(|| {
            cannot(format!(
                "Namespace {id} does not exist on this cluster. Check the name (`kubectl get namespaces -l {}`).",
                labels::TENANT_NAMESPACE
            ))
        })?;
        let remote = peer_of(&ns).map(str::to_string).ok_or_else(|| {
            cannot(format!("Namespace {id} has no {} label, so it is not a Liqo tenant namespace. Create the resource instead of importing it.", labels::REMOTE_CLUSTER_ID))
        })?;
        let inputs = Inputs { remote, namespace: id.to_string() };
        let secrets: Api<Secret> = Api::namespaced(client, id);
        let secret = match crate::kube::get_opt(ctx, &secrets, labels::KEY_SECRET_NAME)
            .await
            .map_err(|e| op_diags(&e))?
        {
            Some(ours) => Some(ours),
            // Liqo's gateway finds its key Secret by these labels: the one it uses is the one to adopt.
            None => {
                let selector = format!(
                    "{}={},{}={}",
                    labels::REMOTE_CLUSTER_ID,
                    inputs.remote,
                    labels::GATEWAY_RESOURCE,
                    labels::TRUE
                );
                let mut found = crate::kube::list(ctx, &secrets, &selector).await.map_err(|e| op_diags(&e))?;
                if found.len() > 1 {
                    let names: Vec<String> = found.iter().filter_map(|s| s.metadata.name.clone()).collect();
                    return Err(cannot(format!(
                        "Secrets {} are all labelled {selector}, and Liqo's gateway accepts only one key Secret per peer. Delete the stale one(s), then import.",
                        names.join(", ")
                    )));
                }
                found.pop()
            }
        };
        let key = match secret {
            Some(secret) => {
                let name = secret.metadata.name.clone().unwrap_or_default();
                let public_key = key_secret_public_key(&secret, &inputs.remote).map_err(|why| {
                    cannot(format!("Secret {id}/{name} is not a usable WireGuard key Secret: {why}. Create the resource instead of importing it: it writes a fresh key pair."))
                })?;
                Some((name, public_key))
            }
            None => None,
        };
        let facts = ClusterFacts::read(ctx, &self.cluster).await?;
        let mut state = state_of(&inputs, &facts, key.as_ref().map(|(_, k)| k.clone()), &Value::Null);
        state.set("key_secret_name", Value::opt_string(key.map(|(name, _)| name)));
        Ok(state)
    }
}

#[async_trait]
impl Resource for GenerateResource {
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
        plan_change(&req.prior, &req.proposed, &req.config)
    }

    async fn apply(&self, ctx: &Ctx, req: ApplyRequest) -> ApplyResponse {
        let (new_state, diagnostics) = if req.planned.is_null() {
            self.destroy(ctx, &req.prior).await
        } else if req.prior.is_null() {
            self.create(ctx, &req.planned).await
        } else {
            // Every input but `timeouts` replaces the resource, so an update only records new timeouts.
            (req.planned.clone(), Diagnostics::new())
        };
        ApplyResponse { new_state, private: Vec::new(), diagnostics }
    }

    async fn read(&self, ctx: &Ctx, state: Value, private: Vec<u8>) -> ReadResponse {
        if state.is_null() {
            return ReadResponse { new_state: state, private, diagnostics: Diagnostics::new() };
        }
        let inputs = Inputs::from_value(&state);
        let client = match self.client().await {
            Ok(c) => c,
            Err(diagnostics) => return ReadResponse { new_state: state, private, diagnostics },
        };
        let key_secret = state.get("key_secret_name").as_str().map(str::to_string);
        let public_key = match self.observe(ctx, &client, &inputs, key_secret.as_deref()).await {
            // Imported without a key pair (a peering without networking): nothing to check.
            Ok(Some(None)) if key_secret.is_none() => None,
            Ok(Some(Some(k))) if state.get("wireguard_public_key").as_str() == Some(k.as_str()) => Some(k),
            // The namespace is intact but the key pair is gone or not the one recorded: say in the plan what the
            // re-creation will do to a running gateway.
            Ok(Some(_)) => {
                return ReadResponse {
                    new_state: Value::Null,
                    private,
                    diagnostics: key_pair_lost(&inputs.namespace).into(),
                };
            }
            // Gone or changed: recreate, which writes a fresh pair (the peer's gateway then receives the new public
            // key through its reference to `wireguard_public_key`).
            Ok(None) => return ReadResponse { new_state: Value::Null, private, diagnostics: Diagnostics::new() },
            Err(diagnostics) => return ReadResponse { new_state: state, private, diagnostics },
        };
        // Refresh the cluster's facts: a change in Liqo's installation shows up as drift for the peer's resources.
        match ClusterFacts::read(ctx, &self.cluster).await {
            Ok(facts) => {
                let mut new_state = state_of(&inputs, &facts, public_key, state.get("timeouts"));
                new_state.set("key_secret_name", Value::opt_string(key_secret));
                ReadResponse { new_state, private, diagnostics: Diagnostics::new() }
            }
            Err(diagnostics) => ReadResponse { new_state: state, private, diagnostics },
        }
    }

    async fn import(&self, ctx: &Ctx, id: &str) -> Result<Vec<ImportedResource>, Diagnostics> {
        let state = self.import_state(ctx, id).await?;
        Ok(vec![ImportedResource { state, private: Vec::new() }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use liqo_schema::tf::Severity;

    fn config(pairs: &[(&str, Value)]) -> Value {
        let mut v = Value::object([
            ("id", Value::Null),
            ("remote_cluster_id", Value::string("rome")),
            ("tenant_namespace", Value::Null),
            ("cluster_id", Value::Null),
            ("pod_cidrs", Value::Null),
            ("external_cidr", Value::Null),
            ("api_server_url", Value::Null),
            ("wireguard_public_key", Value::Null),
            ("key_secret_name", Value::Null),
            ("timeouts", Value::Null),
        ]);
        for (k, val) in pairs {
            v.set(k, val.clone());
        }
        v
    }

    fn facts() -> ClusterFacts {
        ClusterFacts {
            cluster_id: "milan".into(),
            pod_cidrs: vec!["10.1.0.0/16".into()],
            external_cidr: "10.70.0.0/16".into(),
            api_server_url: "https://127.0.0.1:6443".into(),
        }
    }

    /// The state a successful create leaves.
    fn applied() -> Value {
        state_of(
            &Inputs { remote: "rome".into(), namespace: "liqo-tenant-rome".into() },
            &facts(),
            Some("A".repeat(43) + "="),
            &Value::Null,
        )
    }

    fn error_paths(d: &Diagnostics) -> Vec<String> {
        d.iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.attribute.as_ref().map(|p| p.to_string()).unwrap_or_default())
            .collect()
    }

    #[test]
    fn schema_describes_everything_and_holds_no_secret() {
        let s = schema();
        for a in &s.block.attributes {
            assert!(!a.description.is_empty(), "{} has no description", a.name);
            // Nothing secret is an attribute: the private key stays in the cluster.
            assert!(!a.sensitive, "{}", a.name);
        }
        assert!(s.block.attribute("remote_cluster_id").unwrap().required);
        let ns = s.block.attribute("tenant_namespace").unwrap();
        assert!(ns.optional && ns.computed);
        assert_eq!(s.block.attribute("pod_cidrs").unwrap().ty, Some(Type::list(Type::String)));
        assert_eq!(s.block.blocks[0].type_name, "timeouts");
        // The state holds exactly the schema's attributes.
        let Value::Object(state) = applied() else { unreachable!() };
        let mut names: Vec<&str> = s.block.attributes.iter().map(|a| a.name.as_str()).chain(["timeouts"]).collect();
        names.sort();
        assert_eq!(state.keys().map(String::as_str).collect::<Vec<_>>(), names);
    }

    #[test]
    fn validation_names_the_attribute() {
        let bad = config(&[
            ("remote_cluster_id", Value::string("Rome_1")),
            ("tenant_namespace", Value::string("-bad")),
            ("timeouts", Value::object([("create", Value::string("soon"))])),
        ]);
        assert_eq!(error_paths(&validate(&bad)), ["remote_cluster_id", "tenant_namespace", "timeouts.create"]);
        assert!(validate(&config(&[])).is_empty());
        assert!(
            validate(&config(&[("remote_cluster_id", Value::Unknown), ("tenant_namespace", Value::Unknown)]))
                .is_empty()
        );
    }

    #[test]
    fn create_fills_the_default_namespace_and_leaves_outputs_unknown() {
        let cfg = config(&[]);
        let r = plan_change(&Value::Null, &cfg, &cfg);
        assert_eq!(r.planned.get("tenant_namespace"), &Value::string("liqo-tenant-rome"));
        assert_eq!(r.planned.get("id"), &Value::string("liqo-tenant-rome"));
        assert_eq!(r.planned.get("key_secret_name"), &Value::string("gw-keys"));
        for attr in CLUSTER_OUTPUTS {
            assert!(r.planned.get(attr).is_unknown(), "{attr}");
        }
        assert!(r.requires_replace.is_empty());

        let explicit = config(&[("tenant_namespace", Value::string("peer-rome"))]);
        assert_eq!(plan_change(&Value::Null, &explicit, &explicit).planned.get("id"), &Value::string("peer-rome"));
    }

    #[test]
    fn an_unknown_peer_id_keeps_the_namespace_unknown() {
        let cfg = config(&[("remote_cluster_id", Value::Unknown)]);
        let r = plan_change(&Value::Null, &cfg, &cfg);
        assert!(r.planned.get("tenant_namespace").is_unknown());
        assert!(r.planned.get("id").is_unknown());
        assert!(r.diagnostics.is_empty());
    }

    #[test]
    fn unchanged_config_plans_no_change() {
        let prior = applied();
        // Terraform's proposed state carries computed values over from the prior state.
        let r = plan_change(&prior, &prior, &config(&[]));
        assert_eq!(r.planned, prior);
        assert!(r.requires_replace.is_empty());
    }

    #[test]
    fn peer_or_namespace_change_replaces_and_unknowns_the_outputs() {
        let prior = applied();
        let mut proposed = prior.clone();
        proposed.set("remote_cluster_id", Value::string("naples"));
        let r = plan_change(&prior, &proposed, &config(&[("remote_cluster_id", Value::string("naples"))]));
        assert_eq!(
            r.requires_replace,
            [AttributePath::root("remote_cluster_id"), AttributePath::root("tenant_namespace")]
        );
        assert_eq!(r.planned.get("tenant_namespace"), &Value::string("liqo-tenant-naples"));
        assert!(r.planned.get("wireguard_public_key").is_unknown());

        let cfg = config(&[("tenant_namespace", Value::string("peer-rome"))]);
        let mut proposed = prior.clone();
        proposed.set("tenant_namespace", Value::string("peer-rome"));
        let r = plan_change(&prior, &proposed, &cfg);
        assert_eq!(r.requires_replace, [AttributePath::root("tenant_namespace")]);
        assert!(r.planned.get("cluster_id").is_unknown());
    }

    #[test]
    fn timeouts_update_in_place() {
        let prior = applied();
        let timeouts =
            Value::object([("create", Value::string("5m")), ("update", Value::Null), ("delete", Value::Null)]);
        let mut proposed = prior.clone();
        proposed.set("timeouts", timeouts.clone());
        let r = plan_change(&prior, &proposed, &config(&[("timeouts", timeouts)]));
        assert!(r.requires_replace.is_empty());
        assert_eq!(r.planned.get("wireguard_public_key"), prior.get("wireguard_public_key"));
    }

    #[test]
    fn namespace_carries_liqo_and_pod_security_labels() {
        let inputs = Inputs { remote: "rome".into(), namespace: "liqo-tenant-rome".into() };
        let ns = namespace_object(&inputs, true);
        let l = ns.metadata.labels.clone().unwrap();
        assert_eq!(l["liqo.io/remote-cluster-id"], "rome");
        assert_eq!(l["liqo.io/tenant-namespace"], "true");
        for mode in ["enforce", "audit", "warn"] {
            assert_eq!(l[&format!("pod-security.kubernetes.io/{mode}")], "privileged");
        }
        assert!(created_by_provider(&ns));
        assert!(namespace_drift(&ns, "rome").is_none());
        // Only fields we own are sent: no spec, no status.
        let json = serde_json::to_value(&ns).unwrap();
        assert_eq!(json["apiVersion"], "v1");
        assert_eq!(json["kind"], "Namespace");
        assert!(json.get("spec").is_none() && json.get("status").is_none());

        let adopted = namespace_object(&inputs, false);
        assert!(!created_by_provider(&adopted));

        let mut drifted = ns.clone();
        drifted.metadata.labels.as_mut().unwrap().remove("pod-security.kubernetes.io/enforce");
        assert!(
            namespace_drift(&drifted, "rome")
                .unwrap()
                .contains("pod-security.kubernetes.io/enforce=privileged (found nothing)")
        );
        assert!(namespace_drift(&ns, "naples").unwrap().contains("liqo.io/remote-cluster-id=naples"));

        // A Liqo 1.0 tenant namespace (liqoctl's, without Pod Security labels) is adopted as it is; one that has
        // them, or one we created, must have them right.
        let mut liqo_1_0 = adopted.clone();
        let l = liqo_1_0.metadata.labels.as_mut().unwrap();
        for k in POD_SECURITY_LABELS {
            l.remove(k);
        }
        assert!(namespace_drift(&liqo_1_0, "rome").is_none());
        assert!(namespace_drift(&liqo_1_0, "naples").is_some(), "Liqo's own lookup labels still count");
        let mut partly = adopted.clone();
        partly.metadata.labels.as_mut().unwrap().remove(labels::POD_SECURITY_WARN);
        assert!(namespace_drift(&partly, "rome").unwrap().contains("pod-security.kubernetes.io/warn"));
    }

    #[test]
    fn key_secret_holds_raw_keys_and_is_checked_against_its_labels() {
        let inputs = Inputs { remote: "rome".into(), namespace: "liqo-tenant-rome".into() };
        let keys = crate::crypto::wireguard::KeyPair::generate().unwrap();
        let secret = key_secret_object(&inputs, &keys);
        assert_eq!(secret.metadata.name.as_deref(), Some("gw-keys"));
        assert_eq!(secret.metadata.namespace.as_deref(), Some("liqo-tenant-rome"));
        let l = secret.metadata.labels.clone().unwrap();
        assert_eq!(
            (l["liqo.io/remote-cluster-id"].as_str(), l["networking.liqo.io/gateway-resource"].as_str()),
            ("rome", "true")
        );
        // On the wire, data values are the 44-character base64 of the raw 32 bytes, as `wg genkey` prints them.
        let json = serde_json::to_value(&secret).unwrap();
        assert_eq!(json["data"]["publicKey"], keys.public_key());
        assert_eq!(json["data"]["privateKey"].as_str().unwrap().len(), 44);
        assert!(secret.string_data.is_none());

        assert_eq!(key_secret_public_key(&secret, "rome"), Ok(keys.public_key()));
        assert!(key_secret_public_key(&secret, "naples").unwrap_err().contains("liqo.io/remote-cluster-id=naples"));
        let mut emptied = secret.clone();
        emptied.data = None;
        assert!(key_secret_public_key(&emptied, "rome").unwrap_err().contains("no data"));
    }

    #[test]
    fn state_never_contains_the_private_key() {
        let inputs = Inputs { remote: "rome".into(), namespace: "liqo-tenant-rome".into() };
        let keys = crate::crypto::wireguard::KeyPair::generate().unwrap();
        let secret = key_secret_object(&inputs, &keys);
        let private = serde_json::to_value(&secret).unwrap()["data"]["privateKey"].as_str().unwrap().to_string();
        let state = state_of(&inputs, &facts(), Some(keys.public_key()), &Value::Null);
        let dump = format!("{state:?}");
        assert!(dump.contains(&keys.public_key()));
        assert!(!dump.contains(&private));
    }

    /// Liqo's gateway Deployment mounts the key Secret in its `wireguard-config` volume; its pods are found by the
    /// Deployment's selector. Other Deployments are never touched.
    #[test]
    fn gateway_deployments_are_found_by_their_key_secret_volume() {
        let deployment = |secret: &str| -> Deployment {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "gw-rome", "namespace": "liqo-tenant-rome"},
                "spec": {
                    "selector": {"matchLabels": {"networking.liqo.io/component": "gateway", "networking.liqo.io/active": "true"}},
                    "template": {"spec": {
                        "containers": [{"name": "wireguard"}],
                        "volumes": [{"name": "wireguard-config", "secret": {"secretName": secret}}],
                    }},
                },
            }))
            .unwrap()
        };
        let gw = deployment(labels::KEY_SECRET_NAME);
        assert!(mounts_key_secret(&gw));
        assert_eq!(
            pod_selector(&gw).as_deref(),
            Some("networking.liqo.io/active=true,networking.liqo.io/component=gateway")
        );
        assert!(!mounts_key_secret(&deployment("gw-other")));
        let mut unselective = gw.clone();
        unselective.spec.as_mut().unwrap().selector.match_labels = None;
        assert_eq!(pod_selector(&unselective), None, "no selector, no pods deleted");
    }

    #[test]
    fn the_plan_warns_what_a_lost_key_pair_means() {
        let d = key_pair_lost("liqo-tenant-rome");
        assert_eq!(d.severity, liqo_schema::tf::Severity::Warning);
        for needle in ["liqo-tenant-rome/gw-keys", "NEW key pair", "restarts the pods", "same apply"] {
            assert!(d.detail.contains(needle), "{needle}: {}", d.detail);
        }
    }

    #[test]
    fn namespace_wait_fails_fast_on_terminating() {
        let mut ns = Namespace::default();
        assert!(matches!(namespace_check(None), Verdict::Pending(_)));
        ns.status = Some(k8s_openapi::api::core::v1::NamespaceStatus {
            phase: Some("Terminating".into()),
            ..Default::default()
        });
        assert!(matches!(namespace_check(Some(&ns)), Verdict::Failed { .. }));
        ns.status =
            Some(k8s_openapi::api::core::v1::NamespaceStatus { phase: Some("Active".into()), ..Default::default() });
        assert!(matches!(namespace_check(Some(&ns)), Verdict::Ready(())));
    }
}
