//! The one lifecycle every managed resource goes through. A resource type implements [`Lifecycle`]: its schema,
//! its plan rules (declared in [`PlanRules`], with hooks only for what a rule cannot say), and `create`, `update`,
//! `delete`, `observe` and `import` against its typed objects. [`Driven`] turns that into the protocol layer's
//! `Resource`, and is the only place that
//! - starts each operation's deadline from the resource's `timeouts` block (create / update / delete budget),
//! - decides what state Terraform records when an operation fails (what the operation says it wrote, else the
//!   prior state, so nothing is orphaned and nothing is forgotten),
//! - turns an operation's error into diagnostics (through [`crate::errors`]),
//! - owns `id` (built from the type's import ID) and the `timeouts` block of every state a type returns (no type
//!   sets either), and
//! - answers Terraform's edge cases the same way for every type (a read of a null state); the default `update`,
//!   for types whose only in-place input is `timeouts`, records the new budgets without touching the cluster.
//!
//! A type whose create and update write the same objects the same way implements [`Lifecycle::converge`] (the prior
//! state null on create) instead of both: liqo_peer, liqo_offload, liqo_virtual_node.
//!
//! Cancellation reaches the operations through [`Op::ctx`]: every wait in [`crate::kube`] ends on Terraform's
//! stop signal with an error naming what it waited for, which then follows the failure path above.
use std::collections::BTreeMap;
use std::marker::PhantomData;

use async_trait::async_trait;
use liqo_schema::tf::{Diagnostic, Diagnostics, Schema, Severity, Value};

use crate::attributes::{Decl, Key};
use crate::cluster_api::ClusterApi;
use crate::import_id::{Found, ImportId};
use crate::kube::OpError;
use crate::protocol::{
    ApplyRequest, ApplyResponse, Ctx, ImportedResource, PlanRequest, PlanResponse, ReadResponse, Resource,
};
use crate::validate::Validator;
use std::sync::Arc;

mod plan;
mod timeouts;

pub use plan::{Plan, PlanRules};
pub use timeouts::{Deadline, TIMEOUTS, Timeouts, timeouts_block};

/// Terraform's own name for a resource's identity (and import ID), which every resource declares.
pub const ID: Key = Key::new("id");

/// What `liqoctl force unpeer` removes of a peering on a cluster, as one command: the peer's tenant namespace
/// (after the ForeignCluster is marked permanently unreachable), the CSRs signed for the peer (cluster-scoped,
/// liqo_tenant's) and the ForeignCluster. For [`Lifecycle::cleanup_command`].
pub fn unpeer_command(peer: Option<&str>, tenant_namespace: Option<&str>) -> String {
    let peer = peer.unwrap_or("<peer cluster ID>");
    let namespace = tenant_namespace.unwrap_or("<tenant namespace>");
    use liqo_schema::liqo::labels::{FOREIGN_CLUSTER_PERMANENTLY_UNREACHABLE, REMOTE_CLUSTER_ID};
    format!(
        "kubectl annotate foreignclusters {peer} {FOREIGN_CLUSTER_PERMANENTLY_UNREACHABLE}=true && kubectl \
         delete namespace {namespace} && kubectl delete certificatesigningrequests -l {REMOTE_CLUSTER_ID}={peer} \
         && kubectl delete foreignclusters {peer}"
    )
}

/// One running create, update or delete: the request's context and what is left of its `timeouts` budget.
pub struct Op<'a> {
    pub ctx: &'a Ctx,
    pub deadline: Deadline,
}

/// A finished operation: the state to record and warnings to show with it.
pub struct Done {
    pub state: Value,
    pub warnings: Diagnostics,
}

impl Done {
    pub fn with_warning(mut self, warning: Diagnostic) -> Done {
        self.warnings.push(warning);
        self
    }
}

impl From<Value> for Done {
    fn from(state: Value) -> Done {
        Done { state, warnings: Diagnostics::new() }
    }
}

/// A failed operation: why, and — when it wrote something before failing — the state that records it.
pub struct Failure {
    /// `None`: nothing was written, Terraform keeps what it had (no state on a create, the prior state on an
    /// update or delete). `Some`: the objects written so far, so a failed create is tainted and cleaned up by the
    /// next apply or destroy instead of being orphaned.
    pub written: Option<Value>,
    pub diagnostics: Diagnostics,
}

