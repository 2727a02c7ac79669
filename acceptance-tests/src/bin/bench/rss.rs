//! Peak RSS and CPU time of provider processes: the CLI runs a `/bin/sh` wrapper instead of the provider binary,
//! and the wrapper runs the provider under GNU `time` (`%M`, maximum resident set size; `%U`/`%S`, user and system
//! CPU seconds) while the file `record` exists next to it — otherwise it `exec`s the binary directly (one
//! `/bin/sh` start, measured and reported).
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
             if [ -e '{record}' ]; then exec {GNU_TIME} -f '%M %U %S' -o \"{rss}/$$.kb\" '{bin}' \"$@\"; fi\nexec '{bin}' \"$@\"\n",
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

    /// Peak RSS (kB) of each recorded process, sorted, and how many did not exit 0. GNU time writes "Command
    /// exited with non-zero status N" or "Command terminated by signal N" before the figures when the process did
    /// not exit 0; those are counted apart, because a killed provider did not shut down as go-plugin asked.
    pub fn collect(&self) -> Result<(Vec<u64>, usize)> {
        let (records, unclean) = self.records()?;
        let mut peaks: Vec<u64> = records.iter().map(|r| r.0).collect();
        peaks.sort_unstable();
        Ok((peaks, unclean))
    }

    /// User + system CPU time of all processes recorded since `start`.
    pub fn cpu(&self) -> Result<Duration> {
        Ok(Duration::from_secs_f64(self.records()?.0.iter().map(|r| r.1).sum()))
    }

    /// (peak RSS in kB, CPU seconds) of each recorded process, and how many did not exit 0.
    fn records(&self) -> Result<(Vec<(u64, f64)>, usize)> {
        let (mut records, mut unclean) = (Vec::new(), 0);
        for entry in fs::read_dir(self.dir.join("rss"))? {
            let text = fs::read_to_string(entry?.path())?;
            if text.lines().count() > 1 {
                unclean += 1;
            }
            let fields: Vec<&str> = text.lines().last().unwrap_or_default().split_whitespace().collect();
            if let [kb, user, system] = fields[..]
                && let (Ok(kb), Ok(user), Ok(system)) = (kb.parse(), user.parse::<f64>(), system.parse::<f64>())
            {
                records.push((kb, user + system));
            }
        }
        Ok((records, unclean))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_peak_rss_and_cpu_of_clean_and_unclean_exits() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("rss")).unwrap();
        fs::write(dir.path().join("rss/1.kb"), "11264 0.02 0.01\n").unwrap();
        fs::write(dir.path().join("rss/2.kb"), "Command terminated by signal 9\n16384 0.10 0.05\n").unwrap();
        let recorder = RssRecorder { dir: dir.path().to_path_buf() };
        assert_eq!(recorder.collect().unwrap(), (vec![11264, 16384], 1));
        let cpu = recorder.cpu().unwrap().as_secs_f64();
        assert!((cpu - 0.18).abs() < 1e-9, "{cpu}");
        let (text, max) = recorder.summary().unwrap().unwrap();
        assert_eq!(max, 16384);
        assert!(text.contains("(2 processes, 1 did not exit 0)"), "{text}");
    }
}
