//! Kubernetes events about an object. Liqo reports what it cannot put in a status (a missing key Secret, an
//! invalid endpoint, a failed handshake) as Warning events on the object; errors quote them.
use super::list;
use crate::protocol::Ctx;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use kube::api::Api;

/// How many of Liqo's most recent Warning events an error quotes.
const MAX_WARNINGS: usize = 3;

/// The newest distinct Warning notes about the matching objects. Best effort: an identity without access to
/// events simply gets none.
pub async fn warnings_about(ctx: &Ctx, events: &Api<Event>, about: impl Fn(&ObjectReference) -> bool) -> Vec<String> {
    let Ok(events) = list(ctx, events, "").await else {
        return Vec::new();
    };
    latest_warnings(events, about)
}

/// Matches events about the object of this kind and name.
pub fn regarding(kind: &'static str, name: String) -> impl Fn(&ObjectReference) -> bool {
    move |r| r.kind.as_deref() == Some(kind) && r.name.as_deref() == Some(name.as_str())
}

/// The newest distinct Warning notes about the matching objects, newest first.
fn latest_warnings(mut events: Vec<Event>, about: impl Fn(&ObjectReference) -> bool) -> Vec<String> {
    let when = |e: &Event| {
        e.series
            .as_ref()
            .map(|s| s.last_observed_time.0)
            .or(e.event_time.as_ref().map(|t| t.0))
            .or(e.deprecated_last_timestamp.as_ref().map(|t| t.0))
    };
    events.retain(|e| e.type_.as_deref() == Some("Warning") && e.regarding.as_ref().is_some_and(&about));
    events.sort_by_key(|e| std::cmp::Reverse(when(e)));
    let mut notes: Vec<String> = Vec::new();
    for e in events {
        let note = format!("{}: {}", e.reason.unwrap_or_default(), e.note.unwrap_or_default());
        if !notes.contains(&note) {
            notes.push(note);
        }
        if notes.len() == MAX_WARNINGS {
            break;
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, name: &str, type_: &str, note: &str, secs: i64) -> Event {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
        Event {
            type_: Some(type_.into()),
            reason: Some("ConnectionError".into()),
            note: Some(note.into()),
            regarding: Some(ObjectReference { kind: Some(kind.into()), name: Some(name.into()), ..Default::default() }),
            event_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::from_second(secs).unwrap())),
            ..Default::default()
        }
    }

    #[test]
    fn warnings_quote_the_newest_distinct_notes_about_the_object() {
        let events = vec![
            event("Connection", "gw-rome", "Warning", "old", 1),
            event("Connection", "gw-rome", "Normal", "fine", 5),
            event("Connection", "gw-other", "Warning", "elsewhere", 6),
            event("Connection", "gw-rome", "Warning", "new", 4),
            event("Connection", "gw-rome", "Warning", "new", 3),
        ];
        assert_eq!(
            latest_warnings(events, regarding("Connection", "gw-rome".into())),
            ["ConnectionError: new", "ConnectionError: old"]
        );
    }
}
