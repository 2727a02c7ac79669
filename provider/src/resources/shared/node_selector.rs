//! Kubernetes node selector terms as attributes: liqo_offload's `cluster_selector` (which virtual nodes a namespace
//! is offloaded to) and liqo_virtual_node's node affinity (which of the provider's nodes the offloaded pods run
//! on) are lists of the same terms, declared, checked and converted here once.
use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm};
use liqo_schema::tf::{AttributePath, Value};

use crate::attributes::Key;
use crate::resources::lifecycle;
use crate::validate::{Validator, check_qualified_name};

/// A node selector term.
pub mod term {
    use crate::attributes::*;
    use liqo_schema::tf::Nesting;

    attributes! {
        match_expressions: nested(Nesting::List, match_expressions::declared())
            .required()
            .describe("Requirements on the nodes' labels; all of them must match (AND).");
    }

    /// One requirement of a term.
    pub mod match_expressions {
        use crate::attributes::*;
        use liqo_schema::tf::Type;

        attributes! {
            key: required(Type::String)
                .describe("Label key of the nodes to match, e.g. `liqo.io/remote-cluster-id`.");
            operator: required(Type::String)
                .describe("One of `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`.");
            values: optional(Type::list(Type::String)).describe(
                "Label values: at least one for `In`/`NotIn`, none for `Exists`/`DoesNotExist`, exactly one integer \
                 for `Gt`/`Lt`.",
            );
        }
    }
}

/// A node selector term with a weight: the scheduler prefers the nodes that match the terms of the highest total.
pub mod weighted_term {
    use crate::attributes::*;
    use liqo_schema::tf::{Nesting, Type};

    pub use super::term::match_expressions::{self};

    attributes! {
        weight: required(Type::Number).describe("How much a node that matches is preferred, from 1 to 100.");
        match_expressions: nested(Nesting::List, match_expressions::declared())
            .required()
            .describe("Requirements on the nodes' labels; all of them must match (AND).");
    }
}

/// Kubernetes' node selector operators.
const OPERATORS: [&str; 6] = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];

/// What the checks of a list of terms say beyond the attribute's name: an example key, and what an empty term means
/// there.
pub struct Wording {
    /// A label key the fix shows.
    pub example_key: &'static str,
    pub empty_term: &'static str,
    pub empty_term_fix: &'static str,
}

/// Kubernetes' rules for the terms of attribute `key`: each term has a requirement, each requirement a label key,
/// a known operator and the values its operator takes; weights from 1 to 100. The API server would otherwise refuse
/// them mid-apply.
pub fn validate(c: &mut Validator<'_>, key: Key, wording: &Wording) {
    let (path, terms) = (key.path(), c.config.get(key));
    for (i, term) in terms.elements().iter().enumerate() {
        let at = path.clone().index(i as i64);
        if let Some(weight) = term.get(weighted_term::weight).as_f64()
            && (weight.fract() != 0.0 || !(1.0..=100.0).contains(&weight))
        {
            c.error(
                at.clone().attr(weighted_term::weight),
                format!("Invalid weight in `{key}`"),
                format!("`{weight}` is not a whole number from 1 to 100 (Kubernetes' range for a preferred term)."),
            );
        }
        let term_path = at.attr(term::match_expressions);
        let expressions = term.get(term::match_expressions);
        if expressions.is_null() || (matches!(expressions, Value::List(l) if l.is_empty())) {
            c.error(term_path.clone(), wording.empty_term, wording.empty_term_fix);
        }
        for (j, expr) in expressions.elements().iter().enumerate() {
            validate_requirement(c, term_path.clone().index(j as i64), expr, key, wording);
        }
    }
}

