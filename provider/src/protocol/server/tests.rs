use super::*;
use crate::protocol::{ApplyResponse, ImportedResource, Listed, PlanResponse, ReadResponse};
use async_trait::async_trait;
use liqo_schema::tf::{Attribute, AttributePath, Block, Nesting, Schema};
use pb::provider_server::Provider as _;
use std::time::Duration;

/// `slow` waits for StopProvider on apply; `boom` panics on plan.
struct Thing(&'static str);

fn thing_schema() -> Schema {
    Schema {
        version: 1,
        block: Block::new(
            "t",
            vec![
                Attribute::computed("id", Type::String),
                Attribute::required("name", Type::String),
                Attribute::nested("server", Nesting::Single, vec![Attribute::optional("port", Type::Number)])
                    .with_optional(),
                Attribute::optional("secret", Type::String).sensitive().write_only(),
            ],
        ),
    }
}

#[async_trait]
impl Resource for Thing {
    fn type_name(&self) -> &'static str {
        self.0
    }
    fn schema(&self) -> Schema {
        thing_schema()
    }
    async fn plan(&self, _: &Ctx, req: PlanRequest) -> PlanResponse {
        if self.0 == "boom" {
            panic!("kaboom");
        }
        let mut planned = req.proposed.clone();
        if !planned.is_null() && req.prior.is_null() {
            planned.set_named("id", Value::Unknown);
        }
        PlanResponse {
            planned,
            requires_replace: vec![AttributePath::root_named("name")],
            private: b"p".to_vec(),
            diagnostics: Diagnostics::new(),
        }
    }
    async fn apply(&self, ctx: &Ctx, req: ApplyRequest) -> ApplyResponse {
        if self.0 == "slow" {
            ctx.cancel.cancelled().await;
            return ApplyResponse {
                new_state: Value::Null,
                private: Vec::new(),
                diagnostics: Diagnostic::error("Interrupted", "stopped").into(),
            };
        }
        let mut s = req.planned;
        s.set_named("id", Value::string("x-1"));
        ApplyResponse { new_state: s, private: req.private, diagnostics: Diagnostics::new() }
    }
    async fn read(&self, _: &Ctx, state: Value, private: Vec<u8>) -> ReadResponse {
        ReadResponse { new_state: state, private, diagnostics: Diagnostics::new() }
    }
    async fn import(&self, _: &Ctx, id: &str) -> Result<Vec<ImportedResource>, Diagnostics> {
        Ok(vec![ImportedResource { state: Value::object([("id", Value::string(id))]), private: Vec::new() }])
    }
    fn upgrade(&self, version: i64, state: serde_json::Value) -> Result<serde_json::Value, Diagnostics> {
        if version == thing_schema().version {
            Ok(state)
        } else {
            Err(Diagnostic::error(format!("Cannot upgrade test_thing state from schema version {version}"), "").into())
        }
    }
}

/// A data source that, like the provider's, needs the cluster: read, it fails.
struct Fact;

#[async_trait]
impl DataSource for Fact {
    fn type_name(&self) -> &'static str {
        "test_fact"
    }
    fn schema(&self) -> Schema {
        Schema { version: 0, block: Block::new("fact", vec![Attribute::computed("value", Type::String)]) }
    }
    async fn read(&self, _: &Ctx, _: Value) -> (Value, Diagnostics) {
        (Value::Null, Diagnostic::error("No cluster", "reading needs the cluster's API").into())
    }
}

/// Lists two test_things (`ns/a`, `ns/b`) and one the resource would refuse (`ns/bad`); `name` filters.
struct ThingList;

