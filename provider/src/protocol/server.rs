//! The tfplugin6 `Provider` service: decodes each request with the right schema type, calls the provider's
//! traits, encodes the answer. RPCs this provider does not serve (functions, ephemeral resources, actions,
//! state stores, moves) answer UNIMPLEMENTED; Terraform only calls them when the schema or server capabilities
//! advertise them. A managed type with a list resource also has a resource identity, derived from its state's
//! `id` and sent with every state this layer returns.
use super::{
    ApplyRequest, Ctx, DataSource, IdentitySchema, ListResource, PlanRequest, Provider, Resource, codec, convert, log,
};
use futures::FutureExt;
use liqo_schema::tf::{Diagnostic, Diagnostics, Type, Value};
use magma_protocol::tfplugin6 as pb;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

/// A list resource, with the identity it gives its managed type.
struct RegisteredList {
    imp: Arc<dyn ListResource>,
    /// Type of the list block's `config`.
    config_ty: Type,
    identity: IdentitySchema,
    identity_ty: Type,
}

struct Registered<T: ?Sized> {
    imp: Arc<T>,
    /// The object type of the schema's block: what every value of this type is decoded with.
    ty: Type,
    version: i64,
    /// Top-level attributes marked write-only: present in configuration, null in every state returned.
    write_only: Vec<String>,
}

pub(crate) struct ProviderService {
    provider: Arc<dyn Provider>,
    provider_ty: Type,
    resources: BTreeMap<String, Registered<dyn Resource>>,
    data_sources: BTreeMap<String, Registered<dyn DataSource>>,
    lists: BTreeMap<String, RegisteredList>,
    /// Built once: Terraform asks for the schema in every provider process it starts.
    schema: pb::get_provider_schema::Response,
    metadata: pb::get_metadata::Response,
    /// Token handed to every request's `Ctx`; StopProvider cancels it and installs a fresh one.
    stop: Mutex<CancellationToken>,
}

fn capabilities() -> pb::ServerCapabilities {
    pb::ServerCapabilities {
        plan_destroy: true,
        get_provider_schema_optional: true,
        move_resource_state: false,
        generate_resource_config: true,
    }
}

impl ProviderService {
    pub(crate) fn new(provider: Arc<dyn Provider>) -> ProviderService {
        let provider_schema = provider.provider_schema();
        let mut schema = pb::get_provider_schema::Response {
            provider: Some(convert::schema(&provider_schema)),
            server_capabilities: Some(capabilities()),
            ..Default::default()
        };
        let mut metadata =
            pb::get_metadata::Response { server_capabilities: Some(capabilities()), ..Default::default() };

        let mut resources = BTreeMap::new();
        for r in provider.resources() {
            let s = r.schema();
            let name = r.type_name().to_string();
            schema.resource_schemas.insert(name.clone(), convert::schema(&s));
            metadata.resources.push(pb::get_metadata::ResourceMetadata { type_name: name.clone() });
            let write_only = s.block.attributes.iter().filter(|a| a.write_only).map(|a| a.name.clone()).collect();
            resources.insert(name, Registered { ty: s.block.implied_type(), version: s.version, write_only, imp: r });
        }
        let mut data_sources = BTreeMap::new();
        for d in provider.data_sources() {
            let s = d.schema();
            let name = d.type_name().to_string();
            schema.data_source_schemas.insert(name.clone(), convert::schema(&s));
            metadata.data_sources.push(pb::get_metadata::DataSourceMetadata { type_name: name.clone() });
            data_sources.insert(
                name,
                Registered { ty: s.block.implied_type(), version: s.version, write_only: Vec::new(), imp: d },
            );
        }

        let mut lists = BTreeMap::new();
        for l in provider.list_resources() {
            let s = l.schema();
            let name = l.type_name().to_string();
            schema.list_resource_schemas.insert(name.clone(), convert::schema(&s));
            metadata.list_resources.push(pb::get_metadata::ListResourceMetadata { type_name: name.clone() });
            let identity = l.identity();
            lists.insert(
                name,
                RegisteredList { config_ty: s.block.implied_type(), identity_ty: identity.ty(), identity, imp: l },
            );
        }

        ProviderService {
            provider_ty: provider_schema.block.implied_type(),
            provider,
            resources,
            data_sources,
            lists,
            schema,
            metadata,
            stop: Mutex::new(CancellationToken::new()),
        }
    }

    fn ctx(&self) -> Ctx {
        Ctx { cancel: self.stop.lock().unwrap_or_else(|p| p.into_inner()).clone() }
    }

