//! Simulated Liqo control plane.
//!
//! Liqo's own controllers need nodes to run on, and the test ground has none, so this module plays their part
//! for every cluster it is given, following the behaviour documented for Liqo v1.2.0 (the project's reference
//! on declarative peering). It is test code: the provider never links it. Everything it does is visible as
//! simulated: every log line starts with `simulated liqo`, every Event it records has reporting controller
//! `simulated-liqo` and a note starting with `simulated:`, and objects it creates carry the annotation
//! [`SIMULATED_ANNOTATION`].
//!
//! What it does, per cluster (the cluster's own ID is read from ConfigMap `liqo/liqo-clusterid-configmap`):
//!
//! * **Configuration**: fills `spec.local` with the cluster's own CIDRs when unset (as Liqo does, by update),
//!   copies `spec.remote.cidr` to `status.remote.cidr` (no remapping) and sets condition
//!   `NetworkCIDRsConfigured=True` with the current `observedGeneration`.
//! * **GatewayServer / GatewayClient**: resolves the WireGuard key Secret (the one named in `spec.secretRef`,
//!   adding Liqo's labels when missing, or a generated `gw-<name>` Secret when none is named), renders the
//!   WgGatewayServer/WgGatewayClient (finalizer `networking.liqo.io/clusterrolebinding`, released on deletion),
//!   sets `status.serverRef|clientRef`, `status.secretRef` and, for servers, `status.endpoint`
//!   (`127.0.0.1`, the node port — `spec.endpoint.nodePort` or one derived from the UID in 30000-32767 — for
//!   NodePort, `loadBalancerIP` or `127.0.0.1` with `spec.endpoint.port` otherwise, protocol UDP).
//! * **Gateway Deployment** `gw-<gateway>` (owned by the WgGateway object, `wireguard-config` volume = the key
//!   Secret) and its pod, played by the simulator in place of a ReplicaSet (no kubelet: the pod stays Pending).
//!   Like Liqo's wireguard container, the pod loads the key pair once, when it is created (annotation
//!   `liqo-simulator/loaded-public-key`); a pair rewritten later is used only after the pod is deleted and
//!   replaced.
//! * **Connection** `gw-<gateway>` (owned by the gateway): created once the gateway is ready and a PublicKey for
//!   the peer exists in its namespace; `Connecting`, then `Connected` only when both sides' keys match (this
//!   side's PublicKey equals the key the peer's gateway pod loaded, and vice versa, the peer being the cluster
//!   whose ID is the gateway's `liqo.io/remote-cluster-id`); `Connecting` while the peer has no gateway, key
//!   Secret, running gateway pod or PublicKey for this cluster yet; `Error` when a key does not match, both sides run the same gateway
//!   role, the client dials another port than the server publishes, or the peer is not part of the ground (an
//!   Event on the Connection says which). Re-evaluated whenever keys, Secrets or gateways change on either side.
//! * **Tenant**: finalizer `tenant.liqo.io/finalizer`, `status.tenantNamespace` (TolerateNoHandshake only: the
//!   nonce handshake is not simulated and a KeysExchange Tenant gets a Warning Event instead of a status). A
//!   Drained Tenant, as in Liqo, gets no `status.tenantNamespace`: the consumer's RoleBinding
//!   `liqo-binding-<control-plane ClusterRole>` and its ResourceSlices in the tenant namespace are deleted instead.
//! * **ResourceSlice**, consumer side (`liqo.io/replication=true`): fills `spec.consumerClusterID` and
//!   `spec.providerClusterID`, then replicates the slice to the provider **with the kubeconfig of the
//!   control-plane Secret** of its namespace (labels `liqo.io/identity-type=ControlPlane` and
//!   `liqo.io/remote-cluster-id`, annotation `liqo.io/remote-tenant-namespace`), adding finalizer
//!   `crdreplicator.liqo.io/resource`, and copies the provider's status back. Failures of the remote API (e.g.
//!   Forbidden) are Warning Events `ReplicationFailed` on the local slice and are retried. The control-plane
//!   Secret gets finalizer `crdreplicator.liqo.io/operator`, released only when no replicated slices remain
//!   locally or remotely (a remote Forbidden or unreachable API counts as none, as in Liqo). Deleting the slice
//!   deletes the provider's copy first, then releases the finalizer.
//! * **ResourceSlice**, provider side (the replicated copy, with admin credentials like Liqo's provider
//!   controller): the namespace must be the consumer's tenant namespace (else `Authentication=Denied`) holding
//!   its Tenant (else a `TenantNotFound` Warning and no status); then `Authentication=Accepted`, and
//!   `Resources=Accepted` with `status.resources` = the request plus Liqo's chart defaults for missing
//!   `cpu`/`memory`/`pods`/`ephemeral-storage`
//!   — or `Resources=Denied` (reason `ResourceSliceResourcesDenied`) for new slices of a Cordoned tenant, for
//!   every slice of a Drained tenant, and under the `deny-resource-slices` fault. Slices of a cordoned or
//!   drained tenant are annotated `liqo.io/cordon-tenant`. Classes other than `default` get no Resources
//!   condition (no custom class controller runs).
//! * **VirtualNode**: created as `<slice>` in the slice's namespace when the slice has annotation
//!   `liqo.io/create-virtual-node=true` and both conditions Accepted (ownerRef the slice, `spec.resourceQuota`
//!   following the accepted resources); finalizer `virtualnode-controller.liqo.io/finalizer`; conditions
//!   `VirtualKubelet` and `Node` go Creating → Running; a core Node `<slice>` (label `liqo.io/type=virtual-node`,
//!   capacity = accepted resources, kept alive with a node Lease) that is `Ready=True` — unless, as with Liqo's
//!   virtual kubelet (`--node-check-network`), networking with the provider is configured on this cluster (a
//!   Configuration or gateway labelled for it) and no Connection for it is `Connected`: then `Ready=False` and
//!   `NetworkUnavailable=True`. Deleting the slice deletes
//!   the VirtualNode, which deletes its Node before releasing its finalizer.
//! * **NamespaceOffloading** `offloading`: finalizer `namespaceoffloading-controller.liqo.io/finalizer`, label
//!   `liqo.io/scheduling-enabled` on the namespace for Remote/LocalAndRemote, virtual nodes selected by
//!   `clusterSelector` (no terms = all), the remote namespace created on each selected provider (DefaultName ⇒
//!   `<ns>-<consumer id>`, EnforceSameName ⇒ `<ns>`, SelectedName ⇒ `spec.remoteNamespaceName`; a name already
//!   taken by another namespace fails that cluster), status `remoteNamespaceName`,
//!   `remoteNamespacesConditions` (keyed by provider cluster ID), `offloadingPhase` and `observedGeneration`.
//!   Deletion removes the remote namespaces, waits for them to be gone, then releases the finalizer. (Liqo does
//!   this through replicated NamespaceMaps; the simulator creates the namespaces directly, with the provider's
//!   admin credentials.)
//! * **ForeignCluster** `<peer id>` for every peer that any peering object names, with `role`, `apiServerUrl`,
//!   `tenantNamespace` and per-module conditions as `liqoctl info` reads them. As in Liqo's `status.go`,
//!   `tenantNamespace.local` comes only from the peer's Tenant (`status.tenantNamespace`) and `remote` never (only
//!   an Identity resource, which declarative peering does not use, would fill it); a control-plane Secret gives
//!   only `apiServerUrl`.
//!
//! Fault switches: ConfigMap `liqo-simulator-faults` in namespace `liqo` of each cluster, watched, so a change
//! takes effect at once and only on that cluster:
//!
//! | key | value | effect |
//! |---|---|---|
//! | `deny-resource-slices` | `"true"` | the cluster, as a provider, denies new ResourceSlices (`Resources=Denied`, reason `ResourceSliceResourcesDenied`, message naming the fault) |
//! | `fail-connections` | `"true"` | every Connection on the cluster goes to `Error` (and back when the key is removed) |
//! | `status-delay-ms` | `"N"` | every status write on the cluster waits N milliseconds first |
//! | `drop-watch` | `"true"` | every watch of the simulator on the cluster is dropped and restarted (a fresh list) every second, losing in-flight events |
//!
//! The simulator runs until its process is killed.
#[macro_use]
mod log;
mod authentication;
mod context;
mod faults;
mod foreign_cluster;
mod network;
mod offloading;
mod ops;
mod supervisor;
mod virtual_node;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;

pub use ops::SIMULATED_ANNOTATION;

/// One cluster the simulator plays Liqo's controllers for.
#[derive(Clone, Debug)]
pub struct SimCluster {
    pub name: String,
    /// Admin kubeconfig (Liqo's controllers run with cluster-wide rights).
    pub kubeconfig: PathBuf,
}

/// Plays Liqo's controllers for every given cluster until the process is killed. Returns early only if a
/// cluster cannot be reached or has no cluster ID at start.
pub async fn run(clusters: Vec<SimCluster>) -> Result<()> {
    let world = Arc::new(context::World::connect(&clusters).await?);
    for cluster in world.clusters() {
        log_line!(cluster.name, "playing Liqo v1.2.0's controllers for cluster ID {}", cluster.id);
    }
    supervisor::run(world).await
}
