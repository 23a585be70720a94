//! One line on stderr when the process dies of a fatal signal (SIGABRT, SIGSEGV, SIGBUS), for
//! a program whose native plugins can end it with no word in its log.
//!
//! The line is made beforehand and published with [`publish`]; [`install`] puts a handler on
//! the three signals that writes the published line once, with `write(2)` (the one thing a
//! signal handler may do with it), then hands the signal to the handler in place before (std's
//! stack-overflow check for SIGSEGV) or to its default action, which ends the process as it
//! would have ended without us. A published line is leaked, never freed, since a handler may
//! read it at any moment: publish rarely (once per change of what the line says).

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// The line the handler writes: a leaked buffer, or null before the first [`publish`].
static LINE: AtomicPtr<Vec<u8>> = AtomicPtr::new(std::ptr::null_mut());
/// Whether the line was written: one fatal signal may follow another (a fault, then std's
/// abort on a stack overflow).
static WRITTEN: AtomicBool = AtomicBool::new(false);

/// Makes `line` what the handler writes from now on. The previous line is leaked.
pub fn publish(line: String) {
    LINE.store(
        Box::into_raw(Box::new(line.into_bytes())),
        Ordering::Release,
    );
}

#[cfg(unix)]
pub use unix::install;

/// Installs the handler: nothing on platforms without POSIX signals.
#[cfg(not(unix))]
pub fn install() {}

#[cfg(unix)]
mod unix {
    use std::sync::{Once, OnceLock, atomic::Ordering};

    use super::{LINE, WRITTEN};

    /// The signals native code in process can end the program with.
    const SIGNALS: [libc::c_int; 3] = [libc::SIGABRT, libc::SIGSEGV, libc::SIGBUS];

    /// The handlers in place before ours, by position in [`SIGNALS`].
    static PREVIOUS: OnceLock<[libc::sigaction; 3]> = OnceLock::new();

    /// Installs the handler, once per process; the handlers in place before are kept and run
    /// after it.
    pub fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            let previous = SIGNALS.map(|signal| {
                // SAFETY: `sigaction` is plain C data, for which all zeroes is a valid value;
                // it is given valid pointers to it, and the handler installed is
                // async-signal-safe (`on_fatal_signal`).
                unsafe {
                    let mut action: libc::sigaction = std::mem::zeroed();
                    action.sa_sigaction = on_fatal_signal as *const () as usize;
                    action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                    libc::sigemptyset(&raw mut action.sa_mask);
                    let mut previous: libc::sigaction = std::mem::zeroed();
                    libc::sigaction(signal, &raw const action, &raw mut previous);
                    previous
                }
            });
            let _ = PREVIOUS.set(previous);
        });
    }

    /// Writes the published line once, then hands the signal to the handler in place before
    /// ours, or to the default action.
    extern "C" fn on_fatal_signal(
        signal: libc::c_int,
        info: *mut libc::siginfo_t,
        context: *mut libc::c_void,
    ) {
        let line = LINE.load(Ordering::Acquire);
        if !line.is_null() && !WRITTEN.swap(true, Ordering::AcqRel) {
            // SAFETY: a published line is a leaked `Vec<u8>`, never freed or changed; `write`
            // is async-signal-safe.
            unsafe {
                let bytes: &[u8] = &*line;
                libc::write(2, bytes.as_ptr().cast(), bytes.len());
            }
        }
        let previous = PREVIOUS
            .get()
            .and_then(|all| SIGNALS.iter().position(|s| *s == signal).map(|i| all[i]));
        match previous {
            Some(previous)
                if previous.sa_sigaction != libc::SIG_DFL
                    && previous.sa_sigaction != libc::SIG_IGN =>
            {
                if previous.sa_flags & libc::SA_SIGINFO != 0 {
                    // SAFETY: a handler installed with SA_SIGINFO takes these three arguments.
                    unsafe {
                        let handler: extern "C" fn(
                            libc::c_int,
                            *mut libc::siginfo_t,
                            *mut libc::c_void,
                        ) = std::mem::transmute(previous.sa_sigaction);
                        handler(signal, info, context);
                    }
                } else {
                    // SAFETY: a handler installed without SA_SIGINFO takes the signal alone.
                    unsafe {
                        let handler: extern "C" fn(libc::c_int) =
                            std::mem::transmute(previous.sa_sigaction);
                        handler(signal);
                    }
                }
            }
            _ => {
                // SAFETY: `signal` and `raise` are async-signal-safe. The signal is blocked
                // while this handler runs, so the one raised here is delivered, with its
                // default action, when it returns.
                unsafe {
                    libc::signal(signal, libc::SIG_DFL);
                    libc::raise(signal);
                }
            }
        }
    }
}
