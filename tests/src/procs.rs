//! The processes of this machine, from `/proc`: which a host started, which are still alive.

/// Every live process (zombies left out) as `(pid, parent, process group)`, from `/proc`.
pub fn processes() -> Vec<(u32, u32, u32)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp ...`: comm may hold spaces, so read after its `)`.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().take(3).collect())
            .unwrap_or_default();
        if let [state, ppid, pgrp] = fields[..]
            && state != "Z"
            && let (Ok(ppid), Ok(pgrp)) = (ppid.parse(), pgrp.parse())
        {
            found.push((pid, ppid, pgrp));
        }
    }
    found
}

/// The processes whose parent is `pid`.
pub fn children(pid: u32) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|&(_, parent, _)| parent == pid)
        .map(|(child, ..)| child)
        .collect()
}

/// The processes of process group `group`.
pub fn group_members(group: u32) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|&(.., pgrp)| pgrp == group)
        .map(|(pid, ..)| pid)
        .collect()
}

/// How many threads of process `pid` are named `name` (as `/proc` keeps it: 15 bytes at most).
pub fn threads_named(pid: u32, name: &str) -> usize {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|comm| comm.trim_end() == name)
        })
        .count()
}

/// Sends `signal` (`TERM`, `KILL`, ...) to process `pid` with `kill(1)`.
///
/// # Panics
///
/// If `kill` cannot run or fails.
pub fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{signal} {pid} failed");
}

/// How many file descriptors process `pid` has open, from `/proc/PID/fd`.
pub fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |fds| fds.count())
}
