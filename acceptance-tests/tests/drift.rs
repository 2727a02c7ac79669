//! Drift, object by object: for every object the five resources own (the list follows each resource module's
//! "Owns" documentation), on the full chain plus a liqo_offload:
//! 1. deleted out of band → the plan changes the owning resource → apply recreates the object → the plan is empty;
//! 2. an owned field changed out of band → the plan changes the owning resource → apply restores the field → the
//!    plan is empty.
//!
//! Status written by Liqo's controllers is never drift: every "plan is empty" check runs after Liqo has written
//! status for the objects just (re)created.
//!
//! The cases run in rounds (one plan, one apply and one plan for a few objects, where each case alone took its own
//! three). A round's owners are distinct (the test checks it) and none reads another's attributes in the chain, so
//! the plan of each owner shows its own object's drift, not an unknown value passed on by another: the server
//! gateway's endpoint feeds the client gateway, the consumer key the Tenant and the peer, the Tenant the peer, and
//! a liqo_generate made anew (its key Secret gone or edited) every other resource, so a round pairs a gateway case
//! with a tenant, key, peer or offload case, and a liqo_generate case is a round of its own. Nor does Liqo couple
//! them: a RoleBinding that lost the consumer's user while a peer apply waits for its slice (its crd-replicator
//! backs off) would tie the tenant to the peer, so the tenant cases share no round with a peer case either.
//!
//! Each client gets a ground of its own (`milan` + `rome`), so both run at the same time; the tenant Namespaces
//! themselves are left out of the deletion table (deleting one deletes every object of the peering inside it,
//! which the per-object cases already cover one by one).
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use kube::Api;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use liqo_acceptance::chain::full_chain;
use liqo_acceptance::ground::{LiqoMode, pool};
use liqo_acceptance::observe::{apply_planned, attributes, eventually, plan_text, planned_changes};
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME};
use serde_json::{Value, json};

/// Tenant namespaces liqo_generate makes by default: on milan for rome, on rome for milan.
const MILAN_NS: &str = "liqo-tenant-rome";
const ROME_NS: &str = "liqo-tenant-milan";
const DEMO_NS: &str = "liqo-drift-demo";

/// How long an out-of-band deletion may take (until Liqo releases its finalizers).
const GONE_WITHIN: Duration = Duration::from_secs(90);

/// One object a resource owns.
#[derive(Clone, Copy)]
struct Owned {
    /// Terraform address of the owning resource.
    address: &'static str,
    cluster: &'static str,
    kind: (&'static str, &'static str, &'static str, &'static str),
    namespace: Option<&'static str>,
    name: &'static str,
}

const SECRET: (&str, &str, &str, &str) = ("", "v1", "Secret", "secrets");
const NAMESPACE: (&str, &str, &str, &str) = ("", "v1", "Namespace", "namespaces");
const CONFIGURATION: (&str, &str, &str, &str) = ("networking.liqo.io", "v1beta1", "Configuration", "configurations");
const PUBLIC_KEY: (&str, &str, &str, &str) = ("networking.liqo.io", "v1beta1", "PublicKey", "publickeies");
const GATEWAY_SERVER: (&str, &str, &str, &str) = ("networking.liqo.io", "v1beta1", "GatewayServer", "gatewayservers");
const GATEWAY_CLIENT: (&str, &str, &str, &str) = ("networking.liqo.io", "v1beta1", "GatewayClient", "gatewayclients");
const ROLE_BINDING: (&str, &str, &str, &str) = ("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings");
const TENANT: (&str, &str, &str, &str) = ("authentication.liqo.io", "v1beta1", "Tenant", "tenants");
const RESOURCE_SLICE: (&str, &str, &str, &str) =
    ("authentication.liqo.io", "v1beta1", "ResourceSlice", "resourceslices");
const NAMESPACE_OFFLOADING: (&str, &str, &str, &str) =
    ("offloading.liqo.io", "v1beta1", "NamespaceOffloading", "namespaceoffloadings");

const fn owned(
    address: &'static str,
    cluster: &'static str,
    kind: (&'static str, &'static str, &'static str, &'static str),
    namespace: Option<&'static str>,
    name: &'static str,
) -> Owned {
    Owned { address, cluster, kind, namespace, name }
}

