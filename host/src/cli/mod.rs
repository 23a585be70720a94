//! The command line: its arguments (clap, with an environment variable for every flag) and
//! what each command runs. The binary's `main` only parses, sets up logging, calls [`run`] and
//! prints the error it returns with its sources ([`chain`]).

pub mod args;
mod commands;
pub mod logging;
mod pins;
mod trust;

pub use crate::util::error::chain;
pub use commands::run;
