//! The ready file (`--ready-file PATH`): once the listener is bound, one JSON object saying
//! where the server listens, for a process that starts the server and waits for it.
//!
//! The object is written to `PATH.tmp` and renamed to `PATH`, so a reader that finds `PATH`
//! finds all of it. The file is left in place when the server stops.

use std::{
    ffi::OsString,
    fs, io,
    net::SocketAddr,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

/// What the ready file holds: `{"url": "http://ADDR/PATH", "address": "IP:PORT", "pid": N}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ready {
    /// The MCP endpoint, `http://ADDR/PATH`, as the stderr line prints it.
    pub(crate) url: String,
    /// The address the listener is bound to.
    pub(crate) address: SocketAddr,
    /// The server's process id.
    pub(crate) pid: u32,
}

impl Ready {
    /// This process, listening on `address` with its MCP endpoint at `path`.
    pub fn new(address: SocketAddr, path: &str) -> Self {
        Self {
            url: format!("http://{address}{path}"),
            address,
            pid: std::process::id(),
        }
    }

    /// Writes the object to `file` atomically: to `file.tmp`, then renamed to `file`.
    pub fn write(&self, file: &Path) -> io::Result<()> {
        let mut temporary = OsString::from(file.as_os_str());
        temporary.push(".tmp");
        let temporary = PathBuf::from(temporary);
        fs::write(
            &temporary,
            serde_json::to_vec(self).map_err(io::Error::other)?,
        )?;
        fs::rename(&temporary, file)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn the_ready_file_holds_the_url_the_address_and_the_pid() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ready.json");
        let address: SocketAddr = "127.0.0.1:40123".parse().unwrap();
        Ready::new(address, "/mcp").write(&file).unwrap();

        let written: Value = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
        assert_eq!(
            written,
            json!({
                "url": "http://127.0.0.1:40123/mcp",
                "address": "127.0.0.1:40123",
                "pid": std::process::id(),
            })
        );
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["ready.json"], "the temporary file is renamed away");
    }

    #[test]
    fn an_ipv6_address_is_bracketed_in_the_url() {
        let ready = Ready::new("[::1]:80".parse().unwrap(), "/mcp");
        assert_eq!(ready.url, "http://[::1]:80/mcp");
        let text = serde_json::to_string(&ready).unwrap();
        assert_eq!(serde_json::from_str::<Ready>(&text).unwrap(), ready);
    }

    #[test]
    fn a_ready_file_from_an_earlier_run_is_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ready.json");
        fs::write(
            &file,
            "{\"url\": \"http://127.0.0.1:1/a-much-longer-path-than-now\"}",
        )
        .unwrap();
        let ready = Ready::new("127.0.0.1:2".parse().unwrap(), "/m");
        ready.write(&file).unwrap();
        let read: Ready = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
        assert_eq!(read, ready);
    }

    #[test]
    fn a_folder_that_does_not_exist_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("missing").join("ready.json");
        let ready = Ready::new("127.0.0.1:2".parse().unwrap(), "/m");
        assert!(ready.write(&file).is_err());
    }
}
