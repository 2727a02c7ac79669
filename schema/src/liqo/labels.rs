//! Labels, annotations, finalizers and well-known names Liqo 1.x relies on.
//!
//! Liqo finds almost every peering object by label (often cluster-wide, failing on duplicates), so these
//! strings are part of the contract with Liqo's controllers: a typo here silently breaks a peering.

// ---------------------------------------------------------------------------------------------------------------
// Labels
// ---------------------------------------------------------------------------------------------------------------

/// Peer cluster ID. On tenant Namespaces, Configurations, key Secrets, PublicKeys, gateways, Connections,
/// Tenants, RoleBindings, control-plane Secrets, ResourceSlices, VirtualNodes, ForeignClusters.
pub const REMOTE_CLUSTER_ID: &str = "liqo.io/remote-cluster-id";
/// `"true"` on a tenant Namespace (the key must exist for lookups; the Tenant webhook wants `"true"`).
pub const TENANT_NAMESPACE: &str = "liqo.io/tenant-namespace";
/// `"true"` on the WireGuard key Secret (required for the gateway's lookup) and on PublicKeys.
pub const GATEWAY_RESOURCE: &str = "networking.liqo.io/gateway-resource";
/// `ControlPlane` (or `ResourceSlice`) on a kubeconfig Secret; the crd-replicator watches `ControlPlane` ones.
pub const IDENTITY_TYPE: &str = "liqo.io/identity-type";
/// `"true"` on local ResourceSlices that the crd-replicator must copy to the provider.
pub const REPLICATION: &str = "liqo.io/replication";
/// Replication destination (provider cluster ID) on a ResourceSlice.
pub const REMOTE_ID: &str = "liqo.io/remoteID";
/// `"true"` on the provider's copy of a replicated object (set by the crd-replicator).
pub const REPLICATED: &str = "liqo.io/replicated";
/// Origin cluster ID on the provider's copy of a replicated object (set by the crd-replicator).
pub const ORIGIN_ID: &str = "liqo.io/originID";
/// Name of the ResourceSlice an Identity or VirtualNode was derived from.
pub const RESOURCE_SLICE_NAME: &str = "liqo.io/resourceslice-name";
/// `"true"` on a Namespace whose pods may be scheduled on virtual nodes (set by the offloading controller).
pub const SCHEDULING_ENABLED: &str = "liqo.io/scheduling-enabled";
/// Node type label; virtual nodes carry [`NODE_TYPE_VIRTUAL_NODE`].
pub const NODE_TYPE: &str = "liqo.io/type";
/// `"true"` on nonce Secrets (handshake flow only).
pub const NONCE: &str = "liqo.io/nonce";
/// `"true"` on signed-nonce Secrets (handshake flow only).
pub const SIGNED_NONCE: &str = "liqo.io/signed-nonce";
/// Peering-user name on the CSR and RoleBindings made by `liqoctl generate peering-user`.
pub const PEERING_USER_NAME: &str = "liqo.io/peering-user-name";
/// Kind of a Network object (`pod-cidr`, `external-cidr`, `service-cidr`, `internal-cidr`, `reserved`).
pub const NETWORK_TYPE: &str = "ipam.liqo.io/network-type";
/// Kind of a remapping Network created by the Configuration controller in a tenant namespace (`pod`, `external`).
pub const CIDR_TYPE: &str = "configuration.liqo.io/cidr-type";
/// Liqo 1.0–1.1 marked configured Configurations with `"true"` (replaced by a condition in 1.2.0).
pub const CONFIGURATION_CONFIGURED: &str = "configuration.liqo.io/configured";
/// Selects the cluster-ID ConfigMap (value [`CLUSTER_ID_CONFIGMAP_APP_NAME`]) and Liqo's ClusterRoles.
pub const APP_NAME: &str = "app.kubernetes.io/name";
/// Set to `liqo` on objects Liqo's controllers create.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// Pod Security admission labels; Liqo ≥1.1 sets all three to [`POD_SECURITY_PRIVILEGED`] on tenant namespaces.
pub const POD_SECURITY_ENFORCE: &str = "pod-security.kubernetes.io/enforce";
pub const POD_SECURITY_AUDIT: &str = "pod-security.kubernetes.io/audit";
pub const POD_SECURITY_WARN: &str = "pod-security.kubernetes.io/warn";

// ---------------------------------------------------------------------------------------------------------------
// Label values
// ---------------------------------------------------------------------------------------------------------------

pub const TRUE: &str = "true";
pub const IDENTITY_TYPE_CONTROL_PLANE: &str = "ControlPlane";
pub const IDENTITY_TYPE_RESOURCE_SLICE: &str = "ResourceSlice";
pub const NODE_TYPE_VIRTUAL_NODE: &str = "virtual-node";
pub const NETWORK_TYPE_POD_CIDR: &str = "pod-cidr";
pub const NETWORK_TYPE_EXTERNAL_CIDR: &str = "external-cidr";
pub const NETWORK_TYPE_SERVICE_CIDR: &str = "service-cidr";
pub const NETWORK_TYPE_INTERNAL_CIDR: &str = "internal-cidr";
pub const CLUSTER_ID_CONFIGMAP_APP_NAME: &str = "clusterid-configmap";
pub const REMOTE_CONTROLPLANE_APP_NAME: &str = "remote-controlplane";
pub const POD_SECURITY_PRIVILEGED: &str = "privileged";
pub const MANAGED_BY_LIQO: &str = "liqo";