impl Failure {
    /// The failure of an operation that had written the objects `state` records.
    pub fn after_writing(self, state: Value) -> Failure {
        Failure { written: Some(state), ..self }
    }

    /// Adds what the failure means for this resource (what is already done, what the user should do) to the
    /// detail of each error.
    pub fn explain(mut self, consequence: &str) -> Failure {
        for d in self.diagnostics.0.iter_mut().filter(|d| d.severity == Severity::Error) {
            d.detail = format!("{}\n{consequence}", d.detail);
        }
        self
    }
}

impl From<Diagnostics> for Failure {
    fn from(diagnostics: Diagnostics) -> Failure {
        Failure { written: None, diagnostics }
    }
}

impl From<Diagnostic> for Failure {
    fn from(d: Diagnostic) -> Failure {
        Diagnostics::from(d).into()
    }
}

impl From<OpError> for Failure {
    fn from(e: OpError) -> Failure {
        crate::errors::op_diags(&e).into()
    }
}

/// What a type's schema.rs declares, which the driver reads for the schema Terraform sees, the checks and the plan:
/// `Declared { description, attributes: attr::declared, ..Declared::NONE }` and what else the type has.
pub struct Declared {
    /// The resource's description in its schema (the docs page's lead).
    pub description: &'static str,
    /// Its attributes, each declared once (`attributes!`): the schema, the declared checks and plan rules come
    /// from them.
    pub attributes: fn() -> Vec<Decl>,
    /// Checks of the resource block the declarations cannot say (across attributes, or particular to the type),
    /// run after the declared ones (values may be unknown). Must not call any API.
    pub validate: fn(&mut Validator<'_>),
    /// Its plan hooks (plan.rs), if its attributes do not declare all its plan.
    pub rules: PlanRules,
    /// Bumped when the state layout changes ([`Lifecycle::upgrade`] reads the older ones).
    pub version: i64,
}

impl Declared {
    /// What a type leaves out: no description or attributes (each type gives its own), no checks across
    /// attributes, no plan hooks, schema version 0.
    pub const NONE: Declared =
        Declared { description: "", attributes: Vec::new, validate: |_| {}, rules: PlanRules::NONE, version: 0 };
}

/// What a managed resource type declares and does; [`Driven`] runs it.
#[async_trait]
pub trait Lifecycle: Send + Sync + Sized + 'static {
    const TYPE_NAME: &'static str;
    /// Default budgets of the `timeouts` block.
    const TIMEOUTS: Timeouts;
    /// What its schema.rs declares: description, attributes, checks across them, plan hooks, schema version.
    const DECLARED: Declared;
    /// Its import ID: parsed by `import`, built as `id`, the identity of its list resource.
    const IMPORT_ID: ImportId;
    /// What `remote_cluster_id` of its list resource narrows the list to (for the list block's docs).
    const LISTED_FOR_PEER: &'static str;
    /// The attribute that holds the peer cluster's ID; `None` for a type that serves every peer (liqo_offload).
    const PEER: Option<Key>;
    /// The attribute that holds the tenant namespace it lives in; `None` for a type that lives elsewhere.
    const TENANT_NAMESPACE: Option<Key>;
    /// What it keeps on its cluster, as the warning of a destroy without the cluster lists it.
    const OBJECTS: &'static str;

    fn new(cluster: Arc<ClusterApi>) -> Self;

