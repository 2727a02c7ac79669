//! The simulator's log lines and Events, all marked as simulated.
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

/// Reporting controller of every Event the simulator records.
pub const REPORTING_CONTROLLER: &str = "simulated-liqo";

/// Writes one log line `simulated liqo <time> [<cluster>] <message>` to stderr.
macro_rules! log_line {
    ($cluster:expr, $($arg:tt)*) => {
        $crate::simulator::log::write(&$cluster, format_args!($($arg)*))
    };
}

pub fn write(cluster: &str, message: std::fmt::Arguments<'_>) {
    let now = time::OffsetDateTime::now_utc();
    let (h, m, s) = now.to_hms();
    eprintln!("simulated liqo {h:02}:{m:02}:{s:02}.{:03} [{cluster}] {message}", now.millisecond());
}

/// Records Events in one cluster (repeated Events are aggregated into series by kube's recorder).
pub struct Events {
    recorder: Recorder,
    cluster: String,
}

impl Events {
    pub fn new(client: kube::Client, cluster: &str) -> Events {
        let reporter =
            Reporter { controller: REPORTING_CONTROLLER.into(), instance: Some(format!("simulated-liqo-{cluster}")) };
        Events { recorder: Recorder::new(client, reporter), cluster: cluster.into() }
    }

    pub async fn normal(&self, regarding: &ObjectReference, reason: &str, note: &str) {
        self.publish(regarding, EventType::Normal, reason, note).await
    }

    pub async fn warning(&self, regarding: &ObjectReference, reason: &str, note: &str) {
        self.publish(regarding, EventType::Warning, reason, note).await
    }

    /// Logs the Event too; a failure to record it is only logged, since Events are best-effort in Liqo as well.
    async fn publish(&self, regarding: &ObjectReference, type_: EventType, reason: &str, note: &str) {
        let what = describe(regarding);
        log_line!(self.cluster, "{what}: {reason}: {note}");
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(truncate(&format!("simulated: {note}"), 1000)),
            action: reason.into(),
            secondary: None,
        };
        match self.recorder.publish(&event, regarding).await {
            Err(err) if !super::ops::is_namespace_terminating(&err) => {
                log_line!(self.cluster, "could not record Event {reason} on {what}: {err}");
            }
            _ => {}
        }
    }
}

/// `Kind namespace/name` (or `Kind name` for cluster-scoped objects), the way errors name objects.
pub fn describe(r: &ObjectReference) -> String {
    let kind = r.kind.as_deref().unwrap_or("object");
    let name = r.name.as_deref().unwrap_or("?");
    match r.namespace.as_deref() {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}
