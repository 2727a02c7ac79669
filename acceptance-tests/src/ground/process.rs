//! Starting and stopping the ground's processes (etcd, kube-apiserver, kube-controller-manager, simulator).
//!
//! Two lifetimes:
//! * [`Lifetime::Attached`] (tests, benchmarks): every child gets `PR_SET_PDEATHSIG = SIGKILL`, so it dies with
//!   the process that started it even when that process panics, aborts or is killed and no destructor runs.
//!   The kernel sends the signal when the *thread* that forked the child exits, so attached children are forked
//!   by one dedicated thread that lives as long as the process.
//! * [`Lifetime::Detached`] (`ground up`): children get their own process group and outlive `up`; `ground down`
//!   stops them through the PIDs recorded in the ground's state file, after checking that each PID still
//!   belongs to the process that was started (its start time), so a recycled PID is never signalled.
use std::fs::OpenOptions;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use rustix::process::{Pid, Signal};
use serde::{Deserialize, Serialize};

use crate::observe::{self, Seen};

/// How long the ground's processes may outlive the process that starts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifetime {
    /// Killed by the kernel when the starting process exits (tests).
    Attached,
    /// Keep running after the starting process exits (`ground up`).
    Detached,
}

/// What to run and where its output goes.
pub struct Spec {
    /// Short label used in logs and errors, e.g. `milan/kube-apiserver`.
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Set in the child's environment, on top of this process's.
    pub env: Vec<(String, String)>,
    /// stdout and stderr are appended here.
    pub log: PathBuf,
}

/// Identity of a started process, enough to find and stop it later from another process.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Record {
    pub name: String,
    pub pid: u32,
    /// Start time in clock ticks after boot (`/proc/<pid>/stat` field 22): a recycled PID has another one.
    pub start_time: u64,
    pub log: PathBuf,
}

/// A child this process started and owns.
pub struct Supervised {
    child: Child,
    record: Record,
}

impl Supervised {
    pub fn record(&self) -> &Record {
        &self.record
    }

    /// `Some(status)` once the process has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGKILL (a crash, no graceful shutdown) and reap.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGSTOP: the process keeps its sockets, so the kernel still accepts connections that nothing answers.
    pub fn freeze(&self) -> io::Result<()> {
        signal(self.record.pid, Signal::STOP)
    }

    /// SIGCONT after [`Supervised::freeze`].
    pub fn thaw(&self) -> io::Result<()> {
        signal(self.record.pid, Signal::CONT)
    }
}

/// Starts `spec` with the given lifetime.
pub fn spawn(spec: &Spec, lifetime: Lifetime) -> Result<Supervised> {
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.log)
        .with_context(|| format!("opening log file {} for {}", spec.log.display(), spec.name))?;
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(log.try_clone().context("duplicating a log file handle")?)
        .stderr(log);
    let child = match lifetime {
        Lifetime::Attached => spawn_attached(command),
        Lifetime::Detached => {
            // Its own process group: a Ctrl-C in the terminal that ran `ground up` must not reach it later.
            command.process_group(0);
            command.spawn()
        }
    }
    .with_context(|| format!("starting {} ({})", spec.name, spec.program.display()))?;
    let pid = child.id();
    let start_time = start_time(pid).with_context(|| format!("reading the start time of {} (pid {pid})", spec.name))?;
    Ok(Supervised { child, record: Record { name: spec.name.clone(), pid, start_time, log: spec.log.clone() } })
}

/// Spawns `command` so that it is killed when this process exits, however it exits.
pub fn spawn_attached(mut command: Command) -> io::Result<Child> {
    pre_exec_die_with_parent(&mut command);
    spawn_on_lifelong_thread(command)
}

/// Makes the child receive SIGKILL when the thread that forked it exits.
// The only unsafe code of the crate: `pre_exec` is unsafe because the closure runs between fork and exec.
#[allow(unsafe_code)]
fn pre_exec_die_with_parent(command: &mut Command) {
    let parent = rustix::process::getpid();
    // SAFETY: the closure only issues two raw system calls (prctl, getppid) and builds errors from errno values;
    // it neither allocates nor takes locks, so it is async-signal-safe as required after fork.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
            // The parent may have exited between fork and prctl, in which case the signal never comes.
            if rustix::process::getppid() != Some(parent) {
                return Err(rustix::io::Errno::SRCH.into());
            }
            Ok(())
        });
    }
}

type SpawnJob = (Command, mpsc::Sender<io::Result<Child>>);

