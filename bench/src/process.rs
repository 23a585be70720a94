//! Server processes under test: started through the workspace's `harness` crate (which waits
//! for the `--ready-file` the host and both baselines write once they listen, and clears the
//! host's `REACTOR_MCP_*` variables and `RUST_LOG`, so the caller's shell cannot change what is
//! measured), measured through `/proc`, and killed on drop.

use std::{
    ffi::OsStr,
    net::SocketAddr,
    path::Path,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use harness::{Launch, Process};

/// A running server, killed when dropped.
#[derive(Debug)]
pub struct Server {
    process: Process,
    addr: SocketAddr,
    /// When the process was spawned.
    pub spawned: Instant,
}

impl Server {
    /// Starts `program ARGS --ready-file PATH` and waits for it to write that file.
    pub fn start<I, S>(program: &Path, args: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let (process, ready) = Launch::new(program).args(args).serve()?;
        Ok(Self {
            spawned: process.spawned(),
            addr: ready.address,
            process,
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Its resident set size now, in bytes.
    pub fn rss_bytes(&self) -> Result<u64> {
        rss_bytes(self.pid())
    }

    /// Its anonymous memory now (heap, stacks, private writes), in bytes.
    pub fn anonymous_bytes(&self) -> Result<u64> {
        anonymous_bytes(self.pid())
    }

    /// How many threads the process has.
    pub fn threads(&self) -> Result<u64> {
        threads(self.pid())
    }

    /// Whether a file whose path contains `needle` is mapped into the process.
    pub fn maps(&self, needle: &str) -> Result<bool> {
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", self.pid()))?;
        Ok(maps.lines().any(|line| line.contains(needle)))
    }
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
    Ok(status_number(pid, "VmRSS")? * 1024)
}

/// The anonymous memory of process `pid` (`Anonymous` in `/proc/PID/smaps_rollup`: what it
/// allocated, not the code and data of the files it maps), in bytes.
pub fn anonymous_bytes(pid: u32) -> Result<u64> {
    let file = format!("/proc/{pid}/smaps_rollup");
    let rollup = std::fs::read_to_string(&file).with_context(|| format!("reading {file}"))?;
    Ok(kilobytes_on(&rollup, "Anonymous")
        .with_context(|| format!("no Anonymous line in {file}"))?
        * 1024)
}

/// How many threads process `pid` has.
pub fn threads(pid: u32) -> Result<u64> {
    status_number(pid, "Threads")
}

/// The number on line `field` of `/proc/PID/status` (a `kB` unit left out).
fn status_number(pid: u32, field: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    kilobytes_on(&status, field).with_context(|| format!("no {field} line in /proc/{pid}/status"))
}

/// The number on line `field:` of a `/proc` file of `name: value [kB]` lines.
fn kilobytes_on(text: &str, field: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_resident_set_and_a_cpu_time() {
        assert!(rss_bytes(std::process::id()).unwrap() > 0);
        cpu_time(std::process::id()).unwrap();
    }
}
