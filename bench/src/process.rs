//! Server processes under test: started, found by the `listening on http://ADDR/...` line they
//! print to stderr, measured through `/proc`, and killed on drop.
//!
//! Stderr is read by a background thread for the process's whole life (a full pipe would stall
//! the server); lines after the first are kept only for an error message. The host's own
//! environment variables (`REACTOR_MCP_*`, `RUST_LOG`) are cleared, so the caller's shell
//! cannot change what is measured.

use std::{
    ffi::OsStr,
    io::{BufRead, BufReader},
    net::SocketAddr,
    path::Path,
    process::{Child, Command, Stdio},
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

/// How long a server may take to say where it listens.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running server, killed when dropped.
#[derive(Debug)]
pub struct Server {
    child: Child,
    addr: SocketAddr,
    /// When the process was spawned.
    pub spawned: Instant,
    /// When it printed its listening line.
    pub listening: Instant,
}

impl Server {
    /// Starts `program ARGS` and waits for its `listening on http://ADDR` line.
    pub fn start<I, S>(program: &Path, args: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .env_remove("RUST_LOG");
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("REACTOR_MCP_") {
                command.env_remove(name);
            }
        }
        let spawned = Instant::now();
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start {}", program.display()))?;
        let stderr = child.stderr.take().context("stderr is piped")?;
        let (lines, received) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if lines.send(line).is_err() {
                    // Nobody listens any more: keep draining so the server never blocks.
                    continue;
                }
            }
        });
        let mut seen = Vec::new();
        let deadline = spawned + START_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match received.recv_timeout(left) {
                Ok(line) => line,
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    bail!(
                        "{} did not say where it listens within {START_TIMEOUT:?}; it printed:\n{}",
                        program.display(),
                        seen.join("\n")
                    );
                }
            };
            if let Some(addr) = listening_address(&line) {
                let listening = Instant::now();
                return Ok(Self {
                    child,
                    addr,
                    spawned,
                    listening,
                });
            }
            seen.push(line);
        }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its resident set size now, in bytes.
    pub fn rss_bytes(&self) -> Result<u64> {
        rss_bytes(self.pid())
    }

    /// Whether a file whose path contains `needle` is mapped into the process.
    pub fn maps(&self, needle: &str) -> Result<bool> {
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", self.pid()))?;
        Ok(maps.lines().any(|line| line.contains(needle)))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address in a `listening on http://ADDR/...` line.
fn listening_address(line: &str) -> Option<SocketAddr> {
    let rest = line.split("listening on http://").nth(1)?;
    rest.split(['/', ' ']).next()?.parse().ok()
}

/// The CPU time (user and system, every thread, live or exited) process `pid` has used.
///
/// Read from `/proc/PID/stat` in clock ticks of 10 ms (`USER_HZ` is 100 on Linux), so a load of
/// a second or more is measured to about 1%.
pub fn cpu_time(pid: u32) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    // The command name (field 2) may hold spaces; the fields after it do not.
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime are fields 14 and 15; `fields` starts at field 3.
    let ticks = |i: usize| fields.get(i - 3).and_then(|f| f.parse::<u64>().ok());
    let (Some(user), Some(system)) = (ticks(14), ticks(15)) else {
        bail!("/proc/{pid}/stat has no utime and stime");
    };
    Ok(Duration::from_millis((user + system) * 10))
}

/// The resident set size of process `pid` (`VmRSS` in `/proc/PID/status`), in bytes.
pub fn rss_bytes(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .context("no VmRSS line")?;
    Ok(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listening_line_gives_the_address() {
        assert_eq!(
            listening_address("listening on http://127.0.0.1:4040/mcp"),
            Some("127.0.0.1:4040".parse().unwrap())
        );
        assert_eq!(listening_address("INFO something else"), None);
    }

    #[test]
    fn this_process_has_a_resident_set_and_a_cpu_time() {
        assert!(rss_bytes(std::process::id()).unwrap() > 0);
        cpu_time(std::process::id()).unwrap();
    }
}
