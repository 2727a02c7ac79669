//! Plan rules: declared per type in [`PlanRules`], applied the same way for every type by [`Plan::run`].
use liqo_schema::tf::{AttributePath, Diagnostics, Value};

use super::Lifecycle;

/// The plan rules a type declares instead of coding them.
pub struct PlanRules {
    /// Inputs Liqo treats as immutable: a change replaces the resource. A planned value not known until apply
    /// counts as a change (it may turn out different, and Terraform refuses a final plan that replaces what the
    /// first plan updated).
    pub replace_on_change: &'static [&'static str],
    /// Whether a `replace_on_change` input the prior state lacks (null: gone from the cluster, or never read back
    /// by an import) is set again in place instead of replacing the resource.
    pub repair_missing_in_place: bool,
    /// Optional nested blocks that give the resource its kind (a gateway's `server` or `client`): setting or
    /// removing one replaces the resource, a change inside it does not.
    pub replace_on_presence_change: &'static [&'static str],
    /// Computed outputs: unknown on create and on replacement, the prior value otherwise. An output that an
    /// in-place update recomputes is marked in `refine` with [`Plan::recompute`].
    pub outputs: &'static [&'static str],
    /// Inputs defaulted from the configuration, filled before the rules compare them with the prior state.
    pub defaults: fn(&mut Plan),
    /// What the rules cannot say: derived attributes, outputs an in-place update changes, plan-time warnings.
    pub refine: fn(&mut Plan),
}

/// The hook of a type that needs none.
pub fn no_hook(_: &mut Plan) {}

/// One plan in the making: Terraform's prior state and configuration, the planned state and the replace paths.
pub struct Plan<'a> {
    /// Null when the resource is being created.
    pub prior: &'a Value,
    pub config: &'a Value,
    pub planned: Value,
    pub replace: Vec<AttributePath>,
    pub diagnostics: Diagnostics,
}

impl<'a> Plan<'a> {
    /// Defaults from the configuration, then the declared rules, then the type's refinements. Pure: no API call,
    /// so a configuration plans while a cluster is unreachable or not yet created.
    pub fn run<L: Lifecycle>(prior: &'a Value, proposed: Value, config: &'a Value) -> Plan<'a> {
        let mut plan = Plan { prior, config, planned: proposed, replace: Vec::new(), diagnostics: Diagnostics::new() };
        let rules = &L::RULES;
        (rules.defaults)(&mut plan);
        for attr in rules.replace_on_change {
            let repaired = rules.repair_missing_in_place && prior.get(attr).is_null();
            if plan.changed(attr) && !repaired {
                plan.replace.push(AttributePath::root(attr));
            }
        }
        for attr in rules.replace_on_presence_change {
            let planned = plan.planned.get(attr);
            let switched = planned.is_unknown() || prior.get(attr).is_null() != planned.is_null();
            if !plan.creating() && switched {
                plan.replace.push(AttributePath::root(attr));
            }
        }
        let fresh = plan.fresh();
        for attr in rules.outputs {
            let value = if fresh { Value::Unknown } else { prior.get(attr).clone() };
            plan.planned.set(attr, value);
        }
        (rules.refine)(&mut plan);
        plan
    }

    pub fn creating(&self) -> bool {
        self.prior.is_null()
    }

    /// A new object: created, or replaced because an immutable input changed.
    pub fn fresh(&self) -> bool {
        self.creating() || !self.replace.is_empty()
    }

    /// True when the planned value of `attr` differs from the prior state's (never on create). An unknown planned
    /// value counts as a change: it may turn out different.
    pub fn changed(&self, attr: &str) -> bool {
        !self.prior.is_null() && self.prior.get(attr) != self.planned.get(attr)
    }

    /// `attr` is recomputed by this apply: unknown in the plan.
    pub fn recompute(&mut self, attr: &str) {
        self.planned.set(attr, Value::Unknown);
    }
}
