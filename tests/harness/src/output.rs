//! A child's output stream, read by a background thread as it arrives (a full pipe would stall
//! the child) and kept whole, optionally copied to a log file as it comes.

use std::{
    fs::File,
    io::{Read, Write},
    sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError},
    thread,
    time::{Duration, Instant},
};

/// What a child has written to one pipe so far.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    text: String,
    closed: bool,
}

impl Collected {
    /// Starts reading `pipe` until it closes, copying each chunk to `log` too.
    pub(crate) fn start(mut pipe: impl Read + Send + 'static, mut log: Option<File>) -> Arc<Self> {
        let collected = Arc::new(Self::default());
        let sink = Arc::clone(&collected);
        thread::spawn(move || {
            let mut buffer = [0_u8; 8192];
            loop {
                let read = pipe.read(&mut buffer).unwrap_or(0);
                let chunk = &buffer[..read];
                if let Some(file) = &mut log {
                    let _ = file.write_all(chunk);
                }
                let mut state = sink.lock();
                state.text.push_str(&String::from_utf8_lossy(chunk));
                state.closed = read == 0;
                sink.changed.notify_all();
                if read == 0 {
                    break;
                }
            }
        });
        collected
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Everything read so far.
    pub(crate) fn text(&self) -> String {
        self.lock().text.clone()
    }

    /// Waits up to `timeout` for more than `seen` bytes of text or for the pipe to close;
    /// the length of the text then, and whether the pipe is closed.
    pub(crate) fn wait_past(&self, seen: usize, timeout: Duration) -> (usize, bool) {
        let (state, _) = self
            .changed
            .wait_timeout_while(self.lock(), timeout, |s| s.text.len() == seen && !s.closed)
            .unwrap_or_else(PoisonError::into_inner);
        (state.text.len(), state.closed)
    }

    /// Waits until the pipe closes or `deadline` passes; whether it closed.
    pub(crate) fn wait_closed(&self, deadline: Instant) -> bool {
        let left = deadline.saturating_duration_since(Instant::now());
        let (state, _) = self
            .changed
            .wait_timeout_while(self.lock(), left, |s| !s.closed)
            .unwrap_or_else(PoisonError::into_inner);
        state.closed
    }

    /// The first complete line containing `needle`, waiting up to `timeout`; `None` when the
    /// pipe closes or time runs out first.
    pub(crate) fn wait_for_line(&self, needle: &str, timeout: Duration) -> Option<String> {
        let line = |text: &str| {
            text.split_inclusive('\n')
                .find(|l| l.ends_with('\n') && l.contains(needle))
                .map(|l| l.trim_end().to_owned())
        };
        let (state, _) = self
            .changed
            .wait_timeout_while(self.lock(), timeout, |s| {
                !s.closed && line(&s.text).is_none()
            })
            .unwrap_or_else(PoisonError::into_inner);
        line(&state.text)
    }
}