fn validate_requirement(c: &mut Validator, path: AttributePath, expr: &Value, attribute: Key, wording: &Wording) {
    use term::match_expressions::{key as label_key, operator, values as values_key};
    if let Some(key) = expr.get(label_key).as_str()
        && let Err(why) = check_qualified_name(key)
    {
        c.error(
            path.clone().attr(label_key),
            format!("Invalid label key in `{attribute}`"),
            format!("`{key}` {why}. Use a Kubernetes label key such as `{}`.", wording.example_key),
        );
    }
    let Some(op) = expr.get(operator).as_str() else { return };
    if !OPERATORS.contains(&op) {
        c.error(
            path.attr(operator),
            format!("Unsupported operator in `{attribute}`"),
            format!("`{op}` is not one of {} (case-sensitive).", OPERATORS.map(|o| format!("`{o}`")).join(", ")),
        );
        return;
    }
    let values = expr.get(values_key);
    if !values.is_wholly_known() {
        return;
    }
    let list = values.string_elements().unwrap_or_default();
    let problem = match op {
        "In" | "NotIn" if list.is_empty() => Some(format!("`{op}` needs at least one value in `values`.")),
        "Exists" | "DoesNotExist" if !list.is_empty() => Some(format!("`{op}` takes no `values`; remove them.")),
        "Gt" | "Lt" if list.len() != 1 || list[0].parse::<i64>().is_err() => {
            Some(format!("`{op}` needs exactly one value, a whole number (e.g. `values = [\"2\"]`)."))
        }
        _ => None,
    };
    if let Some(detail) = problem {
        c.error(path.attr(values_key), format!("Invalid values for operator `{op}` in `{attribute}`"), detail);
    }
}

/// The terms of a plan.
pub fn terms_from_value(v: &Value) -> Vec<NodeSelectorTerm> {
    v.elements().iter().map(term_from_value).collect()
}

/// The weighted terms of a plan.
pub fn weighted_from_value(v: &Value) -> Vec<PreferredSchedulingTerm> {
    v.elements()
        .iter()
        .map(|t| PreferredSchedulingTerm {
            weight: t.get(weighted_term::weight).as_f64().unwrap_or_default() as i32,
            preference: term_from_value(t),
        })
        .collect()
}

fn term_from_value(term: &Value) -> NodeSelectorTerm {
    use term::match_expressions as expr;
    NodeSelectorTerm {
        match_expressions: Some(
            term.get(term::match_expressions)
                .elements()
                .iter()
                .map(|e| NodeSelectorRequirement {
                    key: e.get(expr::key).as_str().unwrap_or_default().to_string(),
                    operator: e.get(expr::operator).as_str().unwrap_or_default().to_string(),
                    values: e.get(expr::values).string_elements().filter(|v| !v.is_empty()),
                })
                .collect(),
        ),
        match_fields: None,
    }
}

/// Live terms as state. Empty lists the user wrote (`cluster_selector = []`, `values = []`) are kept as written,
/// since Kubernetes and Liqo treat them like absent ones.
pub fn terms_to_value(prior: &Value, terms: &[NodeSelectorTerm]) -> Value {
    as_state(prior, terms, |prior, t| Value::object([(term::match_expressions, requirements_to_value(prior, t))]))
}

/// Live weighted terms as state, as [`terms_to_value`].
pub fn weighted_to_value(prior: &Value, terms: &[PreferredSchedulingTerm]) -> Value {
    as_state(prior, terms, |prior, t| {
        Value::object([
            (weighted_term::weight, Value::Number(f64::from(t.weight))),
            (weighted_term::match_expressions, requirements_to_value(prior, &t.preference)),
        ])
    })
}

/// A live list as state, each item with the prior state's item at its place; none live: as written.
fn as_state<T>(prior: &Value, live: &[T], each: impl Fn(Option<&Value>, &T) -> Value) -> Value {
    if live.is_empty() {
        return lifecycle::empty_as_written(prior);
    }
    Value::List(live.iter().enumerate().map(|(i, item)| each(prior.elements().get(i), item)).collect())
}

fn requirements_to_value(prior_term: Option<&Value>, term: &NodeSelectorTerm) -> Value {
    use term::match_expressions as expr;
    let prior_exprs = prior_term.map(|t| t.get(term::match_expressions).elements()).unwrap_or_default();
    let exprs = term.match_expressions.as_deref().unwrap_or_default();
    Value::List(
        exprs
            .iter()
            .enumerate()
            .map(|(j, e)| {
                let prior_values = prior_exprs.get(j).map(|p| p.get(expr::values)).unwrap_or(&Value::Null);
                let values = match e.values.as_deref() {
                    Some(v) if !v.is_empty() => Value::string_list(v.iter().cloned()),
                    _ => lifecycle::empty_as_written(prior_values),
                };
                Value::object([
                    (expr::key, Value::string(&e.key)),
                    (expr::operator, Value::string(&e.operator)),
                    (expr::values, values),
                ])
            })
            .collect(),
    )
}
