//! Diagnostics: what the user reads when something is wrong. Every error names the object or attribute,
//! what was expected, and the next step.
use super::AttributePath;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub summary: String,
    pub detail: String,
    pub attribute: Option<AttributePath>,
}

impl Diagnostic {
    pub fn error(summary: impl Into<String>, detail: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Error, summary: summary.into(), detail: detail.into(), attribute: None }
    }
    pub fn warning(summary: impl Into<String>, detail: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Warning, summary: summary.into(), detail: detail.into(), attribute: None }
    }
    pub fn at(mut self, path: AttributePath) -> Diagnostic {
        self.attribute = Some(path);
        self
    }
    /// Error on a top-level attribute.
    pub fn attr_error(key: super::Key, summary: impl Into<String>, detail: impl Into<String>) -> Diagnostic {
        Diagnostic::error(summary, detail).at(AttributePath::root(key))
    }
}

/// A list of diagnostics; an operation failed when it holds at least one error.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn new() -> Diagnostics {
        Diagnostics(Vec::new())
    }
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }
    pub fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(|d| d.severity == Severity::Error)
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter()
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Diagnostics {
        Diagnostics(vec![d])
    }
}
