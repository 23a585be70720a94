//! The `reactor-mcp-server` binary: parse the command line, set up logging, run, print the
//! error chain.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use reactor_mcp_server::cli::{self, args::Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let logging = cli::logging::init(cli.log_level(), cli.log_format(), cli.authenticates());
    let code = match cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", cli::chain(error.as_ref()));
            ExitCode::FAILURE
        }
    };
    drop(logging);
    code
}