    /// The deferral to answer instead of calling the provider: the client allows it and the provider block was
    /// configured with values it needs still unknown ([`Provider::config_unknown`]).
    fn deferral(&self, capabilities: Option<&pb::ClientCapabilities>) -> Option<pb::Deferred> {
        let allowed = capabilities.is_some_and(|c| c.deferral_allowed);
        (allowed && self.provider.config_unknown())
            .then_some(pb::Deferred { reason: pb::deferred::Reason::ProviderConfigUnknown as i32 })
    }

    fn resource(&self, type_name: &str) -> Result<&Registered<dyn Resource>, Diagnostics> {
        self.resources.get(type_name).ok_or_else(|| unknown_type("resource", type_name, self.resources.keys()))
    }

    fn data_source(&self, type_name: &str) -> Result<&Registered<dyn DataSource>, Diagnostics> {
        self.data_sources.get(type_name).ok_or_else(|| unknown_type("data source", type_name, self.data_sources.keys()))
    }

    fn list(&self, type_name: &str) -> Result<&RegisteredList, Diagnostics> {
        self.lists.get(type_name).ok_or_else(|| unknown_type("list resource", type_name, self.lists.keys()))
    }

    /// The identity of `state` of a managed type; none for a type without identity, a null state or an `id`
    /// not known yet.
    fn identity_of(&self, type_name: &str, state: &Value) -> Option<pb::ResourceIdentityData> {
        let list = self.lists.get(type_name)?;
        let identity = list.identity.of_id(state.get_named("id").as_str()?);
        if identity.is_null() {
            return None;
        }
        let identity_data = encode(&identity, &list.identity_ty, "identity").ok()?;
        Some(pb::ResourceIdentityData { identity_data: Some(identity_data) })
    }
}

impl<T: ?Sized> Registered<T> {
    /// `v` with every write-only attribute null: Terraform rejects a plan or state that carries one.
    fn without_write_only(&self, mut v: Value) -> Value {
        if matches!(v, Value::Object(_)) {
            for name in &self.write_only {
                v.set_named(name, Value::Null);
            }
        }
        v
    }

    /// Write-only attributes need a client that keeps them out of state; an older one would store them like
    /// any other value, so a configuration that sets one is refused before anything happens.
    fn check_write_only(&self, config: &Value, client_allows: bool, type_name: &str) -> Diagnostics {
        let mut d = Diagnostics::new();
        if client_allows {
            return d;
        }
        for name in self.write_only.iter().filter(|n| !config.get_named(n).is_null()) {
            d.push(
                Diagnostic::error(
                    format!("`{name}` needs a client that supports write-only attributes"),
                    format!(
                        "`{name}` of {type_name} is write-only: its value must never be stored, and this Terraform or \
                         OpenTofu version does not know write-only attributes, so it would keep the value in the \
                         state. Use Terraform 1.11 or OpenTofu 1.11 or later, or remove `{name}`."
                    ),
                )
                .at(liqo_schema::tf::AttributePath::root_named(name)),
            );
        }
        d
    }
}

fn unknown_type<'a>(kind: &str, name: &str, known: impl Iterator<Item = &'a String>) -> Diagnostics {
    let known: Vec<&str> = known.map(String::as_str).collect();
    Diagnostic::error(
        format!("Unknown {kind} type {name:?}"),
        format!(
            "This provider has no {kind} type {name:?}; it serves: {}. Check the type name in the configuration.",
            if known.is_empty() { "none".to_string() } else { known.join(", ") }
        ),
    )
    .into()
}

/// Decodes a request value; an absent or empty DynamicValue is null.
fn decode(dv: Option<&pb::DynamicValue>, ty: &Type, what: &str) -> Result<Value, Diagnostics> {
    let result = match dv {
        Some(dv) if !dv.msgpack.is_empty() => codec::decode(&dv.msgpack, ty),
        Some(dv) if !dv.json.is_empty() => codec::decode_json(&dv.json, ty),
        _ => return Ok(Value::Null),
    };
    result.map_err(|e| {
        let d = Diagnostic::error(
            format!("Invalid {what} received from Terraform"),
            format!("The {what} Terraform sent does not match this provider's schema: {e}. If it comes from state written by another version of this provider, use that version or import the resource again."),
        );
        if e.path.0.is_empty() { d.into() } else { d.at(e.path).into() }
    })
}

fn encode(v: &Value, ty: &Type, what: &str) -> Result<pb::DynamicValue, Diagnostics> {
    match codec::encode(v, ty) {
        Ok(msgpack) => Ok(pb::DynamicValue { msgpack, json: Vec::new() }),
        Err(e) => Err(Diagnostic::error(
            format!("Provider produced an invalid {what}"),
            format!("The {what} does not match the provider's own schema: {e}. This is a bug in the provider; please report it."),
        )
        .into()),
    }
}