const GENERATE_MILAN_KEYS: Owned = owned("liqo_generate.milan", MILAN, SECRET, Some(MILAN_NS), "gw-keys");
const GENERATE_ROME_KEYS: Owned = owned("liqo_generate.rome", ROME, SECRET, Some(ROME_NS), "gw-keys");
const GENERATE_MILAN_NS: Owned = owned("liqo_generate.milan", MILAN, NAMESPACE, None, MILAN_NS);
const SERVER_CONFIGURATION: Owned = owned("liqo_gateway.server", MILAN, CONFIGURATION, Some(MILAN_NS), ROME);
const SERVER_PUBLIC_KEY: Owned = owned("liqo_gateway.server", MILAN, PUBLIC_KEY, Some(MILAN_NS), ROME);
const SERVER_GATEWAY: Owned = owned("liqo_gateway.server", MILAN, GATEWAY_SERVER, Some(MILAN_NS), ROME);
const CLIENT_CONFIGURATION: Owned = owned("liqo_gateway.client", ROME, CONFIGURATION, Some(ROME_NS), MILAN);
const CLIENT_PUBLIC_KEY: Owned = owned("liqo_gateway.client", ROME, PUBLIC_KEY, Some(ROME_NS), MILAN);
const CLIENT_GATEWAY: Owned = owned("liqo_gateway.client", ROME, GATEWAY_CLIENT, Some(ROME_NS), MILAN);
const TENANT_BINDING: Owned =
    owned("liqo_tenant.rome", MILAN, ROLE_BINDING, Some(MILAN_NS), "liqo-binding-liqo-remote-controlplane");
const TENANT_TENANT: Owned = owned("liqo_tenant.rome", MILAN, TENANT, Some(MILAN_NS), ROME);
const CONSUMER_KEY: Owned = owned("liqo_consumer_key.rome", ROME, SECRET, Some(ROME_NS), "controlplane-key-milan");
const PEER_IDENTITY: Owned =
    owned("liqo_peer.rome_to_milan", ROME, SECRET, Some(ROME_NS), "kubeconfig-controlplane-milan");
const PEER_SLICE: Owned = owned("liqo_peer.rome_to_milan", ROME, RESOURCE_SLICE, Some(ROME_NS), MILAN);
const OFFLOADING: Owned = owned("liqo_offload.demo", ROME, NAMESPACE_OFFLOADING, Some(DEMO_NS), "offloading");

/// Every owned object except the tenant Namespaces (see the module comment), in rounds (see the module comment).
const DELETIONS: &[&[Owned]] = &[
    &[SERVER_CONFIGURATION, PEER_IDENTITY],
    &[SERVER_PUBLIC_KEY, PEER_SLICE],
    &[SERVER_GATEWAY, TENANT_BINDING],
    &[CLIENT_CONFIGURATION, TENANT_TENANT],
    &[CLIENT_PUBLIC_KEY, CONSUMER_KEY],
    &[CLIENT_GATEWAY, OFFLOADING],
    &[GENERATE_MILAN_KEYS],
    &[GENERATE_ROME_KEYS],
];

/// A field the owning resource sets, changed out of band with a JSON merge patch; `pointer` locates it in the
/// object (as JSON) to compare before and after.
struct Edit {
    object: Owned,
    what: &'static str,
    pointer: &'static str,
    patch: fn() -> Value,
    /// `None`: apply restores the original value. `Some(attribute)`: apply writes a fresh value by design, which
    /// must equal this attribute of the owning resource in the state (a WireGuard key pair that no longer
    /// matches the state is replaced by a new pair, whose public key flows to the peer).
    regenerated: Option<&'static str>,
}

/// A WireGuard key (base64 of 32 bytes) that is nobody's.
const STRANGER_KEY: &str = "c3RyYW5nZXItd2lyZWd1YXJkLWtleS0zMi1ieXRlcyE=";

const NAMESPACE_LABEL: Edit = Edit {
    object: GENERATE_MILAN_NS,
    what: "a Pod Security label of the tenant Namespace",
    pointer: "/metadata/labels/pod-security.kubernetes.io~1enforce",
    patch: || json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "baseline"}}}),
    regenerated: None,
};

const ROME_PUBLIC_KEY: Edit = Edit {
    object: GENERATE_ROME_KEYS,
    what: "the public key in the WireGuard key Secret",
    pointer: "/data/publicKey",
    patch: || json!({"data": {"publicKey": STRANGER_KEY}}),
    regenerated: Some("wireguard_public_key"),
};

