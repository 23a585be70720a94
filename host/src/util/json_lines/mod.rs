//! JSON messages one per line over a byte stream (MCP's stdio framing), bounded: a line over
//! the limit is read through, never held whole, and reported with its size and the top-level
//! `id` it carried ([`id_scan`]), so the end that reads it can answer or fail that id at once.

mod id_scan;

use std::{io, sync::Arc};

use serde::Serialize;
use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader},
    sync::Mutex,
};

use id_scan::IdScan;

/// Reads lines of at most `max` bytes (the newline aside).
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    read: BufReader<R>,
    max: usize,
    /// The line being read, until its newline.
    line: Vec<u8>,
    /// The line being read through, when it has grown over `max`.
    oversized: Option<(usize, IdScan)>,
}

/// How reading a line ended.
#[derive(Debug)]
pub(crate) enum LineRead {
    /// A whole line, its newline (and a carriage return, and a leading byte order mark)
    /// removed; empty lines are skipped.
    Line(Vec<u8>),
    /// A line over the limit, read through.
    Oversized {
        /// Its length, the newline aside.
        bytes: usize,
        /// The top-level `id` it carried, when one could be read (a string or an integer).
        id: Option<Value>,
    },
    /// The stream ended (a last line without its newline is dropped).
    Eof,
    /// Reading failed.
    Io(io::Error),
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader of `read`'s lines of at most `max` bytes.
    pub(crate) fn new(read: R, max: usize) -> Self {
        Self {
            read: BufReader::new(read),
            max,
            line: Vec::new(),
            oversized: None,
        }
    }

    /// The limit, in bytes.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// The next line. Cancel-safe: nothing is consumed across an `.await`, so a dropped read
    /// resumes where it was.
    pub(crate) async fn read_line(&mut self) -> LineRead {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(available) => available,
                Err(error) => return LineRead::Io(error),
            };
            if available.is_empty() {
                return LineRead::Eof;
            }
            let end = available.iter().position(|&b| b == b'\n');
            let chunk = &available[..end.map_or(available.len(), |at| at + 1)];
            let taken = chunk.len();
            let content = taken - usize::from(end.is_some());
            if self.oversized.is_none() && self.line.len() + content > self.max {
                let mut id = IdScan::default();
                id.feed(&self.line);
                self.oversized = Some((self.line.len(), id));
                self.line.clear();
            }
            match &mut self.oversized {
                Some((bytes, id)) => {
                    *bytes += content;
                    id.feed(chunk);
                }
                None => self.line.extend_from_slice(&chunk[..content]),
            }
            self.read.consume(taken);
            if end.is_none() {
                continue;
            }
            if let Some((bytes, id)) = self.oversized.take() {
                return LineRead::Oversized { bytes, id: id.id() };
            }
            let mut line = std::mem::take(&mut self.line);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.starts_with(b"\xEF\xBB\xBF") {
                line.drain(..3);
            }
            if !line.iter().all(u8::is_ascii_whitespace) {
                return LineRead::Line(line);
            }
        }
    }
}

/// A writer of whole lines, shared by the futures that send.
pub(crate) type SharedWriter<W> = Arc<Mutex<Option<W>>>;

/// Writes `message` as one line of JSON under the writer's lock; fails once the writer is
/// closed (taken).
pub(crate) async fn write_line<W, T>(write: SharedWriter<W>, message: T) -> io::Result<()>
where
    W: AsyncWrite + Unpin,
    T: Serialize,
{
    let mut line = serde_json::to_vec(&message).map_err(io::Error::other)?;
    line.push(b'\n');
    let mut write = write.lock().await;
    let Some(write) = write.as_mut() else {
        return Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "the transport is closed",
        ));
    };
    write.write_all(&line).await?;
    write.flush().await
}

/// Closes the shared writer: later writes fail, and the stream is shut down.
pub(crate) async fn close<W: AsyncWrite + Unpin>(write: &SharedWriter<W>) -> io::Result<()> {
    if let Some(mut write) = write.lock().await.take() {
        write.shutdown().await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = LineReader::new(input, max);
        let mut read = Vec::new();
        loop {
            match reader.read_line().await {
                LineRead::Line(line) => read.push(String::from_utf8(line).unwrap()),
                LineRead::Oversized { bytes, id } => read.push(format!("over {bytes} {id:?}")),
                LineRead::Eof => return read,
                LineRead::Io(error) => panic!("{error}"),
            }
        }
    }

    #[tokio::test]
    async fn lines_are_read_whole_or_through_and_blank_ones_skipped() {
        let long = format!("{}\n", json!({"a": "x".repeat(40), "id": 3}));
        let input = format!("one\r\n\n  \n\u{feff}two\n{long}three\nunfinished");
        assert_eq!(
            lines(input.as_bytes(), 20).await,
            [
                "one".to_owned(),
                "two".to_owned(),
                format!("over {} Some(Number(3))", long.len() - 1),
                "three".to_owned(),
            ]
        );
        let exactly = "x".repeat(20);
        assert_eq!(
            lines(format!("{exactly}\n").as_bytes(), 20).await,
            [exactly]
        );
    }
}
