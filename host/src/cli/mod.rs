//! The command line: its arguments (clap, with an environment variable for every flag) and
//! what each command runs. The binary's `main` only parses, sets up logging and calls [`run`].

pub mod args;
mod commands;

pub use commands::run;