/// Runs a provider call, turning a panic into an error diagnostic so Terraform reports it against the
/// resource instead of losing the connection.
async fn guarded<T>(what: &str, fut: impl Future<Output = T>) -> Result<T, Diagnostics> {
    AssertUnwindSafe(fut).catch_unwind().await.map_err(|p| panic_diagnostic(what, &*p))
}

fn guarded_sync<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, Diagnostics> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|p| panic_diagnostic(what, &*p))
}

fn panic_diagnostic(what: &str, payload: &(dyn std::any::Any + Send)) -> Diagnostics {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    log::error("provider panicked", &[("operation", what), ("panic", &msg)]);
    Diagnostic::error(
        format!("Provider crashed while {what}"),
        format!("{msg}. This is a bug in the provider; please report it together with the Terraform log."),
    )
    .into()
}

fn diags(d: &Diagnostics) -> Vec<pb::Diagnostic> {
    convert::diagnostics(d)
}

/// Diagnostics of the provider block. Terraform and OpenTofu point such a diagnostic at the provider block only,
/// never into its nested `kubernetes = { … }` attribute, so the summary names the attribute as well.
fn provider_diags(d: &Diagnostics) -> Vec<pb::Diagnostic> {
    let named = d
        .iter()
        .cloned()
        .map(|mut diag| {
            if let Some(path) = &diag.attribute {
                let name = path.to_string();
                if !diag.summary.contains(&name) {
                    diag.summary = format!("{} (`{name}`)", diag.summary);
                }
            }
            diag
        })
        .collect();
    convert::diagnostics(&Diagnostics(named))
}

#[tonic::async_trait]
impl pb::provider_server::Provider for ProviderService {
    async fn get_metadata(
        &self,
        _: Request<pb::get_metadata::Request>,
    ) -> Result<Response<pb::get_metadata::Response>, Status> {
        Ok(Response::new(self.metadata.clone()))
    }

    async fn get_provider_schema(
        &self,
        _: Request<pb::get_provider_schema::Request>,
    ) -> Result<Response<pb::get_provider_schema::Response>, Status> {
        Ok(Response::new(self.schema.clone()))
    }

    async fn validate_provider_config(
        &self,
        req: Request<pb::validate_provider_config::Request>,
    ) -> Result<Response<pb::validate_provider_config::Response>, Status> {
        let req = req.into_inner();
        let d = decode(req.config.as_ref(), &self.provider_ty, "provider configuration")
            .and_then(|config| {
                guarded_sync("validating the provider configuration", || self.provider.validate_config(&config))
            })
            .unwrap_or_else(|d| d);
        Ok(Response::new(pb::validate_provider_config::Response { diagnostics: provider_diags(&d) }))
    }

    async fn validate_resource_config(
        &self,
        req: Request<pb::validate_resource_config::Request>,
    ) -> Result<Response<pb::validate_resource_config::Response>, Status> {
        let req = req.into_inner();
        let d = self
            .resource(&req.type_name)
            .and_then(|r| {
                let config = decode(req.config.as_ref(), &r.ty, "resource configuration")?;
                let allows = req.client_capabilities.as_ref().is_some_and(|c| c.write_only_attributes_allowed);
                let mut d = r.check_write_only(&config, allows, &req.type_name);
                d.extend(guarded_sync(&format!("validating {}", req.type_name), || r.imp.validate(&config))?);
                Ok(d)
            })
            .unwrap_or_else(|d| d);
        Ok(Response::new(pb::validate_resource_config::Response { diagnostics: diags(&d) }))
    }

    async fn validate_data_resource_config(
        &self,
        req: Request<pb::validate_data_resource_config::Request>,
    ) -> Result<Response<pb::validate_data_resource_config::Response>, Status> {
        let req = req.into_inner();
        let d = self
            .data_source(&req.type_name)
            .and_then(|ds| {
                let config = decode(req.config.as_ref(), &ds.ty, "data source configuration")?;
                guarded_sync(&format!("validating data source {}", req.type_name), || ds.imp.validate(&config))
            })
            .unwrap_or_else(|d| d);
        Ok(Response::new(pb::validate_data_resource_config::Response { diagnostics: diags(&d) }))
    }

