//! Starting a server process and knowing when it is ready, for the e2e tests, the benchmarks and
//! `cargo xtask conformance`.
//!
//! A [`Launch`] is a program with its arguments and environment. [`Launch::serve`] adds
//! `--ready-file PATH`, a file in a fresh temporary folder, and waits (up to
//! [`READY_TIMEOUT`] unless told otherwise) for the program to write its [`Ready`] object there,
//! as the host does once it listens; it fails early, with what the program wrote to stderr, when
//! the program exits first. [`Launch::spawn`] starts a program without waiting for anything.
//! Either way the [`Process`] collects both output streams as they come (a full pipe would
//! stall the child) and is killed when dropped.
//!
//! The host's own environment variables (`REACTOR_MCP_*`) and `RUST_LOG` are left out of the
//! child's environment unless set with [`Launch::env`], so the caller's shell cannot change
//! what a test checks or a benchmark measures.
//!
//! The crate depends on std and serde_json alone, so that xtask can use it.

mod output;
mod ready;

use std::{
    ffi::{OsStr, OsString},
    fmt,
    fs::{self, File},
    io,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::Arc,
    thread,
    time::{Duration, Instant},
};

pub use ready::Ready;

use output::Collected;
use ready::ReadyDir;

/// How long [`Launch::serve`] waits for the ready file unless [`Launch::timeout`] says.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// The prefix of the host's environment variables, which a child does not inherit.
const HOST_ENV_PREFIX: &str = "REACTOR_MCP_";

/// How often [`Launch::serve`] looks for the ready file when stderr is quiet.
const POLL: Duration = Duration::from_millis(10);

/// How long an exited child's output may take to be read to its end.
const DRAIN: Duration = Duration::from_secs(5);

/// A program to start: its arguments, environment and working folder.
#[derive(Debug, Clone)]
pub struct Launch {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    current_dir: Option<PathBuf>,
    log: Option<PathBuf>,
    timeout: Duration,
}

