//! Fault switches: ConfigMap `liqo/liqo-simulator-faults` of each cluster (keys documented in the module docs).
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use liqo_schema::liqo::labels::DEFAULT_LIQO_NAMESPACE;

use super::context::Cluster;
use crate::ground::FAULTS_CONFIGMAP;

pub const DENY_RESOURCE_SLICES: &str = "deny-resource-slices";
pub const FAIL_CONNECTIONS: &str = "fail-connections";
pub const STATUS_DELAY_MS: &str = "status-delay-ms";
pub const DROP_WATCH: &str = "drop-watch";

/// The faults switched on in one cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    pub deny_resource_slices: bool,
    pub fail_connections: bool,
    pub status_delay: Duration,
    pub drop_watch: bool,
}

impl Faults {
    /// Unknown keys and unparsable values are reported in the second element, so a typo in a test is visible in
    /// the simulator's log instead of silently doing nothing.
    pub fn parse(data: &BTreeMap<String, String>) -> (Faults, Vec<String>) {
        let mut faults = Faults::default();
        let mut problems = Vec::new();
        let flag = |key: &str, value: &str, problems: &mut Vec<String>| match value {
            "true" => true,
            "false" | "" => false,
            other => {
                problems.push(format!("{key}={other:?} is neither \"true\" nor \"false\"; treated as false"));
                false
            }
        };
        for (key, value) in data {
            match key.as_str() {
                DENY_RESOURCE_SLICES => faults.deny_resource_slices = flag(key, value, &mut problems),
                FAIL_CONNECTIONS => faults.fail_connections = flag(key, value, &mut problems),
                DROP_WATCH => faults.drop_watch = flag(key, value, &mut problems),
                STATUS_DELAY_MS => match value.parse::<u64>() {
                    Ok(ms) => faults.status_delay = Duration::from_millis(ms),
                    Err(_) => problems.push(format!("{key}={value:?} is not a number of milliseconds; ignored")),
                },
                other => problems.push(format!(
                    "unknown fault key {other:?} (known: {DENY_RESOURCE_SLICES}, {FAIL_CONNECTIONS}, {STATUS_DELAY_MS}, \
                     {DROP_WATCH}); ignored"
                )),
            }
        }
        (faults, problems)
    }
}

/// Keeps the cluster's faults equal to its faults ConfigMap (absent ConfigMap = no faults) until the process
/// ends, waking all its controllers on a change so that e.g. Connections re-evaluate at once.
pub async fn watch_faults(cluster: Arc<Cluster>) {
    let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), DEFAULT_LIQO_NAMESPACE);
    let config = watcher::Config::default().fields(&format!("metadata.name={FAULTS_CONFIGMAP}"));
    let mut events = watcher(api, config).default_backoff().boxed();
    // A relist that finds no ConfigMap (deleted while the watch was down) means no faults.
    let mut listed = false;
    while let Some(event) = events.next().await {
        let data = match event {
            Ok(watcher::Event::Apply(cm)) => cm.data.unwrap_or_default(),
            Ok(watcher::Event::InitApply(cm)) => {
                listed = true;
                cm.data.unwrap_or_default()
            }
            Ok(watcher::Event::Delete(_)) => BTreeMap::new(),
            Ok(watcher::Event::Init) => {
                listed = false;
                continue;
            }
            Ok(watcher::Event::InitDone) if listed => continue,
            Ok(watcher::Event::InitDone) => BTreeMap::new(),
            Err(err) => {
                log_line!(
                    cluster.name,
                    "watching ConfigMap {DEFAULT_LIQO_NAMESPACE}/{FAULTS_CONFIGMAP}: {err}; retrying"
                );
                continue;
            }
        };
        let (faults, problems) = Faults::parse(&data);
        for problem in problems {
            log_line!(cluster.name, "ConfigMap {DEFAULT_LIQO_NAMESPACE}/{FAULTS_CONFIGMAP}: {problem}");
        }
        let changed = cluster.faults_sender().send_if_modified(|current| {
            if *current == faults {
                return false;
            }
            log_line!(cluster.name, "faults now {faults:?}");
            *current = faults;
            true
        });
        if changed {
            cluster.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_keys_and_reports_the_rest() {
        let data: BTreeMap<String, String> =
            [("deny-resource-slices", "true"), ("status-delay-ms", "250"), ("drop-watch", "yes"), ("typo", "true")]
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .into();
        let (faults, problems) = Faults::parse(&data);
        assert!(faults.deny_resource_slices);
        assert!(!faults.fail_connections);
        assert!(!faults.drop_watch);
        assert_eq!(faults.status_delay, Duration::from_millis(250));
        assert_eq!(problems.len(), 2, "{problems:?}");
    }
}