    async fn upgrade_resource_state(
        &self,
        req: Request<pb::upgrade_resource_state::Request>,
    ) -> Result<Response<pb::upgrade_resource_state::Response>, Status> {
        let req = req.into_inner();
        let result = (|| {
            let r = self.resource(&req.type_name)?;
            let raw = req.raw_state.unwrap_or_default();
            if raw.json.is_empty() {
                if !raw.flatmap.is_empty() {
                    return Err(Diagnostic::error(
                        format!("Cannot read legacy state of {}", req.type_name),
                        "This state is in the flatmap format of Terraform 0.11 and older, which this provider does not read. Remove the resource from state (`terraform state rm`) and import it again.",
                    )
                    .into());
                }
                return encode(&Value::Null, &r.ty, "upgraded state");
            }
            let stored: serde_json::Value = serde_json::from_slice(&raw.json).map_err(|e| {
                Diagnostics::from(Diagnostic::error(
                    format!("Invalid stored state of {}", req.type_name),
                    format!("The state is not valid JSON ({e}). Restore the state file from a backup."),
                ))
            })?;
            let upgraded = guarded_sync(&format!("upgrading the state of {}", req.type_name), || {
                r.imp.upgrade(req.version, stored)
            })??;
            let value = codec::json_to_value(&upgraded, &r.ty).map_err(|e| {
                Diagnostics::from(Diagnostic::error(
                    format!("Cannot read the stored state of {}", req.type_name),
                    format!(
                        "The state (schema version {}) does not match schema version {}: {e}. Use the provider version that wrote the state, or remove the resource from state and import it again.",
                        req.version, r.version
                    ),
                ))
            })?;
            encode(&value, &r.ty, "upgraded state")
        })();
        let (upgraded_state, d) = match result {
            Ok(dv) => (Some(dv), Diagnostics::new()),
            Err(d) => (None, d),
        };
        Ok(Response::new(pb::upgrade_resource_state::Response { upgraded_state, diagnostics: diags(&d) }))
    }

    async fn get_resource_identity_schemas(
        &self,
        _: Request<pb::get_resource_identity_schemas::Request>,
    ) -> Result<Response<pb::get_resource_identity_schemas::Response>, Status> {
        let identity_schemas = self
            .lists
            .iter()
            .map(|(name, l)| {
                let identity_attributes = l
                    .identity
                    .parts
                    .iter()
                    .map(|(name, description)| pb::resource_identity_schema::IdentityAttribute {
                        name: name.to_string(),
                        r#type: convert::type_json(&Type::String),
                        required_for_import: true,
                        optional_for_import: false,
                        description: description.to_string(),
                    })
                    .collect();
                (name.clone(), pb::ResourceIdentitySchema { version: 0, identity_attributes })
            })
            .collect();
        Ok(Response::new(pb::get_resource_identity_schemas::Response { identity_schemas, diagnostics: Vec::new() }))
    }

    /// Only identity version 0 exists: the stored JSON is read back as it is.
    async fn upgrade_resource_identity(
        &self,
        req: Request<pb::upgrade_resource_identity::Request>,
    ) -> Result<Response<pb::upgrade_resource_identity::Response>, Status> {
        let req = req.into_inner();
        let result = (|| {
            let list = self.list(&req.type_name)?;
            let raw = req.raw_identity.unwrap_or_default();
            let json: serde_json::Value = serde_json::from_slice(&raw.json).map_err(|e| {
                Diagnostics::from(Diagnostic::error(
                    format!("Invalid stored identity of {}", req.type_name),
                    format!("The identity in state is not valid JSON ({e}). Remove the resource from state and import it again."),
                ))
            })?;
            let value = codec::json_to_value(&json, &list.identity_ty).map_err(|e| {
                Diagnostics::from(Diagnostic::error(
                    format!("Cannot read the stored identity of {}", req.type_name),
                    format!("The identity (version {}) does not match identity version 0: {e}. Remove the resource from state and import it again.", req.version),
                ))
            })?;
            encode(&value, &list.identity_ty, "upgraded identity")
        })();
        let (upgraded_identity, d) = match result {
            Ok(dv) => (Some(pb::ResourceIdentityData { identity_data: Some(dv) }), Diagnostics::new()),
            Err(d) => (None, d),
        };
        Ok(Response::new(pb::upgrade_resource_identity::Response { upgraded_identity, diagnostics: diags(&d) }))
    }

    async fn configure_provider(
        &self,
        req: Request<pb::configure_provider::Request>,
    ) -> Result<Response<pb::configure_provider::Response>, Status> {
        let req = req.into_inner();
        log::debug("configuring provider", &[("terraform_version", &req.terraform_version)]);
        let d = match decode(req.config.as_ref(), &self.provider_ty, "provider configuration") {
            Ok(config) => guarded("configuring the provider", self.provider.configure(config, &req.terraform_version))
                .await
                .unwrap_or_else(|d| d),
            Err(d) => d,
        };
        Ok(Response::new(pb::configure_provider::Response { diagnostics: provider_diags(&d) }))
    }

