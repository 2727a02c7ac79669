//! The objects `liqo_peer` owns: the peering a plan asks for, the control-plane identity Secret and the
//! ResourceSlice built from it, the state an apply records, and whose the identity Secret is.
use crate::resources::lifecycle::known_string;
use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::ObjectMeta;
use liqo_schema::liqo::{RESOURCE_SLICE_CLASS_DEFAULT, ResourceSlice, ResourceSliceSpec, labels};
use liqo_schema::tf::{Diagnostic, Value};
use secrecy::SecretString;

use super::schema::ISSUED;
use super::schema::attr;
use crate::attributes::Key;

/// Name of the control-plane identity Secret for `provider` (the name Liqo's Identity controller would use).
pub fn identity_secret_name(provider: &str) -> String {
    format!("kubeconfig-controlplane-{provider}")
}

/// How this cluster's Liqo authenticates to the provider.
#[derive(Clone, Debug)]
pub enum Credentials {
    /// Public parts from liqo_tenant; the key stays in the Secret `key_secret` of this cluster.
    Issued { server: String, proxy_url: Option<String>, ca_pem: String, cert_pem: String, key_secret: String },
    /// A kubeconfig the user brings (`kubeconfig_wo`, from the configuration only); its Debug form never shows
    /// the content (it may hold a key or a token).
    Brought(SecretString),
    /// None configured: the identity Liqo minted in its handshake (`liqoctl peer`) is kept as it is.
    Liqo,
}

/// The known inputs of a planned state.
#[derive(Clone, Debug)]
pub struct Peering {
    pub tenant_namespace: String,
    pub provider_cluster_id: String,
    pub provider_tenant_namespace: String,
    pub credentials: Credentials,
    pub resources: Option<BTreeMap<String, String>>,
    pub class: String,
    pub create_virtual_node: bool,
    pub slice_name: String,
    pub wait_for_virtual_node: bool,
}

impl Peering {
    /// `v` is the planned state; `config` supplies the write-only `kubeconfig_wo`, which no state carries.
    pub fn from_value(v: &Value, config: &Value) -> Result<Peering, Diagnostic> {
        let s = |key: Key| known_string(v, key);
        let resources = v.get(attr::resources).string_entries();
        Ok(Peering {
            tenant_namespace: s(attr::tenant_namespace)?,
            provider_cluster_id: s(attr::provider_cluster_id)?,
            provider_tenant_namespace: s(attr::provider_tenant_namespace)?,
            credentials: match config.get(attr::kubeconfig_wo).as_str() {
                Some(kubeconfig) => Credentials::Brought(SecretString::from(kubeconfig)),
                None if v.get(attr::kubeconfig_wo_version).is_null() && ISSUED.iter().all(|a| v.get(*a).is_null()) => {
                    Credentials::Liqo
                }
                None => Credentials::Issued {
                    proxy_url: v.get(attr::proxy_url).as_str().map(str::to_owned),
                    server: s(attr::api_server_url)?,
                    ca_pem: s(attr::cluster_ca_certificate)?,
                    cert_pem: s(attr::client_certificate)?,
                    key_secret: s(attr::client_key_secret)?,
                },
            },
            resources,
            class: s(attr::class)?,
            create_virtual_node: v.get(attr::create_virtual_node).as_bool().unwrap_or(true),
            slice_name: s(attr::resource_slice_name)?,
            wait_for_virtual_node: v.get(attr::wait_for_virtual_node).as_bool().unwrap_or(true),
        })
    }

    pub fn secret_name(&self) -> String {
        identity_secret_name(&self.provider_cluster_id)
    }

    /// The control-plane identity Secret around `kubeconfig`, exactly as Liqo's crd-replicator expects it
    /// (reference §3.10).
    pub fn identity_secret(&self, kubeconfig: &str) -> Secret {
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
    pub fn resource_slice(&self) -> ResourceSlice {
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
    pub fn grants_request(&self) -> bool {
        self.class.is_empty() || self.class == RESOURCE_SLICE_CLASS_DEFAULT
    }

    /// The state after a (possibly partial) apply: planned values with every computed output resolved.
    pub fn state(&self, planned: &Value, accepted: Option<&BTreeMap<String, String>>) -> Value {
        let mut s = planned.clone();
        s.set(
            attr::virtual_node_name,
            if self.create_virtual_node { Value::string(&self.slice_name) } else { Value::Null },
        );
        s.set(attr::accepted_resources, accepted.map(|a| Value::string_map(a.clone())).unwrap_or(Value::Null));
        s
    }
}

/// The Identity that owns a control-plane Secret Liqo made from its authentication handshake, if any.
pub fn owning_identity(secret: &Secret) -> Option<String> {
    let owners = secret.metadata.owner_references.as_ref()?;
    owners
        .iter()
        .find(|o| o.kind == "Identity" && o.api_version.starts_with("authentication.liqo.io/"))
        .map(|o| o.name.clone())
}

pub fn minted_by_liqo(secret: &Secret) -> bool {
    owning_identity(secret).is_some()
}