const SERVER_EXTERNAL_CIDR: Edit = Edit {
    object: SERVER_CONFIGURATION,
    what: "the peer's external CIDR",
    pointer: "/spec/remote/cidr/external",
    patch: || json!({"spec": {"remote": {"cidr": {"external": ["10.199.0.0/16"]}}}}),
    regenerated: None,
};

const SERVER_PEER_KEY: Edit = Edit {
    object: SERVER_PUBLIC_KEY,
    what: "the peer's public key",
    pointer: "/spec/publicKey",
    patch: || json!({"spec": {"publicKey": STRANGER_KEY}}),
    regenerated: None,
};

const SERVER_MTU: Edit = Edit {
    object: SERVER_GATEWAY,
    what: "the MTU",
    pointer: "/spec/mtu",
    patch: || json!({"spec": {"mtu": 1280}}),
    regenerated: None,
};

const CLIENT_MTU: Edit = Edit {
    object: CLIENT_GATEWAY,
    what: "the MTU",
    pointer: "/spec/mtu",
    patch: || json!({"spec": {"mtu": 1280}}),
    regenerated: None,
};

const CLIENT_PORT: Edit = Edit {
    object: CLIENT_GATEWAY,
    what: "the server port it dials",
    pointer: "/spec/endpoint/port",
    patch: || json!({"spec": {"endpoint": {"port": 31999}}}),
    regenerated: None,
};

const TENANT_CONDITION: Edit = Edit {
    object: TENANT_TENANT,
    what: "the tenant condition",
    pointer: "/spec/tenantCondition",
    patch: || json!({"spec": {"tenantCondition": "Cordoned"}}),
    regenerated: None,
};

