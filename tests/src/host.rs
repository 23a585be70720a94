//! Running the host binary: one-shot commands ([`run_host`]) and long-running processes
//! ([`HostProcess`], killed on drop).
//!
//! The host's own environment variables are cleared, so a developer's shell cannot change a
//! test's outcome; a test that wants one sets it explicitly.

use std::{
    io::Read,
    net::SocketAddr,
    path::PathBuf,
    process::{Child, Command, ExitStatus, Stdio},
    sync::{Arc, Condvar, Mutex, PoisonError},
    thread,
    time::{Duration, Instant},
};

use crate::{build::host_bin, maps, plugin_dir::PluginDir};

/// The prefix of the host's own environment variables (`REACTOR_MCP_EXTENSIONS`, ...), which
/// are removed from every command, with `RUST_LOG`, unless a test sets them.
const HOST_ENV_PREFIX: &str = "REACTOR_MCP_";

/// How long [`HostProcess::serve`] waits for the host to say where it listens.
const SERVE_TIMEOUT: Duration = Duration::from_secs(20);

/// What a finished host command printed.
#[derive(Debug)]
pub struct Output {
    /// How it exited.
    pub status: ExitStatus,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error (logs and warnings).
    pub stderr: String,
}

impl Output {
    /// Panics, showing both streams, unless the command exited with status 0.
    pub fn assert_success(&self) -> &Self {
        assert!(
            self.status.success(),
            "the host exited with {}\n--- stdout\n{}\n--- stderr\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }

    /// Standard output parsed as JSON. Panics, showing it, if it is not JSON.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> T {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "the host's output is not the JSON expected: {e}\n{}",
                self.stdout
            )
        })
    }
}

fn host_command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(host_bin());
    command.args(args);
    command.env_remove("RUST_LOG");
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with(HOST_ENV_PREFIX) {
            command.env_remove(name);
        }
    }
    command.envs(env.iter().copied());
    command
}

/// Runs `reactor-mcp-server ARGS --plugin-dir DIR` to completion.
pub fn run_host(args: &[&str], dir: &PluginDir) -> Output {
    run_host_with_env(args, dir, &[])
}

/// Runs `reactor-mcp-server ARGS --plugin-dir DIR` to completion with these environment
/// variables set.
pub fn run_host_with_env(args: &[&str], dir: &PluginDir, env: &[(&str, &str)]) -> Output {
    let mut command = host_command(args, env);
    command.arg("--plugin-dir").arg(dir.path());
    output_of(command)
}

/// Runs `reactor-mcp-server ARGS` to completion, adding no `--plugin-dir`.
pub fn run_host_bare(args: &[&str], env: &[(&str, &str)]) -> Output {
    output_of(host_command(args, env))
}

