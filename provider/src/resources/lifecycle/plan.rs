//! Plan rules: declared per type in [`PlanRules`], applied the same way for every type by [`Plan::run`].
use liqo_schema::tf::{AttributePath, Diagnostics, Value};

use super::Lifecycle;

/// The plan rules a type declares instead of coding them.
pub struct PlanRules {
    /// Inputs Liqo treats as immutable: a change replaces the resource.
    pub replace_on_change: &'static [&'static str],
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
        (L::RULES.defaults)(&mut plan);
        for attr in L::RULES.replace_on_change {
            if plan.changed(attr) {
                plan.replace.push(AttributePath::root(attr));
            }
        }
        let fresh = plan.fresh();
        for attr in L::RULES.outputs {
            let value = if fresh { Value::Unknown } else { prior.get(attr).clone() };
            plan.planned.set(attr, value);
        }
        (L::RULES.refine)(&mut plan);
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
