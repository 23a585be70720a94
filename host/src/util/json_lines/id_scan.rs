//! The `id` of a JSON object too long to parse (a JSON-RPC message), read as its bytes stream
//! by: a small state machine that follows the nesting of the top-level object and keeps the
//! value of its `id` key, wherever it comes (before or after a huge `params`), ignoring `id`s
//! nested deeper.

use serde_json::Value;

/// The most bytes kept of the `id`'s value; a longer one is not an id worth answering to.
const MAX_ID_BYTES: usize = 256;

/// Reads a message's top-level `id` from its bytes, fed in pieces.
#[derive(Debug, Default)]
pub(crate) struct IdScan {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The string being read, when it is a key of the top-level object.
    key: Option<Vec<u8>>,
    /// The last key of the top-level object, until its `:`.
    last_key: Option<Vec<u8>>,
    /// The bytes of the `id`'s value, while it is read.
    value: Option<Vec<u8>>,
    /// The `id`, once read: a string or an integer.
    found: Option<Value>,
}

impl IdScan {
    /// Follows `bytes`, the next part of the message.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.step(byte);
        }
    }

    /// The `id` read, if the message had a string or integer one.
    pub(crate) fn id(&self) -> Option<Value> {
        self.found.clone()
    }

    fn step(&mut self, byte: u8) {
        if let Some(value) = &mut self.value
            && value.len() <= MAX_ID_BYTES
        {
            value.push(byte);
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
                if let Some(key) = self.key.take() {
                    self.last_key = Some(key);
                }
                return;
            }
            if let Some(key) = &mut self.key
                && key.len() <= 2
            {
                key.push(byte);
            }
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.value.is_none() {
                    self.key = Some(Vec::new());
                }
            }
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                if self.depth == 1 {
                    self.end_value();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1
                && self.value.is_none()
                && self.last_key.take().as_deref() == Some(b"id") =>
            {
                self.value = Some(Vec::new());
            }
            b',' if self.depth == 1 => self.end_value(),
            _ => {}
        }
    }

    /// The `id`'s value ended (at a `,` or the closing brace, which it took as its last byte).
    fn end_value(&mut self) {
        let Some(mut bytes) = self.value.take() else {
            return;
        };
        bytes.pop();
        let id = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .filter(|id| id.is_string() || id.is_i64() || id.is_u64());
        if id.is_some() {
            self.found = id;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn scanned(pieces: &[&str]) -> Option<Value> {
        let mut scan = IdScan::default();
        for piece in pieces {
            scan.feed(piece.as_bytes());
        }
        scan.id()
    }

    #[test]
    fn the_top_level_id_is_read_before_or_after_the_params_in_any_pieces() {
        let params = format!(
            r#"{{"name":"x","arguments":{{"id":99,"s":"{}"}}}}"#,
            "a".repeat(5000)
        );
        let before =
            format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{params}}}"#);
        let after = format!(
            r#"{{"jsonrpc":"2.0","method":"tools/call","params":{params},"id":"req-\"8\""}}"#
        );
        assert_eq!(scanned(&[&before]), Some(json!(7)));
        assert_eq!(scanned(&[&after]), Some(json!("req-\"8\"")));
        let (head, tail) = after.split_at(after.len() - 9);
        assert_eq!(scanned(&[head, tail]), Some(json!("req-\"8\"")));
    }

    #[test]
    fn a_nested_or_missing_or_unusable_id_is_none() {
        assert_eq!(scanned(&[r#"{"params":{"id":5},"method":"x"}"#]), None);
        assert_eq!(scanned(&[r#"{"jsonrpc":"2.0","method":"x"}"#]), None);
        assert_eq!(scanned(&[r#"{"id":{"a":1},"method":"x"}"#]), None);
        assert_eq!(scanned(&[r#"{"id":1.5}"#]), None);
        assert_eq!(scanned(&[r#"{"identity":3,"xid":4}"#]), None);
        assert_eq!(scanned(&["not json at all"]), None);
    }
}