    async fn read_resource(
        &self,
        req: Request<pb::read_resource::Request>,
    ) -> Result<Response<pb::read_resource::Response>, Status> {
        let req = req.into_inner();
        log::debug("ReadResource", &[("type", &req.type_name)]);
        if let Some(deferred) = self.deferral(req.client_capabilities.as_ref()) {
            // Nothing was read: the state stays as Terraform has it.
            return Ok(Response::new(pb::read_resource::Response {
                new_state: req.current_state,
                private: req.private,
                new_identity: req.current_identity,
                deferred: Some(deferred),
                ..Default::default()
            }));
        }
        let ctx = self.ctx();
        let result = async {
            let r = self.resource(&req.type_name)?;
            let state = decode(req.current_state.as_ref(), &r.ty, "state")?;
            let resp = guarded(&format!("reading {}", req.type_name), r.imp.read(&ctx, state, req.private)).await?;
            if resp.diagnostics.has_errors() {
                // Keep what Terraform had: a failed read must not drop the object from state.
                return Ok((req.current_state, resp.private, resp.diagnostics, req.current_identity));
            }
            let mut d = resp.diagnostics;
            let new_identity = self.identity_of(&req.type_name, &resp.new_state);
            match encode(&r.without_write_only(resp.new_state), &r.ty, "state") {
                Ok(dv) => Ok((Some(dv), resp.private, d, new_identity)),
                Err(e) => {
                    d.extend(e);
                    Ok((req.current_state, resp.private, d, None))
                }
            }
        }
        .await;
        let (new_state, private, d, new_identity) = result.unwrap_or_else(|d: Diagnostics| (None, Vec::new(), d, None));
        Ok(Response::new(pb::read_resource::Response {
            new_state,
            private,
            diagnostics: diags(&d),
            new_identity,
            ..Default::default()
        }))
    }

    async fn plan_resource_change(
        &self,
        req: Request<pb::plan_resource_change::Request>,
    ) -> Result<Response<pb::plan_resource_change::Response>, Status> {
        let req = req.into_inner();
        log::debug("PlanResourceChange", &[("type", &req.type_name)]);
        let ctx = self.ctx();
        let result = async {
            let r = self.resource(&req.type_name)?;
            let plan = PlanRequest {
                prior: decode(req.prior_state.as_ref(), &r.ty, "prior state")?,
                proposed: decode(req.proposed_new_state.as_ref(), &r.ty, "proposed new state")?,
                config: decode(req.config.as_ref(), &r.ty, "configuration")?,
                private: req.prior_private,
            };
            // A destroy plan is always "nothing left": answer it here rather than in every resource.
            if plan.proposed.is_null() {
                return Ok(pb::plan_resource_change::Response {
                    planned_state: Some(encode(&Value::Null, &r.ty, "planned state")?),
                    planned_private: plan.private,
                    ..Default::default()
                });
            }
            let resp = guarded(&format!("planning {}", req.type_name), r.imp.plan(&ctx, plan)).await?;
            if resp.diagnostics.has_errors() {
                return Err(resp.diagnostics);
            }
            let planned_identity = self.identity_of(&req.type_name, &resp.planned);
            let planned = encode(&r.without_write_only(resp.planned), &r.ty, "planned state")?;
            Ok(pb::plan_resource_change::Response {
                planned_identity,
                planned_state: Some(planned),
                requires_replace: resp.requires_replace.iter().map(convert::attribute_path).collect(),
                planned_private: resp.private,
                diagnostics: diags(&resp.diagnostics),
                ..Default::default()
            })
        }
        .await;
        Ok(Response::new(
            result.unwrap_or_else(|d| pb::plan_resource_change::Response {
                diagnostics: diags(&d),
                ..Default::default()
            }),
        ))
    }

