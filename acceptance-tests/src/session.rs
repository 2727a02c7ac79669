//! The per-process scratch directory (`$TMPDIR/liqo-acceptance-<pid>`) holding test grounds, the provider
//! mirror and Terraform working directories.
//!
//! A test binary's shared ground lives in a static that is never dropped, and a crashed test runs no cleanup,
//! so instead of relying on destructors every new session removes the directories of sessions whose process
//! no longer exists.
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{Context, Result};

const PREFIX: &str = "liqo-acceptance-";

/// This process's session directory, created (and stale ones reaped) on first use.
pub fn dir() -> Result<&'static Path> {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    if let Some(dir) = DIR.get() {
        return Ok(dir);
    }
    let root = std::env::temp_dir();
    reap_stale(&root);
    let dir = root.join(format!("{PREFIX}{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating session directory {}", dir.display()))?;
    Ok(DIR.get_or_init(|| dir))
}

fn reap_stale(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !crate::ground::process::pid_exists(pid) {
            if std::env::var_os("LIQO_KEEP_GROUND_LOGS").is_some() {
                // The test command's run: a failed binary's logs stay (its run directory goes after a passing run).
                remove_etcd_data(&entry.path());
            } else {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// Removes etcd's data (the bulk of a ground directory) from every ground of a session directory.
fn remove_etcd_data(session: &Path) {
    let Ok(grounds) = std::fs::read_dir(session) else { return };
    for ground in grounds.flatten() {
        let _ = std::fs::remove_dir_all(ground.path().join("_etcd"));
    }
}

/// Appends `line` to the file the environment variable `var` names, if it is set (the test command sets its ledgers
/// so that its summary can count what the tests did). One short write with O_APPEND: lines from concurrent tests and
/// test processes do not interleave. A failure is reported on stderr, naming `what`; it never fails a test.
pub fn append_to_ledger(var: &str, line: &str, what: &str) {
    let Some(ledger) = std::env::var_os(var) else { return };
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&ledger)
        .and_then(|mut file| std::io::Write::write_all(&mut file, line.as_bytes()));
    if let Err(e) = written {
        eprintln!("could not record {what} in {}: {e}", PathBuf::from(ledger).display());
    }
}