#[async_trait]
impl ListResource for ThingList {
    fn type_name(&self) -> &'static str {
        "test_thing"
    }
    fn schema(&self) -> Schema {
        Schema { version: 0, block: Block::new("l", vec![Attribute::optional("name", Type::String)]) }
    }
    fn identity(&self) -> IdentitySchema {
        IdentitySchema { parts: vec![("namespace", "n"), ("name", "m")] }
    }
    async fn list(&self, _: &Ctx, config: Value, include_state: bool) -> Result<Vec<Listed>, Diagnostics> {
        let wanted = config.get_named("name").as_str().map(str::to_string);
        Ok(["a", "b", "bad"]
            .into_iter()
            .filter(|n| wanted.as_deref().is_none_or(|w| w == *n))
            .map(|n| Listed {
                display_name: format!("thing {n}"),
                id: format!("ns/{n}"),
                state: if include_state {
                    Value::object([("id", Value::string(format!("ns/{n}"))), ("name", Value::string(n))])
                } else {
                    Value::Null
                },
                diagnostics: if n == "bad" {
                    Diagnostic::warning("ns/bad is not listed", "refused").into()
                } else {
                    Diagnostics::new()
                },
            })
            .collect())
    }
}

/// `unknown`: its `endpoint` was unknown at the last ConfigureProvider.
#[derive(Default)]
struct TestProvider {
    unknown: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl Provider for TestProvider {
    fn provider_schema(&self) -> Schema {
        Schema { version: 0, block: Block::new("p", vec![Attribute::optional("endpoint", Type::String)]) }
    }
    fn resources(&self) -> Vec<Arc<dyn Resource>> {
        vec![Arc::new(Thing("test_thing")), Arc::new(Thing("slow")), Arc::new(Thing("boom"))]
    }
    fn data_sources(&self) -> Vec<Arc<dyn DataSource>> {
        vec![Arc::new(Fact)]
    }
    fn list_resources(&self) -> Vec<Arc<dyn ListResource>> {
        vec![Arc::new(ThingList)]
    }
    fn validate_config(&self, config: &Value) -> Diagnostics {
        match config.get_named("endpoint").as_str() {
            Some("bad") => Diagnostic::attr_error(liqo_schema::tf::Key::new("endpoint"), "Bad endpoint", "no").into(),
            _ => Diagnostics::new(),
        }
    }
    async fn configure(&self, config: Value, _: &str) -> Diagnostics {
        self.unknown.store(config.get_named("endpoint").is_unknown(), std::sync::atomic::Ordering::SeqCst);
        Diagnostics::new()
    }
    fn config_unknown(&self) -> bool {
        self.unknown.load(std::sync::atomic::Ordering::SeqCst)
    }
}

fn service() -> Arc<ProviderService> {
    Arc::new(ProviderService::new(Arc::new(TestProvider::default())))
}

fn dv(v: &Value, ty: &Type) -> Option<pb::DynamicValue> {
    Some(pb::DynamicValue { msgpack: codec::encode(v, ty).unwrap(), json: Vec::new() })
}

fn thing_ty() -> Type {
    thing_schema().block.implied_type()
}

#[tokio::test]
async fn schema_and_metadata_list_every_type() {
    let s = service();
    let schema = s.get_provider_schema(Request::new(Default::default())).await.unwrap().into_inner();
    assert_eq!(schema.resource_schemas.len(), 3);
    assert!(schema.server_capabilities.unwrap().get_provider_schema_optional);
    let meta = s.get_metadata(Request::new(Default::default())).await.unwrap().into_inner();
    assert!(meta.server_capabilities.unwrap().plan_destroy);
    assert_eq!(meta.resources.len(), 3);
}

#[tokio::test]
async fn plan_create_marks_computed_unknown_and_requires_replace() {
    let s = service();
    let ty = thing_ty();
    let config =
        Value::object([("name", Value::string("a")), ("server", Value::object([("port", Value::Number(1.0))]))]);
    let resp = s
        .plan_resource_change(Request::new(pb::plan_resource_change::Request {
            type_name: "test_thing".into(),
            prior_state: dv(&Value::Null, &ty),
            proposed_new_state: dv(&config, &ty),
            config: dv(&config, &ty),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(resp.diagnostics.is_empty(), "{:?}", resp.diagnostics);
    let planned = codec::decode(&resp.planned_state.unwrap().msgpack, &ty).unwrap();
    assert!(planned.get_named("id").is_unknown());
    assert_eq!(planned.get_named("server").get_named("port"), &Value::Number(1.0));
    assert_eq!(resp.requires_replace.len(), 1);
    assert_eq!(resp.planned_private, b"p");
}

/// A write-only value reaches the resource in the configuration and never comes back in a planned, applied, read
/// or imported state; a client that does not announce write-only support cannot set one at all.
#[tokio::test]
async fn write_only_attributes_never_come_back_and_need_a_capable_client() {
    let s = service();
    let ty = thing_ty();
    let config = Value::object([("name", Value::string("a")), ("secret", Value::string("hunter2"))]);
    let plan = s
        .plan_resource_change(Request::new(pb::plan_resource_change::Request {
            type_name: "test_thing".into(),
            prior_state: dv(&Value::Null, &ty),
            proposed_new_state: dv(&config, &ty),
            config: dv(&config, &ty),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    let planned = plan.planned_state.unwrap();
    assert!(codec::decode(&planned.msgpack, &ty).unwrap().get_named("secret").is_null());
    let mut with_secret = config.clone();
    with_secret.set_named("id", Value::Unknown);
    let applied = s
        .apply_resource_change(Request::new(pb::apply_resource_change::Request {
            type_name: "test_thing".into(),
            prior_state: dv(&Value::Null, &ty),
            // What a resource that copies its input would hand back.
            planned_state: dv(&with_secret, &ty),
            config: dv(&config, &ty),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    let new_state = codec::decode(&applied.new_state.unwrap().msgpack, &ty).unwrap();
    assert_eq!(new_state.get_named("id").as_str(), Some("x-1"));
    assert!(new_state.get_named("secret").is_null());
    let read = s
        .read_resource(Request::new(pb::read_resource::Request {
            type_name: "test_thing".into(),
            current_state: dv(&with_secret, &ty),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(codec::decode(&read.new_state.unwrap().msgpack, &ty).unwrap().get_named("secret").is_null());

    let validate = |allowed: Option<bool>| {
        let s = s.clone();
        let config = dv(&config, &ty);
        async move {
            s.validate_resource_config(Request::new(pb::validate_resource_config::Request {
                type_name: "test_thing".into(),
                config,
                client_capabilities: allowed.map(|write_only_attributes_allowed| pb::ClientCapabilities {
                    write_only_attributes_allowed,
                    ..Default::default()
                }),
            }))
            .await
            .unwrap()
            .into_inner()
            .diagnostics
        }
    };
    assert!(validate(Some(true)).await.is_empty());
    for old_client in [None, Some(false)] {
        let d = validate(old_client).await;
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].summary.contains("`secret`") && d[0].detail.contains("Terraform 1.11"), "{d:?}");
    }
}

/// A provider block whose values are unknown (its cluster is made in the same run) defers what needs its API —
/// reads, imports, data sources — when the client allows deferral, and only then; plans are answered as usual.
#[tokio::test]
async fn reads_are_deferred_while_the_provider_config_is_unknown_and_the_client_allows_it() {
    let s = service();
    let provider_ty = Type::object([("endpoint", Type::String)]);
    let configure = |endpoint: Value| {
        let s = s.clone();
        let config = dv(&Value::object([("endpoint", endpoint)]), &provider_ty);
        async move {
            s.configure_provider(Request::new(pb::configure_provider::Request { config, ..Default::default() })).await
        }
    };
    let ty = thing_ty();
    let state = Value::object([("name", Value::string("a")), ("id", Value::string("x-1"))]);
    let caps = |allowed: bool| Some(pb::ClientCapabilities { deferral_allowed: allowed, ..Default::default() });
    let unknown_config = pb::Deferred { reason: pb::deferred::Reason::ProviderConfigUnknown as i32 };

    for (endpoint, allowed, deferred) in
        [(Value::Unknown, true, true), (Value::Unknown, false, false), (Value::string("https://x"), true, false)]
    {
        configure(endpoint.clone()).await.unwrap();
        let case = format!("endpoint {endpoint:?}, deferral allowed: {allowed}");
        let want = deferred.then_some(unknown_config);

        let read = s
            .read_resource(Request::new(pb::read_resource::Request {
                type_name: "test_thing".into(),
                current_state: dv(&state, &ty),
                client_capabilities: caps(allowed),
                ..Default::default()
            }))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(read.deferred, want, "read: {case}");
        assert_eq!(read.new_state.unwrap().msgpack, dv(&state, &ty).unwrap().msgpack, "read keeps the state: {case}");

        let import = s
            .import_resource_state(Request::new(pb::import_resource_state::Request {
                type_name: "test_thing".into(),
                id: "x-1".into(),
                client_capabilities: caps(allowed),
                ..Default::default()
            }))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(import.deferred, want, "import: {case}");
        assert_eq!(import.imported_resources.len(), if deferred { 0 } else { 1 }, "import: {case}");

        // Called, the data source fails (it needs the cluster); deferred, its value is wholly unknown until the
        // client's next round.
        let fact_ty = Type::object([("value", Type::String)]);
        let data = s
            .read_data_source(Request::new(pb::read_data_source::Request {
                type_name: "test_fact".into(),
                config: dv(&Value::object([("value", Value::Null)]), &fact_ty),
                client_capabilities: caps(allowed),
                ..Default::default()
            }))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(data.deferred, want, "data source: {case}");
        assert_eq!(data.diagnostics.is_empty(), deferred, "data source: {case}: {:?}", data.diagnostics);
        if deferred {
            assert_eq!(codec::decode(&data.state.unwrap().msgpack, &fact_ty).unwrap(), Value::Unknown, "{case}");
        }

        let config = Value::object([("name", Value::string("a"))]);
        let plan = s
            .plan_resource_change(Request::new(pb::plan_resource_change::Request {
                type_name: "test_thing".into(),
                prior_state: dv(&Value::Null, &ty),
                proposed_new_state: dv(&config, &ty),
                config: dv(&config, &ty),
                client_capabilities: caps(allowed),
                ..Default::default()
            }))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(plan.deferred, None, "plans need no API: {case}");
        assert!(plan.planned_state.is_some(), "plan: {case}");
    }
}

#[tokio::test]
async fn unknown_types_and_bad_values_are_diagnostics() {
    let s = service();
    let resp = s
        .read_resource(Request::new(pb::read_resource::Request { type_name: "nope".into(), ..Default::default() }))
        .await
        .unwrap()
        .into_inner();
    assert!(resp.diagnostics[0].summary.contains("Unknown resource type \"nope\""), "{:?}", resp.diagnostics);
    assert!(resp.diagnostics[0].detail.contains("test_thing"));

    let resp = s
        .validate_resource_config(Request::new(pb::validate_resource_config::Request {
            type_name: "test_thing".into(),
            // {"name": 5}: a number where a string belongs.
            config: Some(pb::DynamicValue { msgpack: vec![0x81, 0xa4, b'n', b'a', b'm', b'e', 0x05], json: vec![] }),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    let d = &resp.diagnostics[0];
    assert!(d.detail.contains("name: string is required"), "{d:?}");
    assert!(d.attribute.is_some());

    let resp = s
        .validate_provider_config(Request::new(pb::validate_provider_config::Request {
            config: dv(
                &Value::object([("endpoint", Value::string("bad"))]),
                &TestProvider::default().provider_schema().block.implied_type(),
            ),
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(resp.diagnostics[0].summary, "Bad endpoint");
}

#[tokio::test]
async fn panics_become_error_diagnostics() {
    let s = service();
    let ty = thing_ty();
    let config = Value::object([("name", Value::string("a"))]);
    let resp = s
        .plan_resource_change(Request::new(pb::plan_resource_change::Request {
            type_name: "boom".into(),
            proposed_new_state: dv(&config, &ty),
            config: dv(&config, &ty),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(resp.diagnostics[0].summary.contains("crashed while planning boom"), "{:?}", resp.diagnostics);
    assert!(resp.diagnostics[0].detail.contains("kaboom"));
}

/// A destroy plan (null proposed state) is answered here for every resource: null planned state, the prior private
/// data kept, and the resource never asked (`boom` would panic if it were).
#[tokio::test]
async fn destroy_plans_are_answered_without_the_resource() {
    let s = service();
    let ty = thing_ty();
    let prior = Value::object([("id", Value::string("x-1")), ("name", Value::string("a"))]);
    let resp = s
        .plan_resource_change(Request::new(pb::plan_resource_change::Request {
            type_name: "boom".into(),
            prior_state: dv(&prior, &ty),
            proposed_new_state: dv(&Value::Null, &ty),
            config: dv(&Value::Null, &ty),
            prior_private: b"kept".to_vec(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(resp.diagnostics.is_empty(), "{:?}", resp.diagnostics);
    assert!(codec::decode(&resp.planned_state.unwrap().msgpack, &ty).unwrap().is_null());
    assert_eq!(resp.planned_private, b"kept");
    assert!(resp.requires_replace.is_empty());
}

#[tokio::test]
async fn stop_provider_cancels_in_flight_requests_and_keeps_serving() {
    let s = service();
    let ty = thing_ty();
    let planned = Value::object([("name", Value::string("a"))]);
    let apply = |s: Arc<ProviderService>, type_name: &'static str| {
        let planned = planned.clone();
        let ty = ty.clone();
        async move {
            s.apply_resource_change(Request::new(pb::apply_resource_change::Request {
                type_name: type_name.into(),
                planned_state: dv(&planned, &ty),
                config: dv(&planned, &ty),
                ..Default::default()
            }))
            .await
            .unwrap()
            .into_inner()
        }
    };
    let slow = tokio::spawn(apply(s.clone(), "slow"));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!slow.is_finished());
    s.stop_provider(Request::new(pb::stop_provider::Request {})).await.unwrap();
    let resp =
        tokio::time::timeout(Duration::from_secs(2), slow).await.expect("apply ends after StopProvider").unwrap();
    assert_eq!(resp.diagnostics[0].summary, "Interrupted");

    // Requests after the stop get a fresh, uncancelled token.
    assert!(!s.ctx().cancel.is_cancelled());
    let resp = apply(s.clone(), "test_thing").await;
    assert!(resp.diagnostics.is_empty());
    let state = codec::decode(&resp.new_state.unwrap().msgpack, &ty).unwrap();
    assert_eq!(state.get_named("id").as_str(), Some("x-1"));
}

#[tokio::test]
async fn upgrade_reencodes_json_state_and_rejects_flatmap() {
    let s = service();
    let ty = thing_ty();
    let resp = s
        .upgrade_resource_state(Request::new(pb::upgrade_resource_state::Request {
            type_name: "test_thing".into(),
            version: 1,
            raw_state: Some(pb::RawState {
                json: br#"{"id":"x","name":"a","server":{"port":7}}"#.to_vec(),
                ..Default::default()
            }),
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(resp.diagnostics.is_empty(), "{:?}", resp.diagnostics);
    let v = codec::decode(&resp.upgraded_state.unwrap().msgpack, &ty).unwrap();
    assert_eq!(v.get_named("server").get_named("port"), &Value::Number(7.0));

    let resp = s
        .upgrade_resource_state(Request::new(pb::upgrade_resource_state::Request {
            type_name: "test_thing".into(),
            version: 0,
            raw_state: Some(pb::RawState { json: b"{}".to_vec(), ..Default::default() }),
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(resp.diagnostics[0].summary.contains("Cannot upgrade test_thing state from schema version 0"));

    let resp = s
        .upgrade_resource_state(Request::new(pb::upgrade_resource_state::Request {
            type_name: "test_thing".into(),
            version: 1,
            raw_state: Some(pb::RawState { json: vec![], flatmap: [("id".to_string(), "x".to_string())].into() }),
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(resp.diagnostics[0].summary.contains("legacy state"));
}

#[tokio::test]
async fn import_encodes_each_object() {
    let s = service();
    let resp = s
        .import_resource_state(Request::new(pb::import_resource_state::Request {
            type_name: "test_thing".into(),
            id: "abc".into(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(resp.imported_resources.len(), 1);
    let r = &resp.imported_resources[0];
    assert_eq!(r.type_name, "test_thing");
    let v = codec::decode(&r.state.as_ref().unwrap().msgpack, &thing_ty()).unwrap();
    assert_eq!(v.get_named("id").as_str(), Some("abc"));
    assert!(v.get_named("name").is_null());
}

#[test]
fn provider_block_diagnostics_name_their_attribute() {
    use liqo_schema::tf::{AttributePath, Diagnostic};
    let d = Diagnostics(vec![
        Diagnostic::error("Cannot load kubeconfig file", "no such file")
            .at(AttributePath::root_named("kubernetes").attr_named("config_path")),
        Diagnostic::error("Invalid `liqo_namespace`", "x").at(AttributePath::root_named("liqo_namespace")),
    ]);
    let out = provider_diags(&d);
    assert_eq!(out[0].summary, "Cannot load kubeconfig file (`kubernetes.config_path`)");
    assert_eq!(out[1].summary, "Invalid `liqo_namespace`");
}

fn identity_ty() -> Type {
    Type::object([("namespace", Type::String), ("name", Type::String)])
}

fn identity(ns: &str, name: &str) -> Value {
    Value::object([("namespace", Value::string(ns)), ("name", Value::string(name))])
}

#[tokio::test]
async fn list_resources_come_with_an_identity_schema_for_their_managed_type() {
    let s = service();
    let schema = s.get_provider_schema(Request::new(Default::default())).await.unwrap().into_inner();
    assert_eq!(schema.list_resource_schemas.keys().collect::<Vec<_>>(), ["test_thing"]);
    assert!(schema.server_capabilities.unwrap().generate_resource_config);
    let ids = s.get_resource_identity_schemas(Request::new(Default::default())).await.unwrap().into_inner();
    let thing = &ids.identity_schemas["test_thing"];
    let names: Vec<&str> = thing.identity_attributes.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["namespace", "name"]);
    assert!(thing.identity_attributes.iter().all(|a| a.required_for_import && a.r#type == b"\"string\""));
    assert_eq!(ids.identity_schemas.len(), 1, "only types with a list resource have an identity");
}

#[tokio::test]
async fn list_streams_identities_and_states_and_turns_refusals_into_warnings() {
    use futures::StreamExt;
    let s = service();
    let list_ty = Type::object([("name", Type::String)]);
    let request = |name: Value, include: bool, limit: i64| pb::list_resource::Request {
        type_name: "test_thing".into(),
        config: dv(&Value::object([("name", name)]), &list_ty),
        include_resource_object: include,
        limit,
    };
    let events: Vec<_> =
        s.list_resource(Request::new(request(Value::Null, true, 100))).await.unwrap().into_inner().collect().await;
    let events: Vec<pb::list_resource::Event> = events.into_iter().map(Result::unwrap).collect();
    assert_eq!(events.len(), 3);
    let decoded = |e: &pb::list_resource::Event| {
        codec::decode(&e.identity.as_ref().unwrap().identity_data.as_ref().unwrap().msgpack, &identity_ty()).unwrap()
    };
    assert_eq!(decoded(&events[0]), identity("ns", "a"));
    assert_eq!(events[1].display_name, "thing b");
    let state = codec::decode(&events[0].resource_object.as_ref().unwrap().msgpack, &thing_ty()).unwrap();
    assert_eq!(state.get_named("name"), &Value::string("a"));
    // The refused object carries only its warning: Terraform neither lists nor generates it.
    assert!(events[2].identity.is_none() && events[2].resource_object.is_none());
    assert_eq!(events[2].diagnostic[0].severity, pb::diagnostic::Severity::Warning as i32);

    let filtered: Vec<_> = s
        .list_resource(Request::new(request(Value::string("b"), false, 100)))
        .await
        .unwrap()
        .into_inner()
        .collect()
        .await;
    assert_eq!(filtered.len(), 1);
    assert!(filtered[0].as_ref().unwrap().resource_object.is_none(), "no state unless asked for");
    let limited: Vec<_> =
        s.list_resource(Request::new(request(Value::Null, false, 1))).await.unwrap().into_inner().collect().await;
    assert_eq!(limited.len(), 1);
}

#[tokio::test]
async fn import_by_identity_uses_the_import_id_and_returns_the_identity() {
    let s = service();
    let by_identity = pb::import_resource_state::Request {
        type_name: "test_thing".into(),
        identity: Some(pb::ResourceIdentityData { identity_data: dv(&identity("ns", "a"), &identity_ty()) }),
        ..Default::default()
    };
    let resp = s.import_resource_state(Request::new(by_identity)).await.unwrap().into_inner();
    assert!(resp.diagnostics.is_empty(), "{:?}", resp.diagnostics);
    let imported = &resp.imported_resources[0];
    let state = codec::decode(&imported.state.as_ref().unwrap().msgpack, &thing_ty()).unwrap();
    assert_eq!(state.get_named("id"), &Value::string("ns/a"));
    let id =
        codec::decode(&imported.identity.as_ref().unwrap().identity_data.as_ref().unwrap().msgpack, &identity_ty());
    assert_eq!(id.unwrap(), identity("ns", "a"));

    let partial = pb::import_resource_state::Request {
        type_name: "test_thing".into(),
        identity: Some(pb::ResourceIdentityData {
            identity_data: dv(
                &Value::object([("namespace", Value::string("ns")), ("name", Value::Null)]),
                &identity_ty(),
            ),
        }),
        ..Default::default()
    };
    let resp = s.import_resource_state(Request::new(partial)).await.unwrap().into_inner();
    assert!(resp.imported_resources.is_empty());
    assert!(resp.diagnostics[0].summary.contains("`name` is missing"), "{:?}", resp.diagnostics);
}

#[tokio::test]
async fn read_returns_the_identity_and_generated_config_drops_computed_attributes() {
    let s = service();
    let state = Value::object([("id", Value::string("ns/a")), ("name", Value::string("a"))]);
    let read = pb::read_resource::Request {
        type_name: "test_thing".into(),
        current_state: dv(&state, &thing_ty()),
        ..Default::default()
    };
    let resp = s.read_resource(Request::new(read)).await.unwrap().into_inner();
    let id = codec::decode(&resp.new_identity.unwrap().identity_data.unwrap().msgpack, &identity_ty()).unwrap();
    assert_eq!(id, identity("ns", "a"));

    let generate =
        pb::generate_resource_config::Request { type_name: "test_thing".into(), state: dv(&state, &thing_ty()) };
    let resp = s.generate_resource_config(Request::new(generate)).await.unwrap().into_inner();
    let config = codec::decode(&resp.config.unwrap().msgpack, &thing_ty()).unwrap();
    assert!(config.get_named("id").is_null(), "computed-only attributes are not configuration");
    assert_eq!(config.get_named("name"), &Value::string("a"));
}