    /// Create and update alike, for a type that writes the same objects the same way in both (the prior state
    /// null on create): such a type implements this and neither `create` nor `update`. The default suits an
    /// update whose only in-place input is `timeouts`: the objects stay (the driver records the new budgets).
    async fn converge(&self, _op: &Op<'_>, prior: &Value, _planned: &Value, _config: &Value) -> Result<Done, Failure> {
        Ok(prior.clone().into())
    }
    async fn create(&self, op: &Op<'_>, planned: &Value, config: &Value) -> Result<Done, Failure> {
        self.converge(op, &Value::Null, planned, config).await
    }
    /// An in-place update.
    async fn update(&self, op: &Op<'_>, prior: &Value, planned: &Value, config: &Value) -> Result<Done, Failure> {
        self.converge(op, prior, planned, config).await
    }
    async fn delete(&self, op: &Op<'_>, prior: &Value) -> Result<(), Failure>;
    /// The state as the cluster has it now; `Done.state` null when the objects are gone or no longer what this
    /// resource made (Terraform then plans to create them again).
    async fn observe(&self, ctx: &Ctx, state: &Value) -> Result<Done, Failure>;
    /// The full state of the objects the documented import ID names.
    async fn import(&self, ctx: &Ctx, id: &str) -> Result<Value, Failure>;
    /// The objects of this type on the cluster (for one peer when `remote` is set), made by anyone: what its list
    /// resource and `liqo_import_ids` show; import then decides whether each can be adopted.
    async fn find(ctx: &Ctx, client: kube::Client, remote: Option<&str>) -> Result<Vec<Found>, OpError>;

    /// The configuration `-generate-config-out` writes for an imported object (computed-only attributes are
    /// already null).
    fn generated_config(config: Value) -> Value {
        config
    }
    /// How to remove what a destroy without its cluster left there, should the cluster come back: by default
    /// what `liqoctl force unpeer` removes of the peering ([`unpeer_command`]).
    fn cleanup_command(prior: &Value) -> String {
        let of = |key: Option<Key>| key.and_then(|k| prior.get(k).as_str());
        unpeer_command(of(Self::PEER), of(Self::TENANT_NAMESPACE))
    }
    /// Upgrades stored state JSON of an older schema `version`; `None`: only the current version is accepted.
    fn upgrade(_version: i64, _state: &serde_json::Value) -> Option<Result<serde_json::Value, Diagnostics>> {
        None
    }
}

/// A [`Lifecycle`] served as the protocol layer's `Resource`.
pub struct Driven<L> {
    inner: L,
    cluster: Arc<ClusterApi>,
    _type: PhantomData<fn() -> L>,
}

/// A managed type as the provider registers it ([`crate::resources::all`]): served as a resource, and as a list
/// resource ([`crate::list`]) of the objects it finds.
#[async_trait]
pub trait Managed: Resource {
    fn import_id(&self) -> &'static ImportId;
    fn listed_for_peer(&self) -> &'static str;
    async fn find(&self, ctx: &Ctx, client: kube::Client, remote: Option<&str>) -> Result<Vec<Found>, OpError>;
}

#[async_trait]
impl<L: Lifecycle> Managed for Driven<L> {
    fn import_id(&self) -> &'static ImportId {
        &L::IMPORT_ID
    }
    fn listed_for_peer(&self) -> &'static str {
        L::LISTED_FOR_PEER
    }
    async fn find(&self, ctx: &Ctx, client: kube::Client, remote: Option<&str>) -> Result<Vec<Found>, OpError> {
        L::find(ctx, client, remote).await
    }
}

impl<L: Lifecycle> Driven<L> {
    pub fn managed(cluster: Arc<ClusterApi>) -> Arc<dyn Managed> {
        Arc::new(Driven { inner: L::new(cluster.clone()), cluster, _type: PhantomData })
    }

    fn budgets(state: &Value) -> Timeouts {
        Timeouts::from_value(state, L::TIMEOUTS)
    }

    pub fn schema() -> Schema {
        Schema {
            version: L::DECLARED.version,
            block: crate::attributes::block(L::DECLARED.description, &(L::DECLARED.attributes)())
                .with_block(timeouts_block(L::TIMEOUTS)),
        }
    }

    /// When `state` is an object the Go provider 0.x made (it holds one of its names), what to say of it: an error
    /// where an operation would change or destroy it, a warning where it is only kept.
    fn made_by_the_go_provider(state: &Value, error: bool) -> Option<Diagnostic> {
        let decls = (L::DECLARED.attributes)();
        let names: Vec<&str> = crate::attributes::removed_set(&decls, state).iter().map(|d| d.key.name()).collect();
        (!names.is_empty()).then(|| crate::errors::made_by_the_go_provider(L::TYPE_NAME, &names, error))
    }

