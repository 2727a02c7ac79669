//! Terraform schema building blocks: types, values, schemas, paths and diagnostics.
mod diag;
mod schema;
mod value;

pub use diag::{Diagnostic, Diagnostics, Severity};
pub use schema::{Attribute, Block, NestedBlock, NestedType, Nesting, Schema};
pub use value::{AttributePath, Key, PathStep, Type, Value};
