//! The objects `liqo_peer` owns: the control-plane identity Secret and the ResourceSlice built from the planned
//! peering, the state an apply records, and whose the identity Secret is.
use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::ObjectMeta;
use liqo_schema::liqo::{RESOURCE_SLICE_CLASS_DEFAULT, ResourceSlice, ResourceSliceSpec, labels};
use liqo_schema::tf::{Diagnostic, Value};
use secrecy::SecretString;

use super::schema::{Flow, attr};
use crate::attributes::Key;
use crate::resources::lifecycle::known_string;

/// Name of the control-plane identity Secret for `provider` (the name Liqo's Identity controller would use).
pub fn identity_secret_name(provider: &str) -> String {
    format!("kubeconfig-controlplane-{provider}")
}

/// `virtual_node_name`, the same rule at plan, apply and read: Liqo names the virtual node it makes for a slice
/// after the slice, and makes none when `create_virtual_node` is false.
pub fn virtual_node_name<T>(create_virtual_node: bool, slice_name: T) -> Option<T> {
    create_virtual_node.then_some(slice_name)
}

/// How this cluster's Liqo authenticates to the provider ([`Flow`]), with what it needs.
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

/// The peering a plan asks for (every value known at apply time).
impl attr::Peer {
    /// The credentials the configuration names; `config` supplies the write-only `kubeconfig_wo`, which no plan
    /// carries.
    pub fn credentials(&self, config: &Value) -> Result<Credentials, Diagnostic> {
        // Validation requires the four together, and apply sees every planned value known: a miss is a bug.
        let known = |key: Key, value: &Option<String>| {
            value.clone().ok_or_else(|| known_string(&Value::Null, key).unwrap_err())
        };
        Ok(match Flow::of(config) {
            Flow::Brought => Credentials::Brought(SecretString::from(known_string(config, attr::kubeconfig_wo)?)),
            Flow::Minted => Credentials::Liqo,
            Flow::Issued => Credentials::Issued {
                proxy_url: self.proxy_url.clone(),
                server: known(attr::api_server_url, &self.api_server_url)?,
                ca_pem: known(attr::cluster_ca_certificate, &self.cluster_ca_certificate)?,
                cert_pem: known(attr::client_certificate, &self.client_certificate)?,
                key_secret: known(attr::client_key_secret, &self.client_key_secret)?,
            },
        })
    }

    /// The provider's cluster ID, as planned (known).
    pub fn provider(&self) -> &str {
        self.provider_cluster_id.as_deref().unwrap_or_default()
    }

    pub fn secret_name(&self) -> String {
        identity_secret_name(self.provider())
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
                    (labels::REMOTE_CLUSTER_ID.to_string(), self.provider().to_string()),
                ])),
                annotations: Some(BTreeMap::from([(
                    labels::REMOTE_TENANT_NAMESPACE.to_string(),
                    self.provider_tenant_namespace.clone().unwrap_or_default(),
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
            provider_cluster_id: self.provider_cluster_id.clone(),
            class: self.class.clone(),
            resources: self
                .resources
                .as_ref()
                .map(|r| r.iter().map(|(k, q)| (k.clone(), Quantity(q.clone()))).collect()),
            ..Default::default()
        };
        let mut rs = ResourceSlice::new(&self.resource_slice_name, spec);
        rs.metadata.namespace = Some(self.tenant_namespace.clone());
        rs.metadata.labels = Some(BTreeMap::from([
            (labels::REMOTE_CLUSTER_ID.to_string(), self.provider().to_string()),
            (labels::REMOTE_ID.to_string(), self.provider().to_string()),
            (labels::REPLICATION.to_string(), labels::TRUE.to_string()),
        ]));
        let create_virtual_node = self.create_virtual_node == Some(true);
        rs.metadata.annotations =
            Some(BTreeMap::from([(labels::CREATE_VIRTUAL_NODE.to_string(), create_virtual_node.to_string())]));
        rs
    }

    /// Liqo's built-in class grants exactly what is requested, so a wait can tell the new grant from the old.
    pub fn grants_request(&self) -> bool {
        self.class.as_deref().is_none_or(|class| class.is_empty() || class == RESOURCE_SLICE_CLASS_DEFAULT)
    }

    /// The state after a (possibly partial) apply: planned values with every computed output resolved.
    pub fn state(&self, accepted: Option<&BTreeMap<String, String>>) -> Value {
        let create_virtual_node = self.create_virtual_node == Some(true);
        attr::Peer {
            virtual_node_name: virtual_node_name(create_virtual_node, self.resource_slice_name.clone()),
            accepted_resources: accepted.cloned(),
            ..self.clone()
        }
        .value()
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