/// Forks `command` on a thread that never exits (see the module comment on PDEATHSIG).
fn spawn_on_lifelong_thread(command: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<mpsc::Sender<SpawnJob>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (jobs, incoming) = mpsc::channel::<SpawnJob>();
        thread::Builder::new()
            .name("ground-spawner".into())
            // The sender lives in a static, so this loop only ends with the process.
            .spawn(move || {
                for (mut command, reply) in incoming {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("the ground's spawner thread must start");
        jobs
    });
    let (reply, result) = mpsc::channel();
    spawner.send((command, reply)).map_err(|_| io::Error::other("the ground's spawner thread has stopped"))?;
    result.recv().map_err(|_| io::Error::other("the ground's spawner thread has stopped"))?
}

/// Stops owned children: SIGTERM to all at once, SIGKILL to those still running after `grace`.
pub fn stop_owned(children: &mut [Supervised], grace: Duration) {
    for supervised in children.iter_mut() {
        if supervised.exited().is_none() {
            let _ = signal(supervised.record.pid, Signal::TERM);
            // A frozen process (a fault test's) acts on SIGTERM only once it runs again.
            let _ = supervised.thaw();
        }
    }
    // Running out of grace is no failure: what still runs then gets SIGKILL.
    let _ = observe::until_blocking(grace, Duration::from_millis(50), "the processes to exit on SIGTERM", || {
        Ok(match children.iter_mut().all(|s| s.exited().is_some()) {
            true => Seen::Done(()),
            false => Seen::NotYet(String::new()),
        })
    });
    for supervised in children.iter_mut() {
        if supervised.exited().is_none() {
            supervised.kill();
        }
    }
}

/// Stops recorded processes that this process does not own (`ground down`). Returns the names of those that
/// were still running; a record whose PID is gone or belongs to another process is skipped.
pub fn stop_recorded(records: &[Record], grace: Duration) -> Vec<String> {
    let running: Vec<&Record> = records.iter().filter(|r| is_running(r)).collect();
    for record in &running {
        let _ = signal(record.pid, Signal::TERM);
    }
    // Running out of grace is no failure: what still runs then gets SIGKILL.
    let _ = observe::until_blocking(grace, Duration::from_millis(50), "the processes to exit on SIGTERM", || {
        Ok(match running.iter().any(|r| is_running(r)) {
            true => Seen::NotYet(String::new()),
            false => Seen::Done(()),
        })
    });
    for record in running.iter().filter(|r| is_running(r)) {
        let _ = signal(record.pid, Signal::KILL);
    }
    running.iter().map(|r| r.name.clone()).collect()
}

/// True when the recorded process still runs (same PID, same start time, not a zombie).
pub fn is_running(record: &Record) -> bool {
    match stat_fields(record.pid) {
        Ok(fields) => fields.state != 'Z' && fields.start_time == record.start_time,
        Err(_) => false,
    }
}

/// True when some process has this PID (it may be unrelated to any recorded one).
pub fn pid_exists(pid: u32) -> bool {
    match signal_test(pid) {
        Ok(()) => true,
        Err(err) => err.raw_os_error() == Some(rustix::io::Errno::PERM.raw_os_error()),
    }
}

/// Last `lines` lines of a log file, for error messages about a process that died.
pub fn log_tail(path: &Path, lines: usize) -> String {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(err) => format!("(log {} unreadable: {err})", path.display()),
    }
}

fn signal(pid: u32, sig: Signal) -> io::Result<()> {
    let pid = i32::try_from(pid).ok().and_then(Pid::from_raw).ok_or_else(|| io::Error::other("invalid pid"))?;
    rustix::process::kill_process(pid, sig).map_err(io::Error::from)
}

fn signal_test(pid: u32) -> io::Result<()> {
    let pid = i32::try_from(pid).ok().and_then(Pid::from_raw).ok_or_else(|| io::Error::other("invalid pid"))?;
    rustix::process::test_kill_process(pid).map_err(io::Error::from)
}

/// Runs a command attached to this process (killed if the test process dies) and waits for it without
/// blocking the async runtime; returns its exit status and CPU time ([`try_wait_with_cpu`]). If the awaiting future
/// is dropped (a panicking test) or the command exceeds `timeout`, the child is killed — by the same thread that
/// reaps it, so never after its PID was reused.
pub async fn run_to_completion(command: Command, timeout: Duration) -> Result<(ExitStatus, Duration)> {
    struct CancelOnDrop(Arc<AtomicBool>);
    impl Drop for CancelOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let mut child = spawn_attached(command)?;
    let cancel = Arc::new(AtomicBool::new(false));
    let _guard = CancelOnDrop(cancel.clone());
    let cancelled = cancel.clone();
    let waiter = tokio::task::spawn_blocking(move || -> io::Result<(ExitStatus, Duration, bool)> {
        loop {
            if let Some((status, cpu)) = try_wait_with_cpu(&mut child)? {
                return Ok((status, cpu, false));
            }
            if cancelled.load(Ordering::SeqCst) {
                child.kill()?;
                return Ok((child.wait()?, Duration::ZERO, true));
            }
            thread::sleep(Duration::from_millis(20));
        }
    });
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(waiter, deadline);
    let (status, cpu, killed) = tokio::select! {
        joined = &mut waiter => joined??,
        () = &mut deadline => {
            cancel.store(true, Ordering::SeqCst);
            waiter.await??
        }
    };
    if killed {
        anyhow::bail!("killed after {timeout:?} without finishing");
    }
    Ok((status, cpu))
}