fn output_of(mut command: Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    Output {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Text a child writes to a pipe, collected by a background thread as it arrives.
#[derive(Debug, Default)]
struct Collected {
    state: Mutex<(String, bool)>,
    changed: Condvar,
}

impl Collected {
    fn start(mut pipe: impl Read + Send + 'static) -> Arc<Self> {
        let collected = Arc::new(Self::default());
        let sink = Arc::clone(&collected);
        thread::spawn(move || {
            let mut buffer = [0_u8; 8192];
            loop {
                let read = pipe.read(&mut buffer).unwrap_or(0);
                let mut state = sink.state.lock().unwrap_or_else(PoisonError::into_inner);
                if read == 0 {
                    state.1 = true;
                } else {
                    state.0.push_str(&String::from_utf8_lossy(&buffer[..read]));
                }
                sink.changed.notify_all();
                if read == 0 {
                    break;
                }
            }
        });
        collected
    }

    fn text(&self) -> String {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .clone()
    }

    /// Waits until the pipe closes or `deadline` passes; whether it closed.
    fn wait_closed(&self, deadline: Instant) -> bool {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while !state.1 {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    /// The first complete line containing `needle`, waiting up to `timeout`; `None` when the
    /// pipe closes or time runs out first.
    fn wait_for_line(&self, needle: &str, timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(line) = state
                .0
                .split_inclusive('\n')
                .find(|l| l.ends_with('\n') && l.contains(needle))
            {
                return Some(line.trim_end().to_owned());
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            if state.1 {
                return None;
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// A running host, killed when dropped.
#[derive(Debug)]
pub struct HostProcess {
    child: Child,
    stdout: Arc<Collected>,
    stderr: Arc<Collected>,
    addr: Option<SocketAddr>,
}

impl HostProcess {
    /// Starts `reactor-mcp-server ARGS` with these environment variables set (and the host's
    /// others cleared).
    pub fn spawn(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = host_command(args, env);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        let stdout = Collected::start(child.stdout.take().expect("stdout is piped"));
        let stderr = Collected::start(child.stderr.take().expect("stderr is piped"));
        Self {
            child,
            stdout,
            stderr,
            addr: None,
        }
    }

    /// Starts `reactor-mcp-server serve --port 0 --plugin-dir DIR EXTRA_ARGS` and waits (up to
    /// 20 s) for it to log `listening on http://ADDR/...`.
    pub fn serve(dir: &PluginDir, extra_args: &[&str]) -> Self {
        let plugin_dir = dir.path().to_string_lossy().into_owned();
        let mut args = vec!["serve", "--port", "0", "--plugin-dir", &plugin_dir];
        args.extend_from_slice(extra_args);
        let mut host = Self::spawn(&args, &[]);
        let line = host.wait_for_stderr("listening on http://", SERVE_TIMEOUT);
        let addr = line
            .split("listening on http://")
            .nth(1)
            .and_then(|rest| rest.split(['/', ' ']).next())
            .and_then(|addr| addr.parse().ok());
        host.addr = Some(addr.unwrap_or_else(|| panic!("no address in the host's line `{line}`")));
        host
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The address it listens on (after [`HostProcess::serve`]).
    pub fn addr(&self) -> SocketAddr {
        self.addr
            .expect("the host was not started with HostProcess::serve")
    }

    /// `http://ADDR`, without a path.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr())
    }

    /// The files mapped into the host process.
    pub fn mapped_files(&self) -> Vec<PathBuf> {
        maps::mapped_files(self.pid())
    }

    /// The files of `dir` mapped into the host process: the plugins it has opened.
    pub fn mapped_plugin_libraries(&self, dir: &PluginDir) -> Vec<PathBuf> {
        maps::mapped_plugin_libraries(self.pid(), dir.path())
    }

    /// The file names of [`mapped_plugin_libraries`](Self::mapped_plugin_libraries), sorted.
    pub fn mapped_plugin_file_names(&self, dir: &PluginDir) -> Vec<String> {
        self.mapped_plugin_libraries(dir)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    /// What it has written to standard error so far.
    pub fn stderr_so_far(&self) -> String {
        self.stderr.text()
    }

    /// What it has written to standard output so far.
    pub fn stdout_so_far(&self) -> String {
        self.stdout.text()
    }

    /// The first line of standard error containing `needle`, waiting up to `timeout`.
    /// Panics, showing what it has printed, if no such line comes or the process exits first.
    pub fn wait_for_stderr(&mut self, needle: &str, timeout: Duration) -> String {
        match self.stderr.wait_for_line(needle, timeout) {
            Some(line) => line,
            None => {
                let status = self.child.try_wait().ok().flatten();
                panic!(
                    "the host did not print `{needle}` within {timeout:?} (exit status: {status:?})\n--- stderr\n{}\n--- stdout\n{}",
                    self.stderr_so_far(),
                    self.stdout_so_far()
                )
            }
        }
    }

    /// Waits for the process to exit by itself (up to `timeout`) and for its output to be
    /// collected, and returns its status.
    pub fn wait_for_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.stdout.wait_closed(deadline);
                self.stderr.wait_closed(deadline);
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
