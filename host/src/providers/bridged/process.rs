//! A stdio server's child process: started in a process group of its own, with its stderr
//! logged (the last lines kept for errors) and its exit status kept once it exits.
//!
//! [`ChildProcess::stop`] ends it gracefully: the caller has closed its stdin (by dropping the
//! connection); the group is sent SIGTERM, given [`STOP_GRACE`] to exit, then SIGKILL. Where
//! there are no signals (Windows) it is given the same grace to exit on its closed stdin, then
//! killed through its waiting task. The process is also killed when its waiting task is dropped
//! (the host's runtime ending).

use std::{
    collections::VecDeque,
    process::{ExitStatus, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use crate::util::lock::lock;
use tokio::{
    io::AsyncBufReadExt as _,
    process::{ChildStdin, ChildStdout, Command},
    sync::Notify,
};

/// How many of a child's last stderr lines an error quotes.
const STDERR_LINES: usize = 10;

/// How long a stopped child has to exit before it is killed.
pub(super) const STOP_GRACE: Duration = Duration::from_secs(5);

/// A running (or exited) child process.
#[derive(Debug)]
pub(super) struct ChildProcess {
    pid: u32,
    status: Arc<Mutex<Option<ExitStatus>>>,
    exited: Arc<Notify>,
    /// Tells the waiting task, which owns the child, to kill it.
    kill: Arc<Notify>,
}

/// The last stderr lines of a server's children.
pub(super) type StderrLines = Arc<Mutex<VecDeque<String>>>;

impl ChildProcess {
    /// Starts `command` for `server` with piped stdio, in a process group of its own; its stderr
    /// lines are logged and the last ones kept in `stderr` (cleared first).
    pub(super) fn spawn(
        mut command: Command,
        server: &str,
        stderr: &StderrLines,
    ) -> std::io::Result<(Self, ChildStdout, ChildStdin)> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        lock(stderr).clear();
        let mut child = command.spawn()?;
        let missing = || std::io::Error::other("the child's stdio was not piped");
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        if let Some(err) = child.stderr.take() {
            tokio::spawn(keep_stderr(server.to_owned(), err, Arc::clone(stderr)));
        }
        let process = Self {
            pid: child.id().unwrap_or_default(),
            status: Arc::default(),
            exited: Arc::default(),
            kill: Arc::default(),
        };
        let (status, exited) = (Arc::clone(&process.status), Arc::clone(&process.exited));
        let kill = Arc::clone(&process.kill);
        tokio::spawn(async move {
            let waited = tokio::select! {
                waited = child.wait() => waited,
                () = kill.notified() => {
                    let _ = child.start_kill();
                    child.wait().await
                }
            };
            *lock(&status) = waited.ok();
            exited.notify_waiters();
        });
        Ok((process, stdout, stdin))
    }

    /// Its process id.
    pub(super) fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether it has not been seen to exit.
    pub(super) fn is_running(&self) -> bool {
        lock(&self.status).is_none()
    }

    /// How it ended, waiting up to `wait` for it to end; `None` while it runs.
    pub(super) async fn ended(&self, wait: Duration) -> Option<ExitStatus> {
        let exited = self.exited.notified();
        if let Some(status) = *lock(&self.status) {
            return Some(status);
        }
        let _ = tokio::time::timeout(wait, exited).await;
        *lock(&self.status)
    }

    /// Sends SIGTERM to its process group, waits up to [`STOP_GRACE`] for it to exit (blocking
    /// the thread), then sends SIGKILL to the group and kills the process itself.
    pub(super) fn stop(&self) {
        self.signal_group(Signal::Term);
        let deadline = Instant::now() + STOP_GRACE;
        while !self.has_exited() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill();
    }

    /// Sends SIGKILL to its process group and kills the process itself, at once: for a process
    /// that cannot run its stop hook (frozen, stopped).
    pub(super) fn kill(&self) {
        self.signal_group(Signal::Kill);
        self.kill.notify_one();
    }

    /// Whether it has exited, reaped or not.
    fn has_exited(&self) -> bool {
        if lock(&self.status).is_some() {
            return true;
        }
        #[cfg(unix)]
        {
            use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
            let Some(pid) = Pid::from_raw(self.pid.try_into().unwrap_or_default()) else {
                return true;
            };
            let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
            // No such child (already reaped) counts as exited.
            !matches!(waitid(WaitId::Pid(pid), options), Ok(None))
        }
        #[cfg(not(unix))]
        false
    }

    /// Sends SIGTERM to its process group (what it started in turn goes too); where there are
    /// no signals, kills the process.
    pub(super) fn terminate(&self) {
        self.signal_group(Signal::Term);
        #[cfg(not(unix))]
        self.kill.notify_one();
    }

    fn signal_group(&self, signal: Signal) {
        #[cfg(unix)]
        if let Some(pid) = rustix::process::Pid::from_raw(self.pid.try_into().unwrap_or_default()) {
            let signal = match signal {
                Signal::Term => rustix::process::Signal::TERM,
                Signal::Kill => rustix::process::Signal::KILL,
            };
            let _ = rustix::process::kill_process_group(pid, signal);
        }
        #[cfg(not(unix))]
        let _ = signal;
    }
}

#[derive(Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

/// How a process ended, in words: "exited with code 3", "was killed by signal 6 (SIGABRT)".
pub(super) fn describe(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt as _;
        if let Some(signal) = status.signal() {
            let name = match signal {
                4 => " (SIGILL)",
                6 => " (SIGABRT)",
                7 => " (SIGBUS)",
                8 => " (SIGFPE)",
                9 => " (SIGKILL)",
                11 => " (SIGSEGV)",
                15 => " (SIGTERM)",
                _ => "",
            };
            return format!("was killed by signal {signal}{name}");
        }
    }
    match status.code() {
        Some(code) => format!("exited with code {code}"),
        None => format!("ended ({status})"),
    }
}

