//! The `timeouts` block of every resource and the one [`Deadline`] an operation's waits share.
use crate::validate::parse_duration;
use liqo_schema::tf::{Attribute, Block, NestedBlock, Type, Value};
use std::time::{Duration, Instant};

/// Default and configured wait budgets of one resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    pub create: Duration,
    pub update: Duration,
    pub delete: Duration,
}

impl Timeouts {
    pub const fn uniform(d: Duration) -> Timeouts {
        Timeouts { create: d, update: d, delete: d }
    }

    /// `timeouts { create = "10m" … }` from a config/plan/state value, falling back to `defaults`. Invalid
    /// strings were rejected at validation, so they fall back silently here.
    pub fn from_value(resource: &Value, defaults: Timeouts) -> Timeouts {
        let t = resource.get("timeouts");
        let pick = |name: &str, d: Duration| t.get(name).as_str().and_then(|s| parse_duration(s).ok()).unwrap_or(d);
        Timeouts {
            create: pick("create", defaults.create),
            update: pick("update", defaults.update),
            delete: pick("delete", defaults.delete),
        }
    }
}

/// The `timeouts { create, update, delete }` block, as in HashiCorp providers.
pub fn timeouts_block(defaults: Timeouts) -> NestedBlock {
    let attr = |name: &str, d: Duration| {
        Attribute::optional(name, Type::String).describe(format!(
            "How long to wait for the {name} to finish, as a duration like `90s` or `10m` (default `{}`).",
            crate::errors::human(d)
        ))
    };
    NestedBlock::single(
        "timeouts",
        Block::new(
            "Wait budgets of this resource.",
            vec![attr("create", defaults.create), attr("update", defaults.update), attr("delete", defaults.delete)],
        ),
    )
}

/// The end of one operation's wait budget (the resource's `timeouts`): every wait inside the operation gets
/// what is left of it, so the whole operation, not each wait, is bounded.
#[derive(Clone, Copy, Debug)]
pub struct Deadline(Instant);

impl Deadline {
    pub fn after(budget: Duration) -> Deadline {
        Deadline(Instant::now() + budget)
    }
    /// What is left of the budget (zero once it has passed).
    pub fn left(&self) -> Duration {
        self.0.saturating_duration_since(Instant::now())
    }
}
