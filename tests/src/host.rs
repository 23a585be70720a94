//! Running the host binary through [`harness`]: one-shot commands ([`run_host`]) and
//! long-running processes ([`HostProcess`], killed on drop), panicking with what the host printed
//! when it fails.
//!
//! The host's own environment variables are cleared, so a developer's shell cannot change a
//! test's outcome; a test that wants one sets it explicitly.

use std::{
    net::SocketAddr,
    path::PathBuf,
    process::{Command, ExitStatus},
    time::Duration,
};

use harness::{Launch, Process, Ready};

use crate::{build::host_bin, maps, plugin_dir::PluginDir};

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

/// `reactor-mcp-server ARGS` with these environment variables set, and the host's others
/// cleared (see [`harness`]).
fn host_launch(args: &[&str], env: &[(&str, &str)]) -> Launch {
    launch_of(host_bin(), args, env)
}

/// [`host_launch`] of another build of the host, `bin`.
fn launch_of(bin: PathBuf, args: &[&str], env: &[(&str, &str)]) -> Launch {
    let mut launch = Launch::new(bin);
    launch.args(args);
    for (name, value) in env {
        launch.env(name, value);
    }
    launch
}

/// `reactor-mcp-server ARGS --plugin-dir DIR` as a [`Command`] to spawn as the test needs (its
/// streams piped, say), with the host's environment variables cleared.
pub fn host_command(args: &[&str], dir: &PluginDir) -> Command {
    let mut command = host_launch(args, &[]).command();
    command.arg("--plugin-dir").arg(dir.path());
    command
}

/// Runs `reactor-mcp-server ARGS --plugin-dir DIR` to completion.
pub fn run_host(args: &[&str], dir: &PluginDir) -> Output {
    run_host_with_env(args, dir, &[])
}

/// Runs `reactor-mcp-server ARGS --plugin-dir DIR` to completion with these environment
/// variables set.
pub fn run_host_with_env(args: &[&str], dir: &PluginDir, env: &[(&str, &str)]) -> Output {
    output_of(
        host_launch(args, env)
            .arg("--plugin-dir")
            .arg(dir.path())
            .command(),
    )
}

/// Runs `reactor-mcp-server ARGS` to completion, adding no `--plugin-dir`.
pub fn run_host_bare(args: &[&str], env: &[(&str, &str)]) -> Output {
    output_of(host_launch(args, env).command())
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

/// A running host, killed when dropped.
#[derive(Debug)]
pub struct HostProcess {
    process: Process,
    ready: Option<Ready>,
}

impl HostProcess {
    /// Starts `reactor-mcp-server ARGS` with these environment variables set (and the host's
    /// others cleared).
    pub fn spawn(args: &[&str], env: &[(&str, &str)]) -> Self {
        let process = host_launch(args, env)
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        Self {
            process,
            ready: None,
        }
    }

    /// Starts `reactor-mcp-server serve --port 0 --plugin-dir DIR EXTRA_ARGS` and waits for its
    /// ready file to say where it listens.
    pub fn serve(dir: &PluginDir, extra_args: &[&str]) -> Self {
        Self::serve_with_env(dir, extra_args, &[])
    }

    /// [`HostProcess::serve`] with these environment variables set (the host's others cleared).
    pub fn serve_with_env(dir: &PluginDir, extra_args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::serve_build(host_bin(), dir, extra_args, env)
    }

    /// [`HostProcess::serve_with_env`] with another build of the host, `bin` (an earlier
    /// release's, say).
    pub fn serve_build(
        bin: PathBuf,
        dir: &PluginDir,
        extra_args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let (process, ready) = launch_of(bin, &["serve", "--port", "0"], env)
            .arg("--plugin-dir")
            .arg(dir.path())
            .args(extra_args)
            .serve()
            .unwrap_or_else(|e| panic!("{e}"));
        Self {
            process,
            ready: Some(ready),
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The address it listens on (after [`HostProcess::serve`]).
    pub fn addr(&self) -> SocketAddr {
        self.ready
            .as_ref()
            .expect("the host was not started with HostProcess::serve")
            .address
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

    /// The private copies of `dir`'s files it has mapped, as mapped; and whether it maps a file
    /// of `dir` itself ([`maps::mapped_private_copies`]).
    pub fn mapped_private_copies(&self, dir: &PluginDir) -> (Vec<PathBuf>, bool) {
        maps::mapped_private_copies(self.pid(), dir.path())
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
        self.process.stderr()
    }

    /// What it has written to standard output so far.
    pub fn stdout_so_far(&self) -> String {
        self.process.stdout()
    }

    /// The first line of standard error containing `needle`, waiting up to `timeout`.
    /// Panics, showing what it has printed, if no such line comes or the process exits first.
    pub fn wait_for_stderr(&mut self, needle: &str, timeout: Duration) -> String {
        match self.process.wait_for_stderr(needle, timeout) {
            Some(line) => line,
            None => {
                let status = self.process.try_wait().ok().flatten();
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
        self.process.wait_for_exit(timeout)
    }
}