    async fn apply_resource_change(
        &self,
        req: Request<pb::apply_resource_change::Request>,
    ) -> Result<Response<pb::apply_resource_change::Response>, Status> {
        let req = req.into_inner();
        log::debug("ApplyResourceChange", &[("type", &req.type_name)]);
        let ctx = self.ctx();
        let result = async {
            let r = self.resource(&req.type_name)?;
            let apply = ApplyRequest {
                prior: decode(req.prior_state.as_ref(), &r.ty, "prior state")?,
                planned: decode(req.planned_state.as_ref(), &r.ty, "planned state")?,
                config: decode(req.config.as_ref(), &r.ty, "configuration")?,
                private: req.planned_private,
            };
            let resp = guarded(&format!("applying {}", req.type_name), r.imp.apply(&ctx, apply)).await?;
            // Even a failed apply returns its new state (null, or the partial object) so nothing created
            // is forgotten.
            let mut d = resp.diagnostics;
            let new_identity = self.identity_of(&req.type_name, &resp.new_state);
            let new_state = match encode(&r.without_write_only(resp.new_state), &r.ty, "new state") {
                Ok(dv) => Some(dv),
                Err(e) => {
                    d.extend(e);
                    None
                }
            };
            Ok(pb::apply_resource_change::Response {
                new_state,
                new_identity,
                private: resp.private,
                diagnostics: diags(&d),
                ..Default::default()
            })
        }
        .await;
        Ok(Response::new(result.unwrap_or_else(|d: Diagnostics| pb::apply_resource_change::Response {
            diagnostics: diags(&d),
            ..Default::default()
        })))
    }

    async fn import_resource_state(
        &self,
        req: Request<pb::import_resource_state::Request>,
    ) -> Result<Response<pb::import_resource_state::Response>, Status> {
        let req = req.into_inner();
        log::debug("ImportResourceState", &[("type", &req.type_name), ("id", &req.id)]);
        if let Some(deferred) = self.deferral(req.client_capabilities.as_ref()) {
            return Ok(Response::new(pb::import_resource_state::Response {
                deferred: Some(deferred),
                ..Default::default()
            }));
        }
        let ctx = self.ctx();
        let result = async {
            let r = self.resource(&req.type_name)?;
            // `import { identity = {…} }` (Terraform ≥ 1.12) names the object by identity instead of by ID.
            let id = match req.identity.as_ref().and_then(|i| i.identity_data.as_ref()) {
                Some(data) => {
                    let list = self.list(&req.type_name)?;
                    list.identity.import_id(&decode(Some(data), &list.identity_ty, "import identity")?)?
                }
                None => req.id.clone(),
            };
            let imported = guarded(&format!("importing {}", req.type_name), r.imp.import(&ctx, &id)).await??;
            imported
                .into_iter()
                .map(|i| {
                    Ok(pb::import_resource_state::ImportedResource {
                        type_name: req.type_name.clone(),
                        identity: self.identity_of(&req.type_name, &i.state),
                        state: Some(encode(&r.without_write_only(i.state), &r.ty, "imported state")?),
                        private: i.private,
                    })
                })
                .collect::<Result<Vec<_>, Diagnostics>>()
        }
        .await;
        let (imported_resources, d) = match result {
            Ok(v) => (v, Diagnostics::new()),
            Err(d) => (Vec::new(), d),
        };
        Ok(Response::new(pb::import_resource_state::Response {
            imported_resources,
            diagnostics: diags(&d),
            deferred: None,
        }))
    }

    async fn move_resource_state(
        &self,
        _: Request<pb::move_resource_state::Request>,
    ) -> Result<Response<pb::move_resource_state::Response>, Status> {
        Err(Status::unimplemented("moving state between resource types is not supported"))
    }

    async fn read_data_source(
        &self,
        req: Request<pb::read_data_source::Request>,
    ) -> Result<Response<pb::read_data_source::Response>, Status> {
        let req = req.into_inner();
        log::debug("ReadDataSource", &[("type", &req.type_name)]);
        if let Some(deferred) = self.deferral(req.client_capabilities.as_ref()) {
            // Terraform takes this state as the data source's value until its next round: wholly unknown (a null
            // would make every reference to one of its attributes an error).
            let unknown =
                self.data_source(&req.type_name).and_then(|ds| encode(&Value::Unknown, &ds.ty, "data source state"));
            let (state, d) = match unknown {
                Ok(state) => (Some(state), Diagnostics::new()),
                Err(d) => (None, d),
            };
            return Ok(Response::new(pb::read_data_source::Response {
                state,
                diagnostics: diags(&d),
                deferred: Some(deferred),
            }));
        }
        let ctx = self.ctx();
        let result = async {
            let ds = self.data_source(&req.type_name)?;
            let config = decode(req.config.as_ref(), &ds.ty, "data source configuration")?;
            let (state, d) =
                guarded(&format!("reading data source {}", req.type_name), ds.imp.read(&ctx, config)).await?;
            if d.has_errors() {
                return Err(d);
            }
            Ok((encode(&state, &ds.ty, "data source state")?, d))
        }
        .await;
        let (state, d) = match result {
            Ok((s, d)) => (Some(s), d),
            Err(d) => (None, d),
        };
        Ok(Response::new(pb::read_data_source::Response { state, diagnostics: diags(&d), deferred: None }))
    }

