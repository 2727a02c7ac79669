//! The API servers' audit logs: every ground kube-apiserver writes one JSON line per request stage to
//! `<ground dir>/<cluster>/audit.log` (policy: level `Metadata` for everything, stage `RequestReceived` omitted),
//! so tests and benchmarks can count and inspect the requests a client made.
//!
//! Who made a request: the provider configured by [`crate::tf::provider_config`] authenticates with the admin
//! kubeconfig (user `admin`), like the test harness and the simulator; a configuration that points the provider
//! at [`crate::Ground::provider_kubeconfig`] makes its requests the only ones with user
//! [`PROVIDER_USER`]. The user agent does not tell them apart: kube-rs clients (the provider, the harness, the
//! simulator) send none.
use std::collections::HashSet;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

/// The user of [`crate::Ground::provider_kubeconfig`]'s client certificate (group `system:masters`).
pub const PROVIDER_USER: &str = "terraform-provider-liqo";

/// The audit policy every ground API server runs with.
pub const POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
";

/// Size in megabytes at which the API server rotates the log; one rotated file is kept. A 50-cluster ground
/// stays well within the disk budget, and no test writes anywhere near this much.
pub const MAX_SIZE_MB: u32 = 100;

/// One API request, as the audit log records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Authenticated user name: `admin` for the admin kubeconfig, [`PROVIDER_USER`] for the provider's.
    pub user: String,
    /// Kubernetes verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, …
    pub verb: String,
    /// Path and query, e.g. `/api/v1/namespaces/liqo/configmaps/x?fieldManager=…`.
    pub request_uri: String,
    /// Plural resource (`configmaps`, `gatewayservers`, …); `None` for non-resource URLs such as `/readyz`.
    pub resource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// HTTP status; `None` while a long-running request (a watch) is still open.
    pub code: Option<u16>,
    /// The client's `User-Agent` header (empty for kube-rs clients, which send none).
    pub user_agent: String,
}

/// Audit events as the API server writes them (`audit.k8s.io/v1` `Event`, only the fields read here).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    #[serde(rename = "auditID")]
    audit_id: String,
    stage: String,
    verb: String,
    #[serde(rename = "requestURI")]
    request_uri: String,
    user: RawUser,
    #[serde(default)]
    user_agent: String,
    object_ref: Option<RawObjectRef>,
    response_status: Option<RawStatus>,
}

#[derive(Deserialize)]
struct RawUser {
    #[serde(default)]
    username: String,
}

#[derive(Deserialize)]
struct RawObjectRef {
    resource: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
}

#[derive(Deserialize)]
struct RawStatus {
    code: Option<u16>,
}

/// Reads an audit log: one [`Event`] per request, in the order the requests ended. A long-running request
/// (watch) is logged at `ResponseStarted` and again at `ResponseComplete`; it counts once, with the final
/// stage when it has ended. Only the current file is read (see [`MAX_SIZE_MB`] for rotation). A line the
/// API server is still writing (the last one, without its newline) is skipped.
pub fn read(path: &Path) -> Result<Vec<Event>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading audit log {}", path.display()))?;
    let complete = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => "",
    };
    let mut raws = Vec::new();
    for (number, line) in complete.lines().enumerate().filter(|(_, line)| !line.trim().is_empty()) {
        let raw: Raw = serde_json::from_str(line)
            .with_context(|| format!("audit log {} line {}: not an audit event", path.display(), number + 1))?;
        raws.push(raw);
    }
    let ended: HashSet<String> =
        raws.iter().filter(|raw| raw.stage != "ResponseStarted").map(|raw| raw.audit_id.clone()).collect();
    Ok(raws
        .into_iter()
        .filter(|raw| raw.stage != "ResponseStarted" || !ended.contains(&raw.audit_id))
        .map(|raw| {
            let object = raw.object_ref.unwrap_or(RawObjectRef { resource: None, namespace: None, name: None });
            Event {
                user: raw.user.username,
                verb: raw.verb,
                request_uri: raw.request_uri,
                resource: object.resource,
                namespace: object.namespace,
                name: object.name,
                code: raw.response_status.and_then(|status| status.code),
                user_agent: raw.user_agent,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const STARTED_WATCH: &str = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"w1","stage":"ResponseStarted","requestURI":"/api/v1/namespaces?watch=true","verb":"watch","user":{"username":"admin","groups":["system:masters"]},"userAgent":"kube-rs/5.0.0","objectRef":{"resource":"namespaces","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200}}"#;
    const ENDED_WATCH: &str = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"w1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces?watch=true","verb":"watch","user":{"username":"admin"},"userAgent":"kube-rs/5.0.0","objectRef":{"resource":"namespaces","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200}}"#;
    const GET: &str = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"g1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/liqo/configmaps/x","verb":"get","user":{"username":"terraform-provider-liqo"},"userAgent":"kube-rs/5.0.0","objectRef":{"resource":"configmaps","namespace":"liqo","name":"x","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":404}}"#;
    const READYZ: &str = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"r1","stage":"ResponseComplete","requestURI":"/readyz","verb":"get","user":{"username":"admin"},"userAgent":"curl","responseStatus":{"metadata":{},"code":200}}"#;

    fn write(lines: &[&str], trailing: &str) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), format!("{}\n{trailing}", lines.join("\n"))).unwrap();
        file
    }

    #[test]
    fn one_event_per_request_with_object_and_code() {
        let file = write(&[STARTED_WATCH, GET, READYZ, ENDED_WATCH], "");
        let events = read(file.path()).unwrap();
        assert_eq!(events.len(), 3, "the watch counts once: {events:#?}");
        assert_eq!(
            events[0],
            Event {
                user: PROVIDER_USER.into(),
                verb: "get".into(),
                request_uri: "/api/v1/namespaces/liqo/configmaps/x".into(),
                resource: Some("configmaps".into()),
                namespace: Some("liqo".into()),
                name: Some("x".into()),
                code: Some(404),
                user_agent: "kube-rs/5.0.0".into(),
            }
        );
        assert_eq!(events[1].resource, None, "a non-resource URL has no resource");
        assert_eq!(events[2].verb, "watch");
    }

    #[test]
    fn an_open_watch_counts_and_a_half_written_line_is_skipped() {
        let file = write(&[STARTED_WATCH], &GET[..40]);
        let events = read(file.path()).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].verb, "watch");
    }

    #[test]
    fn a_line_that_is_no_audit_event_is_an_error_naming_the_line() {
        let file = write(&[GET, "{\"not\": \"an event\"}"], "");
        let err = format!("{:#}", read(file.path()).unwrap_err());
        assert!(err.contains("line 2"), "{err}");
    }
}