// ---------------------------------------------------------------------------------------------------------------
// Annotations
// ---------------------------------------------------------------------------------------------------------------

/// Provider tenant namespace on the consumer's control-plane kubeconfig Secret (replication target).
pub const REMOTE_TENANT_NAMESPACE: &str = "liqo.io/remote-tenant-namespace";
/// `"true"` on a ResourceSlice: the consumer creates a VirtualNode once both conditions are Accepted.
pub const CREATE_VIRTUAL_NODE: &str = "liqo.io/create-virtual-node";
/// Cordons a single ResourceSlice.
pub const CORDON: &str = "liqo.io/cordon";
/// Set on a consumer's ResourceSlices when its Tenant is Cordoned.
pub const CORDON_TENANT: &str = "liqo.io/cordon-tenant";
/// `"true"` on a ForeignCluster after `liqoctl force unpeer` (≥1.1.0).
pub const FOREIGN_CLUSTER_PERMANENTLY_UNREACHABLE: &str = "liqo.io/foreign-cluster-permanently-unreachable";

// ---------------------------------------------------------------------------------------------------------------
// Finalizers (teardown order: reference §6)
// ---------------------------------------------------------------------------------------------------------------

/// NamespaceOffloading: released after the remote namespaces are gone.
pub const NAMESPACE_OFFLOADING_FINALIZER: &str = "namespaceoffloading-controller.liqo.io/finalizer";
/// Local ResourceSlice: released after the provider's copy is gone.
pub const CRD_REPLICATOR_RESOURCE_FINALIZER: &str = "crdreplicator.liqo.io/resource";
/// Consumer control-plane kubeconfig Secret: released when no replicated objects remain.
pub const CRD_REPLICATOR_OPERATOR_FINALIZER: &str = "crdreplicator.liqo.io/operator";
/// VirtualNode: released after the virtual kubelet and the Node are gone.
pub const VIRTUAL_NODE_FINALIZER: &str = "virtualnode-controller.liqo.io/finalizer";
/// Tenant (provider side).
pub const TENANT_FINALIZER: &str = "tenant.liqo.io/finalizer";
/// WgGatewayServer / WgGatewayClient.
pub const GATEWAY_CLUSTERROLEBINDING_FINALIZER: &str = "networking.liqo.io/clusterrolebinding";
/// Remapping Networks owned by a Configuration.
pub const NETWORK_FINALIZER: &str = "network.ipam.liqo.io/finalizer";
/// ForeignCluster, while control-plane credentials exist.
pub const API_SERVER_CHECKER_FINALIZER: &str = "api-server-checker.liqo.io/finalizer";

// ---------------------------------------------------------------------------------------------------------------
// Well-known names
// ---------------------------------------------------------------------------------------------------------------

/// Namespace Liqo is installed in by default.
pub const DEFAULT_LIQO_NAMESPACE: &str = "liqo";
/// Default name of the cluster-ID ConfigMap (look it up by [`APP_NAME`]=[`CLUSTER_ID_CONFIGMAP_APP_NAME`]).
pub const CLUSTER_ID_CONFIGMAP: &str = "liqo-clusterid-configmap";
/// Key of the cluster ID in that ConfigMap.
pub const CLUSTER_ID_KEY: &str = "CLUSTER_ID";
/// Prefix of Liqo's default tenant namespace names (`liqo-tenant-<peer id>`).
pub const TENANT_NAMESPACE_PREFIX: &str = "liqo-tenant-";
/// The only name a NamespaceOffloading may have.
pub const NAMESPACE_OFFLOADING_NAME: &str = "offloading";
/// ClusterRole granting the consumer's control plane access to its provider tenant namespace.
pub const REMOTE_CONTROLPLANE_CLUSTER_ROLE: &str = "liqo-remote-controlplane";
/// RoleBinding (provider tenant namespace) to [`REMOTE_CONTROLPLANE_CLUSTER_ROLE`].
pub const REMOTE_CONTROLPLANE_ROLE_BINDING: &str = "liqo-binding-liqo-remote-controlplane";
/// Organization of control-plane client certificates.
pub const CONTROL_PLANE_ORGANIZATION: &str = "liqo.io";
/// Default WireGuard gateway templates (Liqo namespace).
pub const WIREGUARD_SERVER_TEMPLATE: &str = "wireguard-server";
pub const WIREGUARD_CLIENT_TEMPLATE: &str = "wireguard-client";
/// Data keys of the WireGuard key Secret (raw 32-byte keys).
pub const WIREGUARD_PRIVATE_KEY: &str = "privateKey";
pub const WIREGUARD_PUBLIC_KEY: &str = "publicKey";
/// Data key of the control-plane kubeconfig Secret.
pub const KUBECONFIG_KEY: &str = "kubeconfig";

// ---------------------------------------------------------------------------------------------------------------
// Names this provider gives the objects Liqo reads
// ---------------------------------------------------------------------------------------------------------------

/// The WireGuard key Secret `liqo_generate` writes in the tenant namespace and `liqo_gateway` references by
/// default (Liqo's own gateways name theirs `gw-<gateway>`).
pub const KEY_SECRET_NAME: &str = "gw-keys";