    /// The declared checks, the type's own, then the `timeouts` block's; only one error when the block was
    /// written for the Go provider 0.x.
    pub fn validate(config: &Value) -> Diagnostics {
        let mut c = Validator::new(config);
        let decls = (L::DECLARED.attributes)();
        if c.removed(L::TYPE_NAME, &decls) {
            return c.finish();
        }
        c.declared(&decls, config, None);
        (L::DECLARED.validate)(&mut c);
        c.declared(&timeouts::attr::declared(), config.get(TIMEOUTS), Some(&TIMEOUTS.path()));
        c.finish()
    }

    /// A delete: on a cluster gone for good, the resource leaves the state untouched; on a cluster whose peer of
    /// this resource is gone for good, this cluster is first unpeered from it as `liqoctl force unpeer` does
    /// (`crate::gone`), then the resource's own delete finds what is left.
    async fn delete(&self, op: &Op<'_>, prior: &Value) -> Result<Done, Failure> {
        let gone = self.cluster.gone_for_good();
        if gone.this_cluster {
            return Ok(Done::from(Value::Null).with_warning(self.left_behind(prior)));
        }
        let peers: Vec<String> = match L::PEER {
            Some(attr) => {
                prior.get(attr).as_str().filter(|p| gone.peers.contains(*p)).map(str::to_string).into_iter().collect()
            }
            None => gone.peers.iter().cloned().collect(),
        };
        for peer in &peers {
            crate::gone::force_unpeer(op.ctx, &self.cluster, peer, op.deadline.left()).await?;
        }
        self.inner.delete(op, prior).await?;
        Ok(Value::Null.into())
    }

    /// The warning of a resource that leaves the state without its cluster, which is gone for good.
    fn left_behind(&self, prior: &Value) -> Diagnostic {
        let id = prior.get(ID).as_str().unwrap_or_default();
        Diagnostic::warning(
            format!("{} {id} left the state without its cluster", L::TYPE_NAME),
            format!(
                "The provider block sets `permanently_unreachable = true`, so {} was not contacted. Left on it: {} \
                 ({id}). If the cluster ever comes back, remove them there with:\n  {}",
                self.cluster.source(),
                L::OBJECTS,
                L::cleanup_command(prior)
            ),
        )
    }
}

/// A state a resource returned, with what the driver owns: `id`, built from the type's import ID, and the
/// `timeouts` block, which is Terraform's and never on the cluster (the plan's after an apply, the prior state's
/// after a read, none after an import). Null (gone) stays null.
pub(crate) fn owned<L: Lifecycle>(mut state: Value, timeouts: &Value) -> Value {
    if !state.is_null() {
        state.set(ID, L::IMPORT_ID.value(&state));
        state.set(TIMEOUTS, timeouts.clone());
    }
    state
}