impl Launch {
    /// `program` with no arguments.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            current_dir: None,
            log: None,
            timeout: READY_TIMEOUT,
        }
    }

    /// Adds an argument.
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable, even one of those otherwise left out.
    pub fn env(&mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.env
            .push((name.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Runs the program in `dir`.
    pub fn current_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.current_dir = Some(dir.into());
        self
    }

    /// Also writes both output streams, as they come, to `file` (created anew).
    pub fn log_to(&mut self, file: impl Into<PathBuf>) -> &mut Self {
        self.log = Some(file.into());
        self
    }

    /// How long [`Launch::serve`] waits for the ready file.
    pub fn timeout(&mut self, timeout: Duration) -> &mut Self {
        self.timeout = timeout;
        self
    }

    /// The command line as a [`Command`], its environment cleaned, for running to completion
    /// or for display.
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        for (name, _) in std::env::vars_os() {
            if is_left_out(&name) {
                command.env_remove(name);
            }
        }
        command.env_remove("RUST_LOG");
        command.envs(self.env.iter().map(|(n, v)| (n, v)));
        if let Some(dir) = &self.current_dir {
            command.current_dir(dir);
        }
        command
    }

    /// Starts the program; it is not waited for.
    pub fn spawn(&self) -> Result<Process, Error> {
        self.start(None)
    }

    /// Starts the program with `--ready-file PATH` added, and waits for it to write that file.
    pub fn serve(&self) -> Result<(Process, Ready), Error> {
        let dir = ReadyDir::create().map_err(|source| Error::File {
            path: std::env::temp_dir(),
            source,
        })?;
        let file = dir.file();
        let mut process = self.start(Some(dir))?;
        let ready = process.wait_ready(&file, self.timeout)?;
        Ok((process, ready))
    }

    fn start(&self, ready_dir: Option<ReadyDir>) -> Result<Process, Error> {
        let mut command = self.command();
        if let Some(dir) = &ready_dir {
            command.arg("--ready-file").arg(dir.file());
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let (stdout_log, stderr_log) = match &self.log {
            Some(path) => {
                let file_error = |source| Error::File {
                    path: path.clone(),
                    source,
                };
                let file = File::create(path).map_err(file_error)?;
                (Some(file.try_clone().map_err(file_error)?), Some(file))
            }
            None => (None, None),
        };
        let spawned = Instant::now();
        let mut child = command.spawn().map_err(|source| Error::Spawn {
            program: self.program.clone(),
            source,
        })?;
        let stdout = Collected::start(child.stdout.take().expect("stdout is piped"), stdout_log);
        let stderr = Collected::start(child.stderr.take().expect("stderr is piped"), stderr_log);
        Ok(Process {
            child,
            program: self.program.clone(),
            spawned,
            stdout,
            stderr,
            _ready_dir: ready_dir,
        })
    }
}

/// Whether an inherited environment variable is left out of a child's environment.
fn is_left_out(name: &OsStr) -> bool {
    name.to_string_lossy().starts_with(HOST_ENV_PREFIX)
}

/// A running program, killed when dropped.
#[derive(Debug)]
pub struct Process {
    child: Child,
    program: PathBuf,
    spawned: Instant,
    stdout: Arc<Collected>,
    stderr: Arc<Collected>,
    /// Holds the ready file; removed after the process is killed.
    _ready_dir: Option<ReadyDir>,
}

impl Process {
    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// When the process was started.
    pub fn spawned(&self) -> Instant {
        self.spawned
    }

    /// What it has written to standard output so far.
    pub fn stdout(&self) -> String {
        self.stdout.text()
    }

    /// What it has written to standard error so far.
    pub fn stderr(&self) -> String {
        self.stderr.text()
    }

    /// The first complete line of standard error containing `needle`, waiting up to
    /// `timeout`; `None` when the process closes its stderr or time runs out first.
    pub fn wait_for_stderr(&self, needle: &str, timeout: Duration) -> Option<String> {
        self.stderr.wait_for_line(needle, timeout)
    }

    /// Its exit status if it has exited.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Waits up to `timeout` for the process to exit by itself and for its output to be read
    /// to the end; its status, or `None` if it is still running.
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

    /// Waits for `file` to appear and reads it. Stderr wakes the wait early: the host writes
    /// the file just before it prints its `listening on` line.
    fn wait_ready(&mut self, file: &Path, timeout: Duration) -> Result<Ready, Error> {
        let deadline = self.spawned + timeout;
        let mut seen = 0;
        loop {
            match fs::read(file) {
                Ok(bytes) => {
                    return Ready::parse(&bytes).map_err(|reason| Error::BadReadyFile {
                        program: self.program.clone(),
                        reason,
                        text: String::from_utf8_lossy(&bytes).into_owned(),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(Error::File {
                        path: file.to_owned(),
                        source,
                    });
                }
            }
            if let Some(status) = self.child.try_wait().map_err(|source| Error::Spawn {
                program: self.program.clone(),
                source,
            })? {
                self.stderr.wait_closed(Instant::now() + DRAIN);
                return Err(Error::Exited {
                    program: self.program.clone(),
                    status,
                    stderr: self.stderr(),
                });
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return Err(Error::TimedOut {
                    program: self.program.clone(),
                    timeout,
                    stderr: self.stderr(),
                });
            };
            let (now_seen, closed) = self.stderr.wait_past(seen, left.min(POLL));
            if closed {
                thread::sleep(left.min(POLL));
            }
            seen = now_seen;
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Why a program could not be started or did not become ready.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The program could not be started, or its state read.
    Spawn {
        /// The program.
        program: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A file or folder of the harness (the ready file's, the log) could not be made or read.
    File {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The program exited before writing its ready file.
    Exited {
        /// The program.
        program: PathBuf,
        /// How it exited.
        status: ExitStatus,
        /// What it wrote to stderr.
        stderr: String,
    },
    /// The program did not write its ready file in time.
    TimedOut {
        /// The program.
        program: PathBuf,
        /// How long it was given.
        timeout: Duration,
        /// What it wrote to stderr.
        stderr: String,
    },
    /// The ready file does not hold the object expected.
    BadReadyFile {
        /// The program.
        program: PathBuf,
        /// What is wrong with it.
        reason: String,
        /// What the file holds.
        text: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Spawn { program, source } => {
                write!(f, "cannot run {}: {source}", program.display())
            }
            Self::File { path, source } => write!(f, "{}: {source}", path.display()),
            Self::Exited {
                program,
                status,
                stderr,
            } => write!(
                f,
                "{} exited ({status}) before it was ready; its stderr:\n{stderr}",
                program.display()
            ),
            Self::TimedOut {
                program,
                timeout,
                stderr,
            } => write!(
                f,
                "{} was not ready within {timeout:?}; its stderr:\n{stderr}",
                program.display()
            ),
            Self::BadReadyFile {
                program,
                reason,
                text,
            } => write!(
                f,
                "the ready file of {} is not the object expected ({reason}): {text}",
                program.display()
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Spawn { source, .. } | Self::File { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(all(test, unix))]
mod tests;
