//! Applying a sandbox ([`super::sandbox::Policy`]) to the process itself: the child of a
//! sandboxed plugin calls [`enter`] before it opens the library, so the library's static
//! initialisers are confined too, and before it starts a thread, since both Landlock and the
//! filter hold the thread that applies them and the threads it starts.
//!
//! - Landlock: files (read and run beneath the declared `read` paths, everything beneath the
//!   `write` ones; beyond them the system's libraries, `/dev/null` and the like, the plugin's
//!   own library file and a private folder of the child's, where its private copy is made),
//!   TCP ports (connect and bind), and scopes (no signal or abstract UNIX socket outside the
//!   sandbox), each as far as the kernel's Landlock ABI goes.
//! - seccomp: a filter refusing with EPERM the calls in [`super::sandbox::REFUSED_CALLS`], and
//!   `clone3` with ENOSYS (its flags cannot be read by a filter; the C library then uses
//!   `clone`, whose namespace flags are refused).
//!
//! [`support`] says what this system enforces, for the host's account. Off Linux nothing is:
//! [`enter`] makes the private folder and says so.

use std::path::{Path, PathBuf};

use super::sandbox::{Policy, Support};
use crate::build::private_copy::private_folder;

/// The Landlock ABI whose rights the sandbox handles: the newest tested here (Linux 6.15).
#[cfg(target_os = "linux")]
const TARGET_ABI: landlock::ABI = landlock::ABI::V7;

/// Folders and files every sandboxed child may read and run: the dynamic loader's cache and the
/// system's libraries (those missing here are left out).
const SYSTEM_READ: [&str; 7] = [
    "/lib",
    "/lib32",
    "/lib64",
    "/usr/lib",
    "/usr/lib64",
    "/usr/local/lib",
    "/etc/ld.so.cache",
];

/// Devices every sandboxed child may read and write.
const SYSTEM_DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"];