/// Logs each stderr line of `server`'s child and keeps the last ones in `kept`.
async fn keep_stderr(server: String, stderr: tokio::process::ChildStderr, kept: StderrLines) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(server = %server, "stderr: {line}");
        let mut kept = lock(&kept);
        if kept.len() == STDERR_LINES {
            kept.pop_front();
        }
        kept.push_back(line);
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_exit_is_described_by_its_code_or_signal() {
        let stderr = StderrLines::default();
        let mut command = Command::new("sh");
        command.args(["-c", "echo bye >&2; kill -ABRT $$"]);
        let (child, _out, _in) = ChildProcess::spawn(command, "t", &stderr).unwrap();
        let status = child.ended(Duration::from_secs(10)).await.unwrap();
        assert_eq!(describe(status), "was killed by signal 6 (SIGABRT)");
        let mut command = Command::new("sh");
        command.args(["-c", "exit 3"]);
        let (child, _out, _in) = ChildProcess::spawn(command, "t", &stderr).unwrap();
        let status = child.ended(Duration::from_secs(10)).await.unwrap();
        assert_eq!(describe(status), "exited with code 3");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn stop_ends_a_child_that_ignores_sigterm() {
        let mut command = Command::new("sh");
        command.args(["-c", "trap '' TERM; echo ready; sleep 30"]);
        let (child, out, _in) = ChildProcess::spawn(command, "t", &StderrLines::default()).unwrap();
        let mut ready = String::new();
        tokio::io::BufReader::new(out)
            .read_line(&mut ready)
            .await
            .unwrap();
        let child = Arc::new(child);
        let stopping = Arc::clone(&child);
        let started = Instant::now();
        tokio::task::spawn_blocking(move || stopping.stop())
            .await
            .unwrap();
        assert!(started.elapsed() >= STOP_GRACE, "it was given its grace");
        let status = child.ended(Duration::from_secs(5)).await.unwrap();
        assert_eq!(describe(status), "was killed by signal 9 (SIGKILL)");
    }
}
