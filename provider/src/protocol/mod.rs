//! The tfplugin6 protocol layer: go-plugin handshake, mTLS, the gRPC service, cty value codec and schema
//! conversion. It knows nothing about Liqo; the provider implements the traits below and the layer does the
//! rest. Nothing here talks to Kubernetes.
//!
//! [`serve`] runs a provider as a Terraform/OpenTofu plugin ([`Mode::Plugin`]) or standalone for
//! `TF_REATTACH_PROVIDERS` ([`Mode::Debug`]). Modules: `transport` (go-plugin handshake, listener, debug
//! mode), `tls` (automatic mTLS), `server` (the tfplugin6 RPCs), `controller` (go-plugin's Shutdown),
//! [`codec`] (cty msgpack/JSON values), `convert` (schemas and diagnostics), [`log`] (hclog lines on stderr).
use async_trait::async_trait;
use liqo_schema::tf::{AttributePath, Diagnostic, Diagnostics, Schema, Type, Value};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub mod codec;
mod controller;
mod convert;
pub mod log;
mod server;
mod tls;
mod transport;

pub use transport::{Mode, ServeError, serve};

/// Per-request context. `cancel` fires when Terraform sends StopProvider (Ctrl-C): long waits must select on it
/// and return promptly with an error diagnostic, while the gRPC server keeps serving.
#[derive(Clone, Debug)]
pub struct Ctx {
    pub cancel: CancellationToken,
}

/// The provider as the protocol layer sees it.
#[async_trait]
pub trait Provider: Send + Sync + 'static {
    /// Schema of the `provider "liqo" { … }` block.
    fn provider_schema(&self) -> Schema;
    fn resources(&self) -> Vec<Arc<dyn Resource>>;
    fn data_sources(&self) -> Vec<Arc<dyn DataSource>>;
    /// List resources (`list` blocks of `terraform query`, Terraform ≥ 1.14), one per managed type at most. Each
    /// also gives its managed type a resource identity, which list results and `import { identity = … }` carry.
    fn list_resources(&self) -> Vec<Arc<dyn ListResource>> {
        Vec::new()
    }
    /// Static checks of the provider block (values may be unknown). Must not call any API.
    fn validate_config(&self, config: &Value) -> Diagnostics;
    /// ConfigureProvider. Must not call any API either: clients connect lazily on first use.
    async fn configure(&self, config: Value, terraform_version: &str) -> Diagnostics;
    /// Whether the last ConfigureProvider left values the provider needs to reach its API unknown (they come from
    /// resources of the same run). A client that allows deferral (HCP Terraform Stacks, Terraform with
    /// `-allow-deferral`) then gets ReadResource, ReadDataSource and ImportResourceState answered deferred
    /// (`PROVIDER_CONFIG_UNKNOWN`) instead of an error; plans need no API and are answered as usual.
    fn config_unknown(&self) -> bool {
        false
    }
}

pub struct PlanRequest {
    /// Null when the resource is being created.
    pub prior: Value,
    /// Never null: destroy plans are answered by the protocol layer without calling the resource.
    pub proposed: Value,
    pub config: Value,
    pub private: Vec<u8>,
}

pub struct PlanResponse {
    pub planned: Value,
    pub requires_replace: Vec<AttributePath>,
    pub private: Vec<u8>,
    pub diagnostics: Diagnostics,
}

pub struct ApplyRequest {
    /// Null on create.
    pub prior: Value,
    /// Null on destroy.
    pub planned: Value,
    pub config: Value,
    pub private: Vec<u8>,
}

pub struct ApplyResponse {
    /// Null after a destroy. On a failed create, the partial state (if any object was created) so nothing is
    /// orphaned; Null otherwise.
    pub new_state: Value,
    pub private: Vec<u8>,
    pub diagnostics: Diagnostics,
}

pub struct ReadResponse {
    /// Null when the object is gone (Terraform then plans to recreate it).
    pub new_state: Value,
    pub private: Vec<u8>,
    pub diagnostics: Diagnostics,
}

pub struct ImportedResource {
    pub state: Value,
    pub private: Vec<u8>,
}