#[async_trait]
impl<L: Lifecycle> Resource for Driven<L> {
    fn type_name(&self) -> &'static str {
        L::TYPE_NAME
    }

    fn schema(&self) -> Schema {
        Self::schema()
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        Self::validate(config)
    }

    async fn plan(&self, _ctx: &Ctx, req: PlanRequest) -> PlanResponse {
        // Neither updated nor destroyed: it is the Go provider's. (Taken out of the state by a `removed` block, it
        // is never planned.)
        if let Some(refusal) = Self::made_by_the_go_provider(&req.prior, true) {
            return PlanResponse {
                planned: req.prior.clone(),
                requires_replace: Vec::new(),
                private: req.private,
                diagnostics: refusal.into(),
            };
        }
        let plan = Plan::run::<L>(&req.prior, req.proposed, &req.config);
        PlanResponse {
            planned: plan.planned,
            requires_replace: plan.replace,
            private: req.private,
            diagnostics: plan.diagnostics,
        }
    }

    async fn apply(&self, ctx: &Ctx, req: ApplyRequest) -> ApplyResponse {
        // A destroy's plan is null: a state it leaves keeps the budgets it ran with.
        let timeouts = match req.planned.is_null() {
            true => req.prior.get(TIMEOUTS).clone(),
            false => req.planned.get(TIMEOUTS).clone(),
        };
        // The state recorded after a failed operation: what it wrote, else what Terraform had.
        let recorded = |failure: Failure, had: Value| ApplyResponse {
            new_state: match failure.written {
                Some(written) => owned::<L>(written, &timeouts),
                None => had,
            },
            private: Vec::new(),
            diagnostics: failure.diagnostics,
        };
        let finished = |done: Done| ApplyResponse {
            new_state: owned::<L>(done.state, &timeouts),
            private: Vec::new(),
            diagnostics: done.warnings,
        };
        // A destroy Terraform plans without asking the provider (the resource left the configuration).
        if let Some(refusal) = Self::made_by_the_go_provider(&req.prior, true) {
            return recorded(Failure::from(Diagnostics::from(refusal)), req.prior);
        }
        if req.planned.is_null() {
            let op = Op { ctx, deadline: Deadline::after(Self::budgets(&req.prior).delete) };
            return match self.delete(&op, &req.prior).await {
                Ok(done) => finished(done),
                Err(failure) => recorded(failure, req.prior),
            };
        }
        // Validation saw unknown values as possibly null (a conditional on a variable, another resource's output);
        // here every value is known, so what it let pass for that reason is checked before any cluster is touched.
        // A create's required arguments, here and not in the plan: `terraform destroy` first plans every resource
        // with its configuration (one found gone is planned as a create), and there an attribute fed by a cluster
        // gone for good is null. Nothing is written before this check.
        let mut invalid = Self::validate(&req.config);
        if req.prior.is_null() {
            let mut check = Validator::new(&req.config);
            check.required(&(L::DECLARED.attributes)());
            invalid.extend(check.finish());
        }
        invalid.0.retain(|d| d.severity == Severity::Error);
        if !invalid.is_empty() {
            // Nothing written: the prior state stands (null on create).
            return recorded(Failure::from(invalid), req.prior);
        }
        let budgets = Self::budgets(&req.planned);
        if req.prior.is_null() {
            let op = Op { ctx, deadline: Deadline::after(budgets.create) };
            return match self.inner.create(&op, &req.planned, &req.config).await {
                Ok(done) => finished(done),
                Err(failure) => recorded(failure, Value::Null),
            };
        }
        let op = Op { ctx, deadline: Deadline::after(budgets.update) };
        match self.inner.update(&op, &req.prior, &req.planned, &req.config).await {
            Ok(done) => finished(done),
            Err(failure) => recorded(failure, req.prior),
        }
    }

    async fn read(&self, ctx: &Ctx, state: Value, private: Vec<u8>) -> ReadResponse {
        if state.is_null() {
            return ReadResponse { new_state: state, private, diagnostics: Diagnostics::new() };
        }
        // What the Go provider made is not this provider's to look at: kept as it was, and said so.
        if let Some(warning) = Self::made_by_the_go_provider(&state, false) {
            return ReadResponse { new_state: state, private, diagnostics: warning.into() };
        }
        if self.cluster.gone_for_good().this_cluster {
            let id = state.get(ID).as_str().unwrap_or_default().to_string();
            let warning = Diagnostic::warning(
                format!("{} {id} kept as it was: its cluster is marked permanently unreachable", L::TYPE_NAME),
                format!(
                    "The provider block sets `permanently_unreachable = true`, so {} is not read; the state keeps \
                     what the last refresh saw. A destroy removes the resource from the state without touching \
                     the cluster.",
                    self.cluster.source()
                ),
            );
            return ReadResponse { new_state: state, private, diagnostics: warning.into() };
        }
        match self.inner.observe(ctx, &state).await {
            Ok(done) => ReadResponse {
                new_state: owned::<L>(done.state, state.get(TIMEOUTS)),
                private,
                diagnostics: done.warnings,
            },
            // Could not look: keep what Terraform had and say why.
            Err(failure) => ReadResponse { new_state: state, private, diagnostics: failure.diagnostics },
        }
    }

    async fn import(&self, ctx: &Ctx, id: &str) -> Result<Vec<ImportedResource>, Diagnostics> {
        let state = owned::<L>(self.inner.import(ctx, id).await.map_err(|f| f.diagnostics)?, &Value::Null);
        Ok(vec![ImportedResource { state, private: Vec::new() }])
    }

    fn generated_config(&self, config: Value) -> Value {
        L::generated_config(config)
    }

    fn upgrade(&self, version: i64, state: serde_json::Value) -> Result<serde_json::Value, Diagnostics> {
        // Whatever its version, a state of the Go provider 0.x is not one of this provider's older ones.
        if let Some(state) = crate::attributes::go_provider_state(&(L::DECLARED.attributes)(), &state) {
            return Ok(state);
        }
        let current = L::DECLARED.version;
        if version == current {
            return Ok(state);
        }
        L::upgrade(version, &state)
            .unwrap_or_else(|| Err(crate::errors::unknown_schema_version(L::TYPE_NAME, version, current)))
    }
}

