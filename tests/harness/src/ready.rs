//! The reading side of the host's `--ready-file`: the JSON object it writes once it listens,
//! and the temporary folder the file is asked for in.

use std::{
    env, fs, io,
    net::SocketAddr,
    path::PathBuf,
    process,
    sync::atomic::{AtomicU32, Ordering},
};

use serde_json::Value;

/// Where a ready server listens: the object of its ready file,
/// `{"url": "http://ADDR/PATH", "address": "IP:PORT", "pid": N}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    /// The MCP endpoint, `http://ADDR/PATH`.
    pub url: String,
    /// The address the server's listener is bound to.
    pub address: SocketAddr,
    /// The server's process id, as the server tells it.
    pub pid: u32,
}

impl Ready {
    /// Reads the object from the file's bytes; the reason when it is not the object expected.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let field = |name: &str| value.get(name).ok_or(format!("no `{name}`"));
        let url = field("url")?
            .as_str()
            .ok_or("`url` is not a string")?
            .to_owned();
        let address = field("address")?
            .as_str()
            .ok_or("`address` is not a string")?
            .parse()
            .map_err(|e| format!("`address`: {e}"))?;
        let pid = field("pid")?
            .as_u64()
            .and_then(|pid| u32::try_from(pid).ok())
            .ok_or("`pid` is not a process id")?;
        Ok(Self { url, address, pid })
    }
}

/// A fresh folder under the system's temporary folder, removed with what it holds on drop.
#[derive(Debug)]
pub(crate) struct ReadyDir(PathBuf);

impl ReadyDir {
    pub(crate) fn create() -> io::Result<Self> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        loop {
            let name = format!(
                "harness-{}-{}",
                process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            );
            let path = env::temp_dir().join(name);
            match fs::create_dir(&path) {
                Ok(()) => return Ok(Self(path)),
                // Left by an earlier process that had the same id.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The ready file's path in this folder (the server creates it).
    pub(crate) fn file(&self) -> PathBuf {
        self.0.join("ready.json")
    }
}

impl Drop for ReadyDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ready_object_is_read_whole() {
        let ready = Ready::parse(
            br#"{"url": "http://[::1]:4040/mcp", "address": "[::1]:4040", "pid": 42}"#,
        )
        .unwrap();
        assert_eq!(ready.url, "http://[::1]:4040/mcp");
        assert_eq!(ready.address, "[::1]:4040".parse().unwrap());
        assert_eq!(ready.pid, 42);
    }

    #[test]
    fn a_ready_object_missing_a_field_or_mistyped_says_which() {
        let err = |text: &str| Ready::parse(text.as_bytes()).unwrap_err();
        assert!(err(r#"{"url": "u", "pid": 1}"#).contains("`address`"));
        assert!(err(r#"{"url": "u", "address": "nope", "pid": 1}"#).contains("`address`"));
        assert!(err(r#"{"url": 1, "address": "127.0.0.1:1", "pid": 1}"#).contains("`url`"));
        assert!(err(r#"{"url": "u", "address": "127.0.0.1:1", "pid": -1}"#).contains("`pid`"));
        assert!(!err("{\"url\": ").is_empty());
    }

    #[test]
    fn each_ready_dir_is_new_and_removed_on_drop() {
        let (a, b) = (ReadyDir::create().unwrap(), ReadyDir::create().unwrap());
        assert_ne!(a.0, b.0);
        fs::write(a.file(), "{}").unwrap();
        let path = a.0.clone();
        drop(a);
        assert!(!path.exists());
    }
}