/// Why a child cannot enter its sandbox; it then refuses to serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ConfineError {
    /// The policy the host handed over does not parse.
    #[error("the sandbox policy given to the child is not valid")]
    Policy {
        /// The cause.
        source: serde_json::Error,
    },
    /// The child's private folder cannot be made.
    #[error("cannot make the sandboxed plugin's private folder")]
    Folder {
        /// The cause.
        source: std::io::Error,
    },
    /// Temporary files already go to another folder.
    #[error("the temporary folder was chosen before the sandbox: {}", .0.display())]
    TempDir(PathBuf),
    /// Other threads run already: they would escape the sandbox.
    #[error("{0} threads run already, and a sandbox holds only the thread that makes it")]
    Threads(usize),
    /// The Landlock rules cannot be applied.
    #[error("the Landlock rules cannot be applied")]
    Landlock {
        /// The cause.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The seccomp filter cannot be built or applied.
    #[error("the seccomp filter cannot be applied")]
    Seccomp {
        /// The cause.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// A child in its sandbox: its private folder, removed (its contents, at least) when dropped.
#[derive(Debug)]
pub(crate) struct Confined {
    /// Where its private copy of the library is made.
    _folder: tempfile::TempDir,
}

/// Confines this process to `policy` (the JSON the host handed over) for the plugin library
/// `library`, called `plugin`: makes the child's private folder and sends temporary files
/// there, then applies Landlock and the seccomp filter.
///
/// # Errors
///
/// If the policy does not parse, threads run already, or the kernel refuses a rule it says it
/// supports; what the kernel does not support is logged, never an error.
pub(crate) fn enter(policy: &str, library: &Path, plugin: &str) -> Result<Confined, ConfineError> {
    let policy: Policy =
        serde_json::from_str(policy).map_err(|source| ConfineError::Policy { source })?;
    let folder = private_folder(library).map_err(|source| ConfineError::Folder { source })?;
    tempfile::env::override_temp_dir(folder.path()).map_err(ConfineError::TempDir)?;
    for path in policy.read.iter().chain(&policy.write) {
        if !path.exists() {
            tracing::warn!(
                "plugin `{plugin}` declares {}, which does not exist: not granted",
                path.display()
            );
        }
    }
    apply(&policy, library, folder.path(), plugin)?;
    Ok(Confined { _folder: folder })
}

/// What this system enforces, probed once.
pub(crate) fn support() -> Support {
    static SUPPORT: std::sync::OnceLock<Support> = std::sync::OnceLock::new();
    *SUPPORT.get_or_init(|| Support {
        landlock: landlock_abi(),
        seccomp: cfg!(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        )),
    })
}

/// The kernel's Landlock ABI, 0 without Landlock: asked without restricting anything.
#[cfg(target_os = "linux")]
fn landlock_abi() -> u8 {
    use landlock::{LandlockStatus, RestrictSelf};
    match RestrictSelf::default().no_new_privs(false).apply() {
        Ok(status) => match status.landlock {
            LandlockStatus::Available {
                kernel_abi: Some(newer),
                ..
            } => u8::try_from(newer).unwrap_or(u8::MAX),
            LandlockStatus::Available { effective_abi, .. } => effective_abi as u8,
            _ => 0,
        },
        Err(_) => 0,
    }
}

/// Off Linux there is no Landlock.
#[cfg(not(target_os = "linux"))]
fn landlock_abi() -> u8 {
    0
}

/// Applies Landlock, then the filter.
#[cfg(target_os = "linux")]
fn apply(policy: &Policy, library: &Path, folder: &Path, plugin: &str) -> Result<(), ConfineError> {
    let threads = std::fs::read_dir("/proc/self/task").map_or(1, Iterator::count);
    if threads > 1 {
        return Err(ConfineError::Threads(threads));
    }
    let status = landlock_rules(policy, library, folder).map_err(|e| ConfineError::Landlock {
        source: Box::new(e),
    })?;
    let seccomp = seccomp::apply().map_err(|source| ConfineError::Seccomp { source })?;
    match status {
        landlock::RulesetStatus::NotEnforced => tracing::warn!(
            "plugin `{plugin}` runs without Landlock (this kernel has none): its files, ports and \
             signals are not restricted{}",
            if seccomp {
                "; the seccomp filter is on"
            } else {
                ""
            }
        ),
        status => tracing::info!(
            "plugin `{plugin}` is sandboxed: Landlock {status:?}, the seccomp filter {}",
            if seccomp {
                "on"
            } else {
                "off (not this architecture)"
            }
        ),
    }
    Ok(())
}

/// Off Linux nothing is applied: said at start-up by the host's account, and here.
#[cfg(not(target_os = "linux"))]
fn apply(
    _policy: &Policy,
    _library: &Path,
    _folder: &Path,
    plugin: &str,
) -> Result<(), ConfineError> {
    tracing::warn!("plugin `{plugin}` runs unconfined: sandboxes are made on Linux only");
    Ok(())
}

/// Restricts this thread (and those it starts) to `policy`, the system's libraries, `library`
/// and `folder`.
#[cfg(target_os = "linux")]
fn landlock_rules(
    policy: &Policy,
    library: &Path,
    folder: &Path,
) -> Result<landlock::RulesetStatus, landlock::RulesetError> {
    use landlock::{
        Access, AccessFs, AccessNet, NetPort, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
        path_beneath_rules,
    };
    let read = AccessFs::from_read(TARGET_ABI);
    let all = AccessFs::from_all(TARGET_ABI);
    let devices = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
    let status =
        Ruleset::default()
            .handle_access(all)?
            .handle_access(AccessNet::from_all(TARGET_ABI))?
            .scope(Scope::from_all(TARGET_ABI))?
            .create()?
            .add_rules(path_beneath_rules(SYSTEM_READ, read))?
            .add_rules(path_beneath_rules(SYSTEM_DEVICES, devices))?
            .add_rules(path_beneath_rules([library], read))?
            .add_rules(path_beneath_rules([folder], all))?
            .add_rules(path_beneath_rules(&policy.read, read))?
            .add_rules(path_beneath_rules(&policy.write, all))?
            .add_rules(policy.connect.iter().map(|port| {
                Ok::<_, landlock::RulesetError>(NetPort::new(*port, AccessNet::ConnectTcp))
            }))?
            .add_rules(policy.bind.iter().map(|port| {
                Ok::<_, landlock::RulesetError>(NetPort::new(*port, AccessNet::BindTcp))
            }))?
            .restrict_self()?;
    Ok(status.ruleset)
}

/// The seccomp filter, on the architectures it is written for.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod seccomp {
    use std::collections::BTreeMap;

    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    type Error = Box<dyn std::error::Error + Send + Sync>;

    /// The calls refused with EPERM, whatever their arguments.
    const REFUSED: &[libc::c_long] = &[
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_mount_setattr,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_userfaultfd,
        libc::SYS_acct,
        libc::SYS_quotactl,
        libc::SYS_settimeofday,
        libc::SYS_clock_settime,
        libc::SYS_clock_adjtime,
        libc::SYS_adjtimex,
        libc::SYS_sethostname,
        libc::SYS_setdomainname,
        libc::SYS_syslog,
        libc::SYS_vhangup,
        libc::SYS_pidfd_getfd,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_iopl,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_ioperm,
    ];

    /// The `clone` flags that make new namespaces.
    const NAMESPACES: [libc::c_int; 7] = [
        libc::CLONE_NEWNS,
        libc::CLONE_NEWCGROUP,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWNET,
    ];

    /// This architecture, as the filter names it.
    #[cfg(target_arch = "x86_64")]
    const ARCH: TargetArch = TargetArch::x86_64;
    /// This architecture, as the filter names it.
    #[cfg(target_arch = "aarch64")]
    const ARCH: TargetArch = TargetArch::aarch64;

    /// The filters: EPERM for the refused calls and for `clone` into new namespaces, ENOSYS
    /// for `clone3`.
    pub(super) fn filters() -> Result<Vec<BpfProgram>, Error> {
        let mut refused: BTreeMap<i64, Vec<SeccompRule>> =
            REFUSED.iter().map(|call| (*call, Vec::new())).collect();
        let mut clone = Vec::new();
        for flag in NAMESPACES {
            let flag = u64::from(flag.unsigned_abs());
            clone.push(SeccompRule::new(vec![SeccompCondition::new(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )?])?);
        }
        refused.insert(libc::SYS_clone, clone);
        let eperm = SeccompFilter::new(
            refused,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM.unsigned_abs()),
            ARCH,
        )?;
        let clone3 = SeccompFilter::new(
            BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS.unsigned_abs()),
            ARCH,
        )?;
        Ok(vec![eperm.try_into()?, clone3.try_into()?])
    }

    /// Applies the filters to every thread of the process; whether they are applied.
    pub(super) fn apply() -> Result<bool, Error> {
        for filter in filters()? {
            seccompiler::apply_filter_all_threads(&filter)?;
        }
        Ok(true)
    }
}

/// No filter where it is not written for the architecture.
#[cfg(all(
    target_os = "linux",
    not(any(target_arch = "x86_64", target_arch = "aarch64"))
))]
mod seccomp {
    /// Applies nothing: says so.
    pub(super) fn apply() -> Result<bool, Box<dyn std::error::Error + Send + Sync>> {
        Ok(false)
    }
}

#[cfg(all(
    test,
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod tests {
    use super::*;

    #[test]
    fn the_filters_build_for_this_architecture() {
        let filters = seccomp::filters().unwrap();
        assert_eq!(filters.len(), 2);
        assert!(filters.iter().all(|f| !f.is_empty()));
    }

    #[test]
    fn this_kernel_is_asked_without_restricting_this_process() {
        let support = support();
        assert!(support.seccomp);
        let again = std::fs::read_to_string("/proc/self/status").unwrap();
        assert!(
            again
                .lines()
                .any(|l| l.split_whitespace().eq(["NoNewPrivs:", "0"])),
            "probing set no_new_privs"
        );
    }
}
