//! The objects `liqo_tenant` writes on the provider cluster (Tenant, RoleBinding, CertificateSigningRequest) and
//! what it reads back from the ones it finds (the control-plane ClusterRole, a RoleBinding still in place).
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use liqo_schema::liqo::labels;
use liqo_schema::liqo::{ResourceSlice, Tenant, TenantSpec};

use super::schema::attr;

/// The built-in signer whose certificates kube-apiserver accepts for client authentication.
const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";
const CLIENT_USAGES: [&str; 3] = ["digital signature", "key encipherment", "client auth"];

fn remote_cluster_labels(consumer: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(labels::REMOTE_CLUSTER_ID.to_string(), consumer.to_string())])
}

/// The Tenant as liqoctl's declarative flow writes it; Liqo's webhook requires the label to equal spec.clusterID.
/// An imported handshake Tenant keeps `KeysExchange` (its key, CSR and signature stay liqoctl's fields).
pub fn tenant_object(planned: &attr::Tenant) -> Tenant {
    let consumer = &planned.consumer_cluster_id;
    let mut t = Tenant::new(
        consumer,
        TenantSpec {
            cluster_id: Some(consumer.clone()),
            authz_policy: Some(planned.authz_policy.clone()),
            tenant_condition: Some(planned.tenant_condition.clone()),
            proxy_url: planned.proxy_url.clone(),
            ..TenantSpec::default()
        },
    );
    t.metadata.namespace = Some(planned.tenant_namespace.clone());
    t.metadata.labels = Some(remote_cluster_labels(consumer));
    t
}

/// The RoleBinding Liqo's own tenant controller would make for the control-plane role: named
/// `liqo-binding-<role>` (`tenantNamespace/bindings.go`), so Liqo's Drained handling removes it too.
pub fn role_binding_name(role: &str) -> String {
    format!("liqo-binding-{role}")
}

/// The binding of the consumer user to the control-plane ClusterRole `role` (found by label, see
/// [`pick_control_plane_role`]).
pub fn role_binding(planned: &attr::Tenant, role: &str) -> RoleBinding {
    RoleBinding {
        metadata: ObjectMeta {
            name: Some(role_binding_name(role)),
            namespace: Some(planned.tenant_namespace.clone()),
            labels: Some(remote_cluster_labels(&planned.consumer_cluster_id)),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_string(),
            kind: "ClusterRole".to_string(),
            name: role.to_string(),
        },
        subjects: Some(vec![Subject {
            api_group: Some("rbac.authorization.k8s.io".to_string()),
            kind: "User".to_string(),
            name: planned.consumer_cluster_id.clone(),
            namespace: None,
        }]),
    }
}

/// True when the RoleBinding still grants the consumer user the control-plane role.
pub fn binds_consumer(rb: &RoleBinding, consumer: &str, role: &str) -> bool {
    rb.role_ref.name == role && rb.subjects.iter().flatten().any(|s| s.kind == "User" && s.name == consumer)
}

/// The selector Liqo's tenant controller finds the control-plane ClusterRole by (`getClusterRoles`): its name
/// follows the Helm release's `nameOverride` (`<name>-remote-controlplane`), its label does not.
pub fn control_plane_role_selector() -> String {
    format!("{}={}", labels::APP_NAME, labels::REMOTE_CONTROLPLANE_APP_NAME)
}

/// The one ClusterRole among those carrying Liqo's control-plane label; none or several is an error (reason,
/// next step) because the consumer would get 403 or an unintended role.
pub fn pick_control_plane_role(mut names: Vec<String>) -> Result<String, (String, String)> {
    let selector = control_plane_role_selector();
    match names.len() {
        1 => Ok(names.remove(0)),
        0 => Err((
            format!("No ClusterRole on the provider cluster is labelled {selector}."),
            "Liqo's Helm chart installs it (liqo-controlplane-rbac.yaml, named `<nameOverride>-remote-controlplane`, \
             `liqo-remote-controlplane` by default) and the consumer's control plane needs it. Install or repair Liqo \
             on this cluster, or check that this provider block points at the provider cluster."
                .to_string(),
        )),
        _ => {
            names.sort();
            Err((
                format!("{} ClusterRoles are labelled {selector}: {}.", names.len(), names.join(", ")),
                "liqo_tenant binds the consumer to exactly one. Remove the label from the roles that do not belong to \
                 this cluster's Liqo installation (e.g. left over from another Helm release)."
                    .to_string(),
            ))
        }
    }
}

/// Labels that find this resource's CSRs (and never Liqo's own CSRs for the same consumer's ResourceSlices).
pub fn csr_selector(consumer: &str) -> String {
    format!("{}={consumer},{}={}", labels::REMOTE_CLUSTER_ID, labels::MANAGED_BY, crate::kube::FIELD_MANAGER)
}

pub fn csr_object(name: &str, consumer: &str, csr_pem: &str, validity: Duration) -> CertificateSigningRequest {
    let mut object_labels = remote_cluster_labels(consumer);
    let (mark, by) = crate::kube::provider_mark();
    object_labels.insert(mark, by);
    CertificateSigningRequest {
        metadata: ObjectMeta { name: Some(name.to_string()), labels: Some(object_labels), ..ObjectMeta::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(csr_pem.as_bytes().to_vec()),
            signer_name: CLIENT_SIGNER.to_string(),
            usages: Some(CLIENT_USAGES.iter().map(|u| u.to_string()).collect()),
            // Validated to fit an int32 at plan time.
            expiration_seconds: Some(validity.as_secs().min(i32::MAX as u64) as i32),
            ..CertificateSigningRequestSpec::default()
        },
        status: None,
    }
}

/// CSRs are immutable and every certificate needs its own: a random suffix keeps names unique.
pub fn csr_name(consumer: &str) -> String {
    format!("liqo-tenant-{consumer}-{:08x}", rand::random::<u32>())
}

/// The provider's copies of the consumer's ResourceSlices (labelled by Liqo's crd-replicator): the ones
/// `cordoned_resource_slices` names. A cluster that also consumes from its peer keeps its own slices for that
/// peer in the same tenant namespace, without these labels.
pub fn consumer_slices_selector(consumer: &str) -> String {
    format!("{}={},{}={consumer}", labels::REPLICATED, labels::TRUE, labels::ORIGIN_ID)
}

/// What cordoning `wanted` changes among `slices`, as (slice, cordoned after): each wanted slice not cordoned yet,
/// and each cordoned one this resource answers for (`answer_for`) and no longer wants.
pub fn cordon_changes(
    slices: &[ResourceSlice],
    wanted: &BTreeSet<String>,
    answer_for: &BTreeSet<String>,
) -> Vec<(String, bool)> {
    slices
        .iter()
        .filter_map(|slice| {
            let name = slice.metadata.name.clone()?;
            let (cordoned, _) = slice.cordons();
            let want = wanted.contains(&name);
            (want != cordoned && (want || answer_for.contains(&name))).then_some((name, want))
        })
        .collect()
}

/// `cordoned_resource_slices` as the cluster has it: the consumer's slices cordoned now, and the names of `prior`
/// whose slice is gone (nothing left to cordon: not drift).
pub fn cordoned_read(slices: &[ResourceSlice], prior: &BTreeSet<String>) -> BTreeSet<String> {
    let present: BTreeSet<String> = slices.iter().filter_map(|s| s.metadata.name.clone()).collect();
    let cordoned = slices.iter().filter(|s| s.cordons().0).filter_map(|s| s.metadata.name.clone());
    let gone = prior.iter().filter(|n| !present.contains(*n)).cloned();
    cordoned.chain(gone).collect()
}