const BOUND_USER: Edit = Edit {
    object: TENANT_BINDING,
    what: "the bound user",
    pointer: "/subjects/0/name",
    patch: || json!({"subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "someone"}]}),
    regenerated: None,
};

const IDENTITY_ANNOTATION: Edit = Edit {
    object: PEER_IDENTITY,
    what: "the remote tenant namespace annotation",
    pointer: "/metadata/annotations/liqo.io~1remote-tenant-namespace",
    patch: || json!({"metadata": {"annotations": {"liqo.io/remote-tenant-namespace": "elsewhere"}}}),
    regenerated: None,
};

const IDENTITY_KUBECONFIG: Edit = Edit {
    object: PEER_IDENTITY,
    what: "the kubeconfig (replaced by one without the provider's certificate)",
    pointer: "/data/kubeconfig",
    // base64 of "clusters: []\n".
    patch: || json!({"data": {"kubeconfig": "Y2x1c3RlcnM6IFtdCg=="}}),
    regenerated: None,
};

const SLICE_CPU: Edit = Edit {
    object: PEER_SLICE,
    what: "the requested CPU",
    pointer: "/spec/resources/cpu",
    patch: || json!({"spec": {"resources": {"cpu": "1"}}}),
    regenerated: None,
};

const OFFLOADING_STRATEGY: Edit = Edit {
    object: OFFLOADING,
    what: "the pod offloading strategy",
    pointer: "/spec/podOffloadingStrategy",
    patch: || json!({"spec": {"podOffloadingStrategy": "Local"}}),
    regenerated: None,
};

/// Every field case, in rounds (see the module comment).
const EDITS: &[&[&Edit]] = &[
    &[&SERVER_EXTERNAL_CIDR, &IDENTITY_ANNOTATION, &OFFLOADING_STRATEGY],
    &[&SERVER_PEER_KEY, &IDENTITY_KUBECONFIG],
    &[&SERVER_MTU, &BOUND_USER],
    &[&CLIENT_MTU, &TENANT_CONDITION],
    &[&CLIENT_PORT, &SLICE_CPU],
    &[&NAMESPACE_LABEL],
    &[&ROME_PUBLIC_KEY],
];

/// The liqo_offload appended to the full chain; the test fills in its namespace.
const OFFLOAD: &str = include_str!("drift/offload.tf");

impl Owned {
    fn describe(&self) -> String {
        let (_, _, kind, _) = self.kind;
        match self.namespace {
            Some(ns) => format!("{kind} {ns}/{} on {}", self.name, self.cluster),
            None => format!("{kind} {} on {}", self.name, self.cluster),
        }
    }

    async fn api(&self, ground: &Ground) -> Result<Api<DynamicObject>> {
        let (group, version, kind, plural) = self.kind;
        let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
        let client = ground.client(self.cluster).await?;
        Ok(match self.namespace {
            Some(ns) => Api::namespaced_with(client, ns, &resource),
            None => Api::all_with(client, &resource),
        })
    }

    /// The live object as JSON; `None` when it does not exist or is being deleted.
    async fn get(&self, ground: &Ground) -> Result<Option<Value>> {
        let object = self.api(ground).await?.get_opt(self.name).await.with_context(|| self.describe())?;
        Ok(object.filter(|o| o.metadata.deletion_timestamp.is_none()).map(|o| json!(o)))
    }
}

/// One plan changes each of `addresses` (any action but no-op); returns their actions.
async fn assert_planned(work: &Workdir, addresses: &[&str], why: &str) -> Result<Vec<Value>> {
    let changes = planned_changes(work, addresses).await.with_context(|| format!("after {why}"))?;
    addresses
        .iter()
        .zip(changes)
        .map(|(address, change)| {
            let actions = change["actions"].clone();
            ensure!(actions != json!(["no-op"]), "after {why}, the plan leaves {address} alone: {actions}");
            Ok(actions)
        })
        .collect()
}

async fn assert_plan_empty(work: &Workdir, after: &str) -> Result<()> {
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "the plan after {after} must be empty:\n{}", plan_text(&plan));
    Ok(())
}

/// One round of deletions: returns the planned actions of each object's owner.
async fn deleted(ground: &Ground, work: &Workdir, round: &[Owned]) -> Result<Vec<Value>> {
    let mut before = Vec::new();
    for object in round {
        let what = object.describe();
        before.push(object.get(ground).await?.with_context(|| format!("{what} must exist before the case"))?);
        let api = object.api(ground).await?;
        api.delete(object.name, &DeleteParams::default()).await.with_context(|| format!("deleting {what}"))?;
    }
    for object in round {
        // Gone, or held by a finalizer Liqo releases only once the peering is taken down (the identity Secret
        // while its slice is replicated): either way the owning resource must plan to rebuild it.
        let what = object.describe();
        eventually(GONE_WITHIN, &format!("{what} deleted out of band is gone or terminating"), || async {
            Ok(object.get(ground).await?.is_none().then_some(()))
        })
        .await?;
    }
    let whats = round.iter().map(Owned::describe).collect::<Vec<_>>().join(", ");
    let why = format!("deleting {whats}");
    let owners: Vec<&str> = round.iter().map(|o| o.address).collect();
    let actions = assert_planned(work, &owners, &why).await?;
    apply_planned(work).await.with_context(|| format!("apply after {why}"))?;
    for (object, before) in round.iter().zip(&before) {
        let what = object.describe();
        let after = object.get(ground).await?.with_context(|| format!("apply after {why} did not recreate {what}"))?;
        ensure!(after["metadata"]["uid"] != before["metadata"]["uid"], "{what}: the same object after {why}?");
    }
    assert_plan_empty(work, &format!("recreating {whats}")).await?;
    Ok(actions)
}

impl Edit {
    fn describe(&self) -> String {
        format!("{} of {}", self.what, self.object.describe())
    }

    /// The field as it is live.
    async fn field(&self, ground: &Ground) -> Result<Option<Value>> {
        Ok(self.object.get(ground).await?.and_then(|o| o.pointer(self.pointer).cloned()))
    }
}

/// One round of field cases: returns the planned actions of each field's owner.
async fn edited(ground: &Ground, work: &Workdir, round: &[&Edit]) -> Result<Vec<Value>> {
    let mut originals = Vec::new();
    for edit in round {
        let what = edit.describe();
        let original = edit.field(ground).await?.with_context(|| format!("{what}: no such field"))?;
        let api = edit.object.api(ground).await?;
        api.patch(edit.object.name, &PatchParams::default(), &Patch::Merge((edit.patch)()))
            .await
            .with_context(|| format!("changing {what}"))?;
        let changed = edit.field(ground).await?;
        ensure!(changed.as_ref() != Some(&original), "{what}: the out-of-band change did not take ({changed:?})");
        originals.push(original);
    }
    let whats = round.iter().map(|e| e.describe()).collect::<Vec<_>>().join(", ");
    let why = format!("changing {whats} out of band");
    let owners: Vec<&str> = round.iter().map(|e| e.object.address).collect();
    let actions = assert_planned(work, &owners, &why).await?;
    apply_planned(work).await.with_context(|| format!("apply after {why}"))?;
    for (edit, original) in round.iter().zip(originals) {
        let what = edit.describe();
        let repaired = edit.field(ground).await?;
        let expected = match edit.regenerated {
            None => original,
            Some(attribute) => {
                let fresh = attributes(work, edit.object.address)?[attribute].clone();
                ensure!(fresh != original, "{what}: apply kept the old value, expected a fresh one");
                fresh
            }
        };
        ensure!(repaired.as_ref() == Some(&expected), "{what}: apply left {repaired:?}, expected {expected}");
    }
    assert_plan_empty(work, &format!("repairing {whats}")).await?;
    Ok(actions)
}

/// Each round's owners are distinct (see the module comment).
fn distinct_owners(rounds: impl Iterator<Item = Vec<&'static str>>) -> Result<()> {
    for owners in rounds {
        let distinct: std::collections::BTreeSet<_> = owners.iter().collect();
        ensure!(distinct.len() == owners.len(), "a round with two cases of one resource: {owners:?}");
    }
    Ok(())
}

async fn every_owned_object(cli: Cli) -> Result<usize> {
    distinct_owners(DELETIONS.iter().map(|round| round.iter().map(|o| o.address).collect()))?;
    distinct_owners(EDITS.iter().map(|round| round.iter().map(|e| e.object.address).collect()))?;
    // Each client on a ground of its own (from the test command's pool when it has one: drift destroys at the end).
    let ground = pool::milan_rome(LiqoMode::real()).await?;
    let work = Workdir::new(cli, &full_chain(&ground, r#"{ cpu = "4", memory = "8Gi" }"#)).await?;
    work.write("offload.tf", OFFLOAD)?;
    work.write_vars(&json!({ "offloaded_namespace": DEMO_NS }))?;
    work.apply().await?;
    // Liqo keeps writing status (endpoints, Connections, conditions) after apply returns.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_plan_empty(&work, "the first apply and Liqo's status writes").await?;

    let mut failures = Vec::new();
    let mut checked = 0;
    for round in DELETIONS {
        let began = Instant::now();
        match deleted(&ground, &work, round).await {
            Ok(actions) => {
                checked += round.len();
                for (object, actions) in round.iter().zip(actions) {
                    eprintln!(
                        "[drift {cli}] deleted {}: {} planned {actions}, repaired in a round of {:.1}s",
                        object.describe(),
                        object.address,
                        began.elapsed().as_secs_f64()
                    )
                }
            }
            Err(err) => {
                let whats = round.iter().map(Owned::describe).collect::<Vec<_>>().join(", ");
                failures.push(format!("deleted {whats}: {err:#}"));
                // Converge before the next round, so that one failure does not cascade.
                let _ = work.apply().await;
            }
        }
    }
    for round in EDITS {
        let began = Instant::now();
        match edited(&ground, &work, round).await {
            Ok(actions) => {
                checked += round.len();
                for (edit, actions) in round.iter().zip(actions) {
                    eprintln!(
                        "[drift {cli}] changed {}: {} planned {actions}, repaired in a round of {:.1}s",
                        edit.describe(),
                        edit.object.address,
                        began.elapsed().as_secs_f64()
                    )
                }
            }
            Err(err) => {
                let whats = round.iter().map(|e| e.describe()).collect::<Vec<_>>().join(", ");
                failures.push(format!("changed {whats}: {err:#}"));
                let _ = work.apply().await;
            }
        }
    }
    work.destroy().await?;
    if !failures.is_empty() {
        bail!(
            "{cli}: {} of {} rounds of drift cases failed:\n{}",
            failures.len(),
            DELETIONS.len() + EDITS.len(),
            failures.join("\n\n")
        );
    }
    Ok(checked)
}

#[tokio::test]
async fn every_owned_object_deleted_or_changed_out_of_band_is_planned_and_repaired() -> Result<()> {
    let began = Instant::now();
    let clients = Cli::available();
    let checked = tf::each_client(clients.iter().map(|&cli| (cli, every_owned_object(cli)))).await;
    for (cli, cases) in clients.iter().zip(checked.iter().flatten()) {
        eprintln!("[drift] {cli}: {cases} cases passed");
    }
    eprintln!("[drift] {:.0}s in all", began.elapsed().as_secs_f64());
    checked.map(drop)
}
