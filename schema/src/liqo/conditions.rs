//! Condition shapes used by Liqo's status fields and lookup by type.
//!
//! Liqo uses two condition shapes: the standard `metav1.Condition` (Configuration) and its own
//! `{type, status, reason?, message?, lastTransitionTime?}` (ResourceSlice, VirtualNode, ForeignCluster,
//! NamespaceOffloading remote-namespace conditions). [`ConditionLike`] lets callers look both up by type.
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use serde::{Deserialize, Serialize};

/// Liqo's own condition shape (`type` and `status` are free strings whose values each kind documents).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiqoCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// Read access shared by both condition shapes.
pub trait ConditionLike {
    fn condition_type(&self) -> &str;
    fn condition_status(&self) -> &str;
    fn condition_reason(&self) -> Option<&str>;
    fn condition_message(&self) -> Option<&str>;
}

impl ConditionLike for LiqoCondition {
    fn condition_type(&self) -> &str {
        &self.type_
    }
    fn condition_status(&self) -> &str {
        &self.status
    }
    fn condition_reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }
    fn condition_message(&self) -> Option<&str> {
        self.message.as_deref()
    }
}

impl ConditionLike for Condition {
    fn condition_type(&self) -> &str {
        &self.type_
    }
    fn condition_status(&self) -> &str {
        &self.status
    }
    fn condition_reason(&self) -> Option<&str> {
        Some(self.reason.as_str()).filter(|r| !r.is_empty())
    }
    fn condition_message(&self) -> Option<&str> {
        Some(self.message.as_str()).filter(|m| !m.is_empty())
    }
}

/// The condition of type `type_` in an optional condition list (Liqo never repeats a type).
pub fn find_condition<'a, C: ConditionLike>(conditions: Option<&'a [C]>, type_: &str) -> Option<&'a C> {
    conditions?.iter().find(|c| c.condition_type() == type_)
}

/// Replace the condition of the same type (or append it), keeping `lastTransitionTime` when the status did not
/// change — the way Liqo's controllers update their conditions.
pub fn upsert_liqo_condition(conditions: &mut Vec<LiqoCondition>, mut new: LiqoCondition) {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(existing) => {
            if existing.status == new.status {
                new.last_transition_time = existing.last_transition_time.clone().or(new.last_transition_time);
            }
            *existing = new;
        }
        None => conditions.push(new),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(t: &str, s: &str) -> LiqoCondition {
        LiqoCondition { type_: t.into(), status: s.into(), ..Default::default() }
    }

    #[test]
    fn finds_by_type() {
        let list = [cond("Authentication", "Accepted"), cond("Resources", "Denied")];
        assert_eq!(find_condition(Some(&list[..]), "Resources").map(|c| c.condition_status()), Some("Denied"));
        assert!(find_condition(Some(&list[..]), "Node").is_none());
        assert!(find_condition::<LiqoCondition>(None, "Node").is_none());
    }

    #[test]
    fn upsert_keeps_transition_time_when_status_unchanged() {
        let t = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        let mut list = vec![LiqoCondition { last_transition_time: Some(t.clone()), ..cond("Node", "Running") }];
        upsert_liqo_condition(&mut list, LiqoCondition { message: Some("m".into()), ..cond("Node", "Running") });
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].last_transition_time, Some(t));
        assert_eq!(list[0].message.as_deref(), Some("m"));
        upsert_liqo_condition(&mut list, cond("VirtualKubelet", "Running"));
        assert_eq!(list.len(), 2);
    }

    #[test]
    fn serialises_without_nulls() {
        let json = serde_json::to_value(cond("Authentication", "Accepted")).unwrap();
        assert_eq!(json, serde_json::json!({"type": "Authentication", "status": "Accepted"}));
    }
}
