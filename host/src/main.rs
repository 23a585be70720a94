//! The `reactor-mcp-server` binary: parse the command line, run, print the error chain.

use std::process::ExitCode;

use clap::Parser;
use host::{
    config::{Cli, Command},
    discovery,
    listing::Listing,
};

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(&cli.common.log_level);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let common = cli.common;
    match cli.command {
        Some(Command::List { json }) => {
            let discovery =
                discovery::discover(&common.plugin_dir, common.extension_filter().as_deref())?;
            let listing = Listing::new(common.plugin_dir.clone(), &discovery);
            let text = if json {
                serde_json::to_string_pretty(&listing)?
            } else {
                listing.to_text()
            };
            #[allow(clippy::print_stdout)]
            {
                println!("{text}");
            }
            Ok(())
        }
        None => anyhow::bail!("serving is not available yet; try `reactor-mcp-server list`"),
    }
}