/// The helpers every resource's `tests.rs` uses, for the type `$ty` whose import ID has `$parts` parts: `schema()`
/// (what Terraform sees), `validate(config)` (every plan-time check) and `parse_import_id(id)`.
#[cfg(test)]
macro_rules! test_helpers {
    ($ty:ty, $parts:literal) => {
        #[allow(dead_code)]
        fn schema() -> liqo_schema::tf::Schema {
            crate::resources::lifecycle::Driven::<$ty>::schema()
        }

        #[allow(dead_code)]
        fn validate(config: &liqo_schema::tf::Value) -> liqo_schema::tf::Diagnostics {
            crate::resources::lifecycle::Driven::<$ty>::validate(config)
        }

        /// A state the type returned, as the driver completes it (`id`, `timeouts`).
        #[allow(dead_code)]
        fn owned(state: liqo_schema::tf::Value, timeouts: &liqo_schema::tf::Value) -> liqo_schema::tf::Value {
            crate::resources::lifecycle::owned::<$ty>(state, timeouts)
        }

        #[allow(dead_code)]
        fn parse_import_id(id: &str) -> Result<[String; $parts], liqo_schema::tf::Diagnostic> {
            use crate::resources::lifecycle::Lifecycle;
            <$ty>::IMPORT_ID.parse(<$ty>::TYPE_NAME, id)
        }
    };
}
#[cfg(test)]
pub(crate) use test_helpers;

/// A string the plan made known, read back at apply time (where Terraform guarantees every planned value is
/// known; a miss is the provider's own bug).
pub fn known_string(planned: &Value, key: Key) -> Result<String, Diagnostic> {
    planned.get(key).as_str().map(str::to_string).ok_or_else(|| {
        Diagnostic::attr_error(
            key,
            format!("`{key}` is not known at apply time"),
            "This is a bug in the provider (the plan should have filled it); please report it.",
        )
    })
}

/// A list, set or map attribute as state when Liqo holds none of it: an empty one the user wrote (`[]`, `{}`) stays as
/// written, since Liqo treats it as absent (so it is no drift); anything else reads as null.
pub fn empty_as_written(prior: &Value) -> Value {
    match prior {
        Value::List(l) | Value::Set(l) if l.is_empty() => prior.clone(),
        Value::Map(m) if m.is_empty() => prior.clone(),
        _ => Value::Null,
    }
}

/// A map attribute as state, read back from the `live` map. `managed` is the prior state's value — the keys this
/// resource set, so a changed or removed one shows as drift, while keys someone else added are not ours and stay out
/// of the state (server-side apply leaves them alone too). A live value the same as the prior one (`same`, e.g. the
/// quantities `1000m` and `1`) keeps the prior spelling. On import (`None`) the whole live map is taken.
pub fn observed_map(managed: Option<&Value>, live: BTreeMap<String, String>, same: fn(&str, &str) -> bool) -> Value {
    let Some(managed) = managed else {
        return if live.is_empty() { Value::Null } else { Value::string_map(live) };
    };
    let Some(keys) = managed.entries() else {
        return managed.clone();
    };
    Value::Map(
        keys.iter()
            .filter_map(|(k, prior)| {
                let value = live.get(k)?;
                let kept = prior.as_str().is_some_and(|p| same(p, value));
                Some((k.clone(), if kept { prior.clone() } else { Value::string(value) }))
            })
            .collect(),
    )
}

/// [`Lifecycle::upgrade`] of a type whose only change since schema version 0 (0.2.0) is that `attribute` is gone
/// (the kubeconfig that held the consumer's private key): version 0 loses it.
pub fn upgrade_dropping_v0(
    attribute: &str, // gone from the schema, so it has no key
    version: i64,
    state: &serde_json::Value,
) -> Option<Result<serde_json::Value, Diagnostics>> {
    (version == 0).then(|| {
        let mut state = state.clone();
        if let Some(attributes) = state.as_object_mut() {
            attributes.remove(attribute);
        }
        Ok(state)
    })
}