    /// `-generate-config-out` (Terraform ≥ 1.14): the state without its computed-only attributes, then whatever
    /// the resource drops because its configuration must not set it.
    async fn generate_resource_config(
        &self,
        req: Request<pb::generate_resource_config::Request>,
    ) -> Result<Response<pb::generate_resource_config::Response>, Status> {
        let req = req.into_inner();
        let result = (|| {
            let r = self.resource(&req.type_name)?;
            let mut state = decode(req.state.as_ref(), &r.ty, "state")?;
            if let Value::Object(attrs) = &mut state {
                for a in r.imp.schema().block.attributes.iter().filter(|a| a.computed && !a.optional) {
                    attrs.insert(a.name.clone(), Value::Null);
                }
            }
            let config = guarded_sync(&format!("generating configuration for {}", req.type_name), || {
                r.imp.generated_config(state)
            })?;
            encode(&config, &r.ty, "generated configuration")
        })();
        let (config, d) = match result {
            Ok(dv) => (Some(dv), Diagnostics::new()),
            Err(d) => (None, d),
        };
        Ok(Response::new(pb::generate_resource_config::Response { config, diagnostics: diags(&d) }))
    }

    async fn validate_ephemeral_resource_config(
        &self,
        _: Request<pb::validate_ephemeral_resource_config::Request>,
    ) -> Result<Response<pb::validate_ephemeral_resource_config::Response>, Status> {
        Err(Status::unimplemented("this provider has no ephemeral resources"))
    }

    async fn open_ephemeral_resource(
        &self,
        _: Request<pb::open_ephemeral_resource::Request>,
    ) -> Result<Response<pb::open_ephemeral_resource::Response>, Status> {
        Err(Status::unimplemented("this provider has no ephemeral resources"))
    }

    async fn renew_ephemeral_resource(
        &self,
        _: Request<pb::renew_ephemeral_resource::Request>,
    ) -> Result<Response<pb::renew_ephemeral_resource::Response>, Status> {
        Err(Status::unimplemented("this provider has no ephemeral resources"))
    }

    async fn close_ephemeral_resource(
        &self,
        _: Request<pb::close_ephemeral_resource::Request>,
    ) -> Result<Response<pb::close_ephemeral_resource::Response>, Status> {
        Err(Status::unimplemented("this provider has no ephemeral resources"))
    }

    type ListResourceStream = tonic::codegen::BoxStream<pb::list_resource::Event>;

    /// Lists in full before answering: the lists are small (objects per peer), and a failure then ends the
    /// stream with one error event instead of a partial result.
    async fn list_resource(
        &self,
        req: Request<pb::list_resource::Request>,
    ) -> Result<Response<Self::ListResourceStream>, Status> {
        let req = req.into_inner();
        log::debug("ListResource", &[("type", &req.type_name)]);
        let ctx = self.ctx();
        let result = async {
            let list = self.list(&req.type_name)?;
            let r = self.resource(&req.type_name)?;
            let config = decode(req.config.as_ref(), &list.config_ty, "list configuration")?;
            let found = guarded(
                &format!("listing {}", req.type_name),
                list.imp.list(&ctx, config, req.include_resource_object),
            )
            .await??;
            let limit = usize::try_from(req.limit).unwrap_or(0);
            found
                .into_iter()
                .take(if limit == 0 { usize::MAX } else { limit })
                .map(|item| {
                    if !item.diagnostics.is_empty() {
                        return Ok(pb::list_resource::Event {
                            diagnostic: diags(&item.diagnostics),
                            ..Default::default()
                        });
                    }
                    let identity = list.identity.of_id(&item.id);
                    if identity.is_null() {
                        return Err(Diagnostic::error(
                            format!("Provider listed {} {:?} with an invalid ID", req.type_name, item.id),
                            "This is a bug in the provider; please report it.",
                        )
                        .into());
                    }
                    let resource_object = if req.include_resource_object && !item.state.is_null() {
                        Some(encode(&r.without_write_only(item.state.clone()), &r.ty, "listed object")?)
                    } else {
                        None
                    };
                    Ok(pb::list_resource::Event {
                        identity: Some(pb::ResourceIdentityData {
                            identity_data: Some(encode(&identity, &list.identity_ty, "identity")?),
                        }),
                        display_name: item.display_name,
                        resource_object,
                        diagnostic: Vec::new(),
                    })
                })
                .collect::<Result<Vec<_>, Diagnostics>>()
        }
        .await;
        let events =
            result.unwrap_or_else(|d| vec![pb::list_resource::Event { diagnostic: diags(&d), ..Default::default() }]);
        Ok(Response::new(Box::pin(tokio_stream::iter(events.into_iter().map(Ok)))))
    }

