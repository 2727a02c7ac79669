//! Provider logs as hclog JSON lines on stderr.
//!
//! stdout belongs to the go-plugin handshake. Terraform parses JSON lines on a plugin's stderr (`@level`,
//! `@message`, `@module`, `@timestamp`, other keys as fields) into its own log, so `TF_LOG_PROVIDER=debug`
//! selects provider logs by level. Lines below the level Terraform asked for (`TF_LOG_PROVIDER`, else
//! `TF_LOG`, both visible to the plugin process) are not written at all.
//!
//! Never pass configuration or state values here: they hold kubeconfigs and tokens.
use std::io::Write;
use std::sync::OnceLock;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Trace => "trace",
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// `None` means logging is off.
fn threshold() -> Option<Level> {
    static THRESHOLD: OnceLock<Option<Level>> = OnceLock::new();
    *THRESHOLD.get_or_init(|| {
        let setting = std::env::var("TF_LOG_PROVIDER").or_else(|_| std::env::var("TF_LOG")).unwrap_or_default();
        parse_level(&setting)
    })
}

/// Terraform's level names; `json` is its "trace, as JSON" setting. Unset or unrecognised means info, so a
/// provider started by hand (`--debug`) still reports what it does.
fn parse_level(setting: &str) -> Option<Level> {
    match setting.trim().to_ascii_lowercase().as_str() {
        "off" => None,
        "trace" | "json" => Some(Level::Trace),
        "debug" => Some(Level::Debug),
        "warn" => Some(Level::Warn),
        "error" => Some(Level::Error),
        _ => Some(Level::Info),
    }
}

pub fn enabled(level: Level) -> bool {
    threshold().is_some_and(|t| level >= t)
}

/// Writes one log line with extra `fields` (plain strings: names, IDs, durations — never values).
pub fn log(level: Level, message: &str, fields: &[(&str, &str)]) {
    if !enabled(level) {
        return;
    }
    let line = format_line(level, message, fields, &timestamp());
    // One write per line so lines from concurrent requests do not interleave.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

pub fn trace(message: &str, fields: &[(&str, &str)]) {
    log(Level::Trace, message, fields);
}
pub fn debug(message: &str, fields: &[(&str, &str)]) {
    log(Level::Debug, message, fields);
}
pub fn info(message: &str, fields: &[(&str, &str)]) {
    log(Level::Info, message, fields);
}
pub fn warn(message: &str, fields: &[(&str, &str)]) {
    log(Level::Warn, message, fields);
}
pub fn error(message: &str, fields: &[(&str, &str)]) {
    log(Level::Error, message, fields);
}

fn format_line(level: Level, message: &str, fields: &[(&str, &str)], timestamp: &str) -> String {
    let mut m = serde_json::Map::new();
    for (k, v) in fields {
        m.insert((*k).to_string(), serde_json::Value::String((*v).to_string()));
    }
    m.insert("@level".into(), level.as_str().into());
    m.insert("@message".into(), message.into());
    m.insert("@module".into(), "provider".into());
    m.insert("@timestamp".into(), timestamp.into());
    let mut line = serde_json::Value::Object(m).to_string();
    line.push('\n');
    line
}

/// go-plugin parses `@timestamp` with the layout `2006-01-02T15:04:05.000000Z07:00`: exactly six fractional
/// digits.
fn timestamp() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        now.microsecond()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_hclog_json() {
        let line = format_line(Level::Warn, "refused \"x\"", &[("peer", "127.0.0.1:1")], "2026-01-02T03:04:05.000006Z");
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
        let j: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(j["@level"], "warn");
        assert_eq!(j["@message"], "refused \"x\"");
        assert_eq!(j["@module"], "provider");
        assert_eq!(j["@timestamp"], "2026-01-02T03:04:05.000006Z");
        assert_eq!(j["peer"], "127.0.0.1:1");
    }

    #[test]
    fn levels_follow_terraform_names() {
        assert_eq!(parse_level("DEBUG"), Some(Level::Debug));
        assert_eq!(parse_level("json"), Some(Level::Trace));
        assert_eq!(parse_level("off"), None);
        assert_eq!(parse_level(""), Some(Level::Info));
        let ts = timestamp();
        assert_eq!(ts.len(), "2026-01-02T03:04:05.000006Z".len(), "{ts}");
    }
}
