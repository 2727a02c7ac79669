//! The `timeouts` block of every resource and the one [`Deadline`] an operation's waits share.
use crate::attributes::{Decl, Key};
use crate::validate::parse_duration;
use liqo_schema::tf::{Block, NestedBlock, Value};
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
        let t = resource.get(TIMEOUTS);
        let pick = |key: Key, d: Duration| t.get(key).as_str().and_then(|s| parse_duration(s).ok()).unwrap_or(d);
        Timeouts {
            create: pick(attr::create, defaults.create),
            update: pick(attr::update, defaults.update),
            delete: pick(attr::delete, defaults.delete),
        }
    }

    fn of(&self, key: Key) -> Duration {
        match key {
            attr::create => self.create,
            attr::update => self.update,
            _ => self.delete,
        }
    }
}

/// The block every resource has, as in HashiCorp providers.
pub const TIMEOUTS: Key = Key::new("timeouts");

/// The attributes of the `timeouts` block.
pub mod attr {
    use crate::attributes::*;
    use liqo_schema::tf::Type;

    attributes! {
        create: optional(Type::String).check(Check::Duration);
        update: optional(Type::String).check(Check::Duration);
        delete: optional(Type::String).check(Check::Duration);
    }
}

/// The `timeouts { create, update, delete }` block, each entry described with its default.
pub fn timeouts_block(defaults: Timeouts) -> NestedBlock {
    let decls: Vec<Decl> = attr::declared()
        .into_iter()
        .map(|d| {
            let text = format!(
                "How long to wait for the {} to finish, as a duration like `90s` or `10m` (default `{}`).",
                d.key,
                crate::errors::human(defaults.of(d.key))
            );
            d.describe(text)
        })
        .collect();
    NestedBlock::single(
        TIMEOUTS.name(),
        Block::new("Wait budgets of this resource.", decls.iter().map(Decl::attribute).collect()),
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