/// `child`'s exit status and CPU time (user + system, its own and that of every descendant it waited for: a
/// Terraform CLI's provider processes), once it has exited; `None` while it runs. Reaps it. The CPU time is read
/// from `/proc` while the exited child is still a zombie (`waitid` with `WNOWAIT` leaves it so), since
/// [`Child::try_wait`] returns no resource usage.
pub fn try_wait_with_cpu(child: &mut Child) -> io::Result<Option<(ExitStatus, Duration)>> {
    use rustix::process::{WaitId, WaitIdOptions, waitid};
    let pid = Pid::from_child(child);
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    if waitid(WaitId::Pid(pid), options)?.is_none() {
        return Ok(None);
    }
    let cpu = stat_fields(child.id()).map(|f| f.cpu).map_err(|e| io::Error::other(format!("{e:#}")))?;
    let status = child.try_wait()?.ok_or_else(|| io::Error::other("an exited child was not reaped"))?;
    Ok(Some((status, cpu)))
}

struct StatFields {
    state: char,
    start_time: u64,
    /// utime + stime + cutime + cstime.
    cpu: Duration,
}

fn start_time(pid: u32) -> Result<u64> {
    Ok(stat_fields(pid)?.start_time)
}

fn stat_fields(pid: u32) -> Result<StatFields> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Field 2 (comm) is parenthesised and may contain spaces; fields after it are space-separated, starting
    // with field 3 (state). Field 22 (starttime) is therefore the 20th after the closing parenthesis.
    let rest = stat.rsplit_once(')').map(|(_, rest)| rest).ok_or_else(|| anyhow!("malformed /proc/{pid}/stat"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first().and_then(|s| s.chars().next()).ok_or_else(|| anyhow!("no state in /proc/{pid}/stat"))?;
    let field = |i: usize, what: &str| -> Result<u64> {
        fields.get(i).ok_or_else(|| anyhow!("no {what} in /proc/{pid}/stat"))?.parse().context(what.to_owned())
    };
    let start_time = field(19, "start time")?;
    // Fields 14-17 (utime, stime, cutime, cstime), in clock ticks.
    let ticks = field(11, "utime")? + field(12, "stime")? + field(13, "cutime")? + field(14, "cstime")?;
    let cpu = Duration::from_secs_f64(ticks as f64 / rustix::param::clock_ticks_per_second() as f64);
    Ok(StatFields { state, start_time, cpu })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attached_child_is_recorded_and_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let spec = Spec {
            name: "sleeper".into(),
            program: "sleep".into(),
            args: vec!["30".into()],
            env: Vec::new(),
            log: dir.path().join("sleeper.log"),
        };
        let mut child = spawn(&spec, Lifetime::Attached).unwrap();
        let record = child.record().clone();
        assert!(is_running(&record), "a just-started child must be seen as running");
        stop_owned(std::slice::from_mut(&mut child), Duration::from_secs(5));
        assert!(!is_running(&record), "stop_owned must end the child");
    }

    #[test]
    fn an_exited_child_reports_its_cpu_time_and_its_waited_childrens() {
        // A shell that burns CPU itself and in a child it waits for.
        let burn = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done";
        let mut command = Command::new("bash");
        command.args(["-c", &format!("{burn}; bash -c '{burn}'; exit 3")]);
        let mut child = spawn_attached(command).unwrap();
        let pid = child.id();
        let (status, cpu) = loop {
            if let Some(done) = try_wait_with_cpu(&mut child).unwrap() {
                break done;
            }
            thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(status.code(), Some(3));
        assert!(cpu >= Duration::from_millis(100), "two busy loops took {cpu:?} of CPU");
        assert!(!pid_exists(pid), "the child is reaped");
    }

    #[test]
    fn a_record_with_another_start_time_is_not_running() {
        let me = std::process::id();
        let record = Record { name: "me".into(), pid: me, start_time: start_time(me).unwrap() + 1, log: "x".into() };
        assert!(!is_running(&record), "a recycled PID must not be mistaken for the recorded process");
        assert!(stop_recorded(&[record], Duration::from_millis(10)).is_empty());
    }
}
