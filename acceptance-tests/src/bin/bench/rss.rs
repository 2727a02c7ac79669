//! Peak RSS of provider processes: the CLI runs a `/bin/sh` wrapper instead of the provider binary, and the
//! wrapper runs the provider under GNU `time` (`%M`, maximum resident set size) while the file `record` exists
//! next to it — otherwise it `exec`s the binary directly (one `/bin/sh` start, measured and reported).
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;

pub const GNU_TIME: &str = "/usr/bin/time";

/// Writes `dir/name`, a wrapper around `bin` recording into `dir/rss/` while `dir/record` exists.
pub fn write_wrapper(dir: &Path, name: &str, bin: &Path) -> Result<PathBuf> {
    fs::create_dir_all(dir.join("rss"))?;
    let wrapper = dir.join(name);
    let record = dir.join("record");
    let rss = dir.join("rss");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n# Benchmark wrapper: peak RSS of each provider process while {record} exists.\n\
             if [ -e '{record}' ]; then exec {GNU_TIME} -f '%M' -o \"{rss}/$$.kb\" '{bin}' \"$@\"; fi\nexec '{bin}' \"$@\"\n",
            record = record.display(),
            rss = rss.display(),
            bin = bin.display()
        ),
    )?;
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755))?;
    Ok(wrapper)
}

/// Switches recording of one wrapper directory on and off and collects what was recorded.
pub struct RssRecorder {
    pub dir: PathBuf,
}

impl RssRecorder {
    /// Forgets what was recorded and switches recording on.
    pub fn start(&self) -> Result<()> {
        for entry in fs::read_dir(self.dir.join("rss"))? {
            fs::remove_file(entry?.path())?;
        }
        self.resume()
    }

    /// Switches recording on again, keeping what was recorded.
    pub fn resume(&self) -> Result<()> {
        fs::write(self.dir.join("record"), "")?;
        Ok(())
    }

    pub fn stop(&self) {
        let _ = fs::remove_file(self.dir.join("record"));
    }

    /// Peak RSS (kB) of each recorded process, sorted. GNU time writes "Command exited with non-zero status N" or
    /// "Command terminated by signal N" before the figure when the process did not exit 0; those are counted
    /// apart, because a killed provider did not shut down as go-plugin asked.
    pub fn collect(&self) -> Result<(Vec<u64>, usize)> {
        let (mut peaks, mut unclean) = (Vec::new(), 0);
        for entry in fs::read_dir(self.dir.join("rss"))? {
            let text = fs::read_to_string(entry?.path())?;
            if text.lines().count() > 1 {
                unclean += 1;
            }
            if let Some(kb) = text.lines().last().and_then(|l| l.trim().parse().ok()) {
                peaks.push(kb);
            }
        }
        peaks.sort_unstable();
        Ok((peaks, unclean))
    }

    /// "median X MB, max Y MB (n processes)" of what was recorded since `start`.
    pub fn summary(&self) -> Result<Option<(String, u64)>> {
        let (peaks, unclean) = self.collect()?;
        let Some(max) = peaks.last().copied() else { return Ok(None) };
        let med = peaks[peaks.len() / 2];
        let mut text = format!("median {:.1} MB, max {:.1} MB ({} processes", kb_mb(med), kb_mb(max), peaks.len());
        if unclean > 0 {
            text.push_str(&format!(", {unclean} did not exit 0"));
        }
        text.push(')');
        Ok(Some((text, max)))
    }
}

fn kb_mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}
