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
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