/// A managed resource type (`liqo_generate`, `liqo_gateway`, …).
#[async_trait]
pub trait Resource: Send + Sync {
    fn type_name(&self) -> &'static str;
    fn schema(&self) -> Schema;
    /// Static checks of the resource block (values may be unknown). Must not call any API.
    fn validate(&self, _config: &Value) -> Diagnostics {
        Diagnostics::new()
    }
    async fn plan(&self, ctx: &Ctx, req: PlanRequest) -> PlanResponse;
    async fn apply(&self, ctx: &Ctx, req: ApplyRequest) -> ApplyResponse;
    async fn read(&self, ctx: &Ctx, state: Value, private: Vec<u8>) -> ReadResponse;
    /// `terraform import` / `import {}`: returns the state for the documented import ID. The protocol layer
    /// follows up with ReadResource as Terraform does.
    async fn import(&self, ctx: &Ctx, id: &str) -> Result<Vec<ImportedResource>, Diagnostics>;
    /// The configuration `-generate-config-out` writes for an imported object, from its state with the
    /// computed-only attributes already null. Override to also null what a configuration must not set.
    fn generated_config(&self, config: Value) -> Value {
        config
    }
    /// Upgrades stored state JSON written with schema `version` to the current schema (UpgradeResourceState;
    /// this layer has already decoded the JSON and re-encodes the result).
    fn upgrade(&self, version: i64, state: serde_json::Value) -> Result<serde_json::Value, Diagnostics>;
}

/// The resource identity of a managed type: named string parts whose values, joined with `/` in this order,
/// are the type's import ID. Terraform keeps it in state and in `import { identity = {…} }` blocks; this layer
/// derives it from the state's `id` and turns it back into an import ID, so resources need not know of it.
pub struct IdentitySchema {
    /// (name, description) of each part, in import-ID order.
    pub parts: Vec<(&'static str, &'static str)>,
}

impl IdentitySchema {
    pub fn ty(&self) -> Type {
        Type::object(self.parts.iter().map(|(name, _)| (*name, Type::String)))
    }

    /// The identity of an object whose import ID (`id` attribute) is `id`; null when `id` does not have one
    /// part per identity attribute (unknown yet, or not this type's form).
    pub fn of_id(&self, id: &str) -> Value {
        let parts: Vec<&str> = id.split('/').collect();
        if parts.len() != self.parts.len() || parts.iter().any(|p| p.is_empty()) {
            return Value::Null;
        }
        Value::object(self.parts.iter().zip(parts).map(|((name, _), v)| (*name, Value::string(v))))
    }

    /// The import ID an identity names.
    pub fn import_id(&self, identity: &Value) -> Result<String, Diagnostics> {
        self.parts
            .iter()
            .map(|(name, _)| {
                identity
                    .get_named(name)
                    .as_str()
                    .filter(|v| !v.is_empty() && !v.contains('/'))
                    .map(str::to_string)
                    .ok_or_else(|| {
                        Diagnostic::error(
                            format!("Invalid identity: `{name}` is missing"),
                            format!(
                                "An import identity of this type sets {}, each a non-empty string without `/`.",
                                self.parts.iter().map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                            ),
                        )
                        .into()
                    })
            })
            .collect::<Result<Vec<_>, Diagnostics>>()
            .map(|parts| parts.join("/"))
    }
}

/// One object a list resource found.
pub struct Listed {
    /// What `terraform query` prints for it.
    pub display_name: String,
    /// The object's import ID (its identity is derived from it).
    pub id: String,
    /// The full resource state, as import and read would make it; Terraform writes configuration from it.
    pub state: Value,
    /// Warnings about the object. An object with any is shown only as these warnings, without identity, so
    /// Terraform neither lists nor generates it.
    pub diagnostics: Diagnostics,
}

/// A list resource: finds the objects of one managed type that exist in the cluster.
#[async_trait]
pub trait ListResource: Send + Sync {
    /// The managed resource type it lists (Terraform requires the same name).
    fn type_name(&self) -> &'static str;
    /// Schema of the list block's `config { … }`.
    fn schema(&self) -> Schema;
    fn identity(&self) -> IdentitySchema;
    /// Static checks of `config` (values may be unknown). Must not call any API.
    fn validate(&self, _config: &Value) -> Diagnostics {
        Diagnostics::new()
    }
    /// What exists now; `include_state` asks for each object's full state (config generation needs it).
    async fn list(&self, ctx: &Ctx, config: Value, include_state: bool) -> Result<Vec<Listed>, Diagnostics>;
}

/// A data source type (`liqo_cluster`, `liqo_peering`).
#[async_trait]
pub trait DataSource: Send + Sync {
    fn type_name(&self) -> &'static str;
    fn schema(&self) -> Schema;
    fn validate(&self, _config: &Value) -> Diagnostics {
        Diagnostics::new()
    }
    /// Returns the new state (config with computed attributes filled in).
    async fn read(&self, ctx: &Ctx, config: Value) -> (Value, Diagnostics);
}
