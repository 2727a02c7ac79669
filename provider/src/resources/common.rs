//! Plan helpers of the resources not yet served by the lifecycle driver.
use liqo_schema::tf::{Diagnostics, Value};

/// True when the attribute differs between prior state and the proposed new state.
pub fn changed(prior: &Value, proposed: &Value, attr: &str) -> bool {
    !prior.is_null() && prior.get(attr) != proposed.get(attr)
}

/// State upgrade of a type whose only change since schema version 0 (0.2.0) is that `attribute` is gone (the
/// kubeconfig that held the consumer's private key): version 0 loses it, the current version passes as it is.
pub fn upgrade_dropping_v0_attribute(
    type_name: &str,
    attribute: &str,
    current: i64,
    version: i64,
    mut state: serde_json::Value,
) -> Result<serde_json::Value, Diagnostics> {
    match version {
        0 => {
            if let Some(attributes) = state.as_object_mut() {
                attributes.remove(attribute);
            }
            Ok(state)
        }
        v if v == current => Ok(state),
        other => Err(crate::errors::unknown_schema_version(type_name, other, current)),
    }
}
