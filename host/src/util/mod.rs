//! Leaves every layer may use: small helpers written once, with no knowledge of plugins,
//! MCP or HTTP.
//!
//! - [`loopback`]: whether a host name or address is loopback, brackets and case allowed.
//! - [`hash`]: SHA-256 and lowercase hex.
//! - [`lock`]: locking a mutex or a read-write lock through a poisoning panic.
//! - [`backoff`]: the wait before trying again something that failed.
//! - [`error`]: an error and its sources on one line ([`error::chain`], [`error::Report`]).
//! - [`names`]: the rule for names from files, and escaping text from files in log lines.
//! - [`json_lines`]: JSON messages one per line over a stream, bounded, with the `id` of a line
//!   too long to keep.
//! - [`tls`]: the crypto provider of the host's TLS clients.
//! - [`parallel`]: mapping a list on every core, in order.
//! - [`watched`]: a file read again when it changes.

pub(crate) mod backoff;
pub(crate) mod error;
pub(crate) mod hash;
pub(crate) mod json_lines;
pub(crate) mod lock;
pub(crate) mod loopback;
pub(crate) mod names;
pub(crate) mod parallel;
pub(crate) mod tls;
pub(crate) mod watched;
