//! Plan rules: declared per type in [`PlanRules`], applied the same way for every type by [`Plan::run`].
use liqo_schema::tf::{AttributePath, Diagnostics, Nesting, Value};

use super::Lifecycle;
use crate::attributes::{Decl, Key};

/// The plan rules of a type beyond what its attributes declare (replace on change or on presence change, defaults,
/// computed outputs: [`crate::attributes::Decl`]).
pub struct PlanRules {
    /// Whether a `replace_on_change` input the prior state lacks (null: gone from the cluster, or never read back
    /// by an import) is set again in place instead of replacing the resource.
    pub repair_missing_in_place: bool,
    /// Defaults a declaration cannot say (derived from other inputs, or from the prior state), filled after the
    /// declared ones and before the rules compare the plan with the prior state.
    pub defaults: fn(&mut Plan),
    /// What the rules cannot say: derived attributes, outputs an in-place update changes, plan-time warnings.
    pub refine: fn(&mut Plan),
}

impl PlanRules {
    /// A type whose attributes declare all its plan: what [`super::Declared::rules`] is unless the type says
    /// otherwise, and what a type's rules start from (`PlanRules { refine, ..PlanRules::NONE }`).
    pub const NONE: PlanRules = PlanRules { repair_missing_in_place: false, defaults: no_hook, refine: no_hook };
}

fn no_hook(_: &mut Plan) {}

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
        let rules = &L::DECLARED.rules;
        let decls = (L::DECLARED.attributes)();
        plan.declared_defaults(&decls);
        (rules.defaults)(&mut plan);
        plan.planned.set(super::ID, L::IMPORT_ID.value(&plan.planned));
        for d in &decls {
            let repaired = rules.repair_missing_in_place && prior.get(d.key).is_null();
            if d.replace_on_change && plan.changed(d.key) && !repaired {
                plan.replace.push(d.key.path());
            }
        }
        for d in decls.iter().filter(|d| d.replace_on_presence_change) {
            let planned = plan.planned.get(d.key);
            let switched = planned.is_unknown() || prior.get(d.key).is_null() != planned.is_null();
            if !plan.creating() && switched {
                plan.replace.push(d.key.path());
            }
        }
        let fresh = plan.fresh();
        for key in crate::attributes::outputs(&decls) {
            let value = if fresh { Value::Unknown } else { prior.get(key).clone() };
            plan.planned.set(key, value);
        }
        (rules.refine)(&mut plan);
        plan
    }

    /// The declared defaults: an attribute the configuration leaves null gets its default; a single nested
    /// object the configuration sets gets its children's defaults (an unset or unknown one stays as configured).
    fn declared_defaults(&mut self, decls: &[Decl]) {
        for d in decls {
            let config = self.config.get(d.key);
            if let Some(default) = &d.default
                && config.is_null()
            {
                self.planned.set(d.key, default.clone());
            }
            let child_defaults: Vec<&Decl> = d.children().iter().filter(|c| c.default.is_some()).collect();
            if d.nesting() == Some(Nesting::Single) && !child_defaults.is_empty() {
                let mut planned = config.clone();
                if !config.is_null() && !config.is_unknown() {
                    for c in child_defaults {
                        if config.get(c.key).is_null() {
                            planned.set(c.key, c.default.clone().unwrap_or_default());
                        }
                    }
                }
                self.planned.set(d.key, planned);
            }
        }
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
    pub fn changed(&self, key: Key) -> bool {
        !self.prior.is_null() && self.prior.get(key) != self.planned.get(key)
    }

    /// `key` is recomputed by this apply: unknown in the plan.
    pub fn recompute(&mut self, key: Key) {
        self.planned.set(key, Value::Unknown);
    }
}