    async fn validate_list_resource_config(
        &self,
        req: Request<pb::validate_list_resource_config::Request>,
    ) -> Result<Response<pb::validate_list_resource_config::Response>, Status> {
        let req = req.into_inner();
        let d = self
            .list(&req.type_name)
            .and_then(|l| {
                let config = decode(req.config.as_ref(), &l.config_ty, "list configuration")?;
                guarded_sync(&format!("validating list {}", req.type_name), || l.imp.validate(&config))
            })
            .unwrap_or_else(|d| d);
        Ok(Response::new(pb::validate_list_resource_config::Response { diagnostics: diags(&d) }))
    }

    async fn get_functions(
        &self,
        _: Request<pb::get_functions::Request>,
    ) -> Result<Response<pb::get_functions::Response>, Status> {
        Ok(Response::new(pb::get_functions::Response { functions: HashMap::new(), diagnostics: Vec::new() }))
    }

    async fn call_function(
        &self,
        _: Request<pb::call_function::Request>,
    ) -> Result<Response<pb::call_function::Response>, Status> {
        Err(Status::unimplemented("this provider has no functions"))
    }

    async fn validate_state_store_config(
        &self,
        _: Request<pb::validate_state_store::Request>,
    ) -> Result<Response<pb::validate_state_store::Response>, Status> {
        Err(Status::unimplemented("this provider has no state stores"))
    }

    async fn configure_state_store(
        &self,
        _: Request<pb::configure_state_store::Request>,
    ) -> Result<Response<pb::configure_state_store::Response>, Status> {
        Err(Status::unimplemented("this provider has no state stores"))
    }

    type ReadStateBytesStream = tonic::codegen::BoxStream<pb::read_state_bytes::Response>;

    async fn read_state_bytes(
        &self,
        _: Request<pb::read_state_bytes::Request>,
    ) -> Result<Response<Self::ReadStateBytesStream>, Status> {
        Err(Status::unimplemented("this provider has no state stores"))
    }

    async fn write_state_bytes(
        &self,
        _: Request<tonic::Streaming<pb::write_state_bytes::RequestChunk>>,
    ) -> Result<Response<pb::write_state_bytes::Response>, Status> {
        Err(Status::unimplemented("this provider has no state stores"))
    }

    async fn lock_state(
        &self,
        _: Request<pb::lock_state::Request>,
    ) -> Result<Response<pb::lock_state::Response>, Status> {
        Err(Status::unimplemented("this provider has no state stores"))
    }

    async fn unlock_state(
        &self,
        _: Request<pb::unlock_state::Request>,
    ) -> Result<Response<pb::unlock_state::Response>, Status> {
        Err(Status::unimplemented("this provider has no state stores"))
    }

    async fn get_states(
        &self,
        _: Request<pb::get_states::Request>,
    ) -> Result<Response<pb::get_states::Response>, Status> {
        Err(Status::unimplemented("this provider has no state stores"))
    }

    async fn delete_state(
        &self,
        _: Request<pb::delete_state::Request>,
    ) -> Result<Response<pb::delete_state::Response>, Status> {
        Err(Status::unimplemented("this provider has no state stores"))
    }

    async fn plan_action(
        &self,
        _: Request<pb::plan_action::Request>,
    ) -> Result<Response<pb::plan_action::Response>, Status> {
        Err(Status::unimplemented("this provider has no actions"))
    }

    type InvokeActionStream = tonic::codegen::BoxStream<pb::invoke_action::Event>;

    async fn invoke_action(
        &self,
        _: Request<pb::invoke_action::Request>,
    ) -> Result<Response<Self::InvokeActionStream>, Status> {
        Err(Status::unimplemented("this provider has no actions"))
    }

    async fn validate_action_config(
        &self,
        _: Request<pb::validate_action_config::Request>,
    ) -> Result<Response<pb::validate_action_config::Response>, Status> {
        Err(Status::unimplemented("this provider has no actions"))
    }

    async fn stop_provider(
        &self,
        _: Request<pb::stop_provider::Request>,
    ) -> Result<Response<pb::stop_provider::Response>, Status> {
        // Cancel what is in flight (long waits select on their Ctx) and keep serving: Terraform still reads
        // the responses of the interrupted operations and may send more requests.
        let old = std::mem::take(&mut *self.stop.lock().unwrap_or_else(|p| p.into_inner()));
        old.cancel();
        log::info("StopProvider: cancelled in-flight operations", &[]);
        Ok(Response::new(pb::stop_provider::Response { error: String::new() }))
    }
}

#[cfg(test)]
mod tests;
