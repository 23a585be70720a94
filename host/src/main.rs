//! The `reactor-mcp-server` binary: parse the command line, run, print the error chain.

use std::{io::IsTerminal as _, process::ExitCode, sync::Arc};

use clap::Parser;
use host::{
    auth::admin,
    config::{Cli, Command, KeysCommand},
    isolation,
    registry::Registry,
    reports::{graph, listing::Listing},
    serve,
};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let authenticates = match &cli.command {
        None => cli.serve.auth.options().is_on(),
        Some(Command::Serve(args)) => args.auth.options().is_on(),
        Some(_) => false,
    };
    init_tracing(&cli.common.log_level, authenticates);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs to stderr, with colours only when stderr is a terminal; the audit lines only when
/// callers authenticate.
fn init_tracing(level: &str, authenticates: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(default_directives(level, authenticates))
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// The log filter for `--log-level LEVEL` when `RUST_LOG` is not set. At `info`, rmcp's
/// service lifecycle lines (`Service initialized as server`, `input stream terminated`,
/// `serve finished`: one set per session, and per request when stateless) and its `serve_inner`
/// span are left out: formatting them costs a sixth of the throughput of stateless calls (see
/// BENCHMARKS.md). `debug` and `trace` keep them. The audit line of each tool call (target
/// `audit`) is kept only when callers authenticate (`authenticates`): without identities it
/// would say nothing the server does not, at a cost on every call.
fn default_directives(level: &str, authenticates: bool) -> String {
    let mut directives = if level.trim().eq_ignore_ascii_case("info") {
        format!("{level},rmcp::service=warn")
    } else {
        level.to_owned()
    };
    if !authenticates {
        directives.push_str(",audit=warn");
    }
    directives
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let (common, command) = cli.into_command();
    match command {
        Command::List { json, refresh } => {
            if refresh {
                let found = common.discover()?;
                tokio::runtime::Runtime::new()?.block_on(host::bridge::refresh(&found.plugins));
            }
            let discovery = common.discover()?;
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
        Command::Graph { format } => {
            let discovery = common.discover()?;
            let text = graph::render(&Registry::new(discovery.plugins), format);
            #[allow(clippy::print_stdout)]
            {
                print!("{text}");
            }
            Ok(())
        }
        Command::Keys(KeysCommand::New {
            name,
            toolsets,
            readonly,
            expires,
            file,
        }) => {
            let new = admin::NewKey {
                name,
                toolsets,
                readonly,
                expires,
            };
            let key = admin::new_key(&file, &new)?;
            eprintln!(
                "added the key `{}` to {}; it is shown once, keep it now:",
                new.name,
                file.display()
            );
            #[allow(clippy::print_stdout)]
            {
                println!("{key}");
            }
            Ok(())
        }
        Command::Keys(KeysCommand::Revoke { name, file }) => {
            let count = admin::revoke(&file, &name)?;
            eprintln!(
                "revoked {count} key(s) named `{name}` in {}",
                file.display()
            );
            Ok(())
        }
        Command::Keys(KeysCommand::List { file }) => {
            let text = admin::list(&file)?;
            #[allow(clippy::print_stdout)]
            {
                print!("{text}");
            }
            Ok(())
        }
        Command::Serve(args) => {
            let (registry, source) = registry(&common, args.served.no_watch)?;
            tokio::runtime::Runtime::new()?.block_on(serve::run(
                registry,
                args.options(),
                Some(source),
            ))?;
            Ok(())
        }
        Command::Stdio(args) => {
            let protocol_out = serve::stdio::protect_stdout()?;
            let (registry, source) = registry(&common, args.served.no_watch)?;
            serve_stdio(registry, args.options(), protocol_out, Some(source))
        }
        Command::Isolated { library } => {
            let protocol_out = serve::stdio::protect_stdout()?;
            isolation::watch_parent();
            let plugin = isolation::child_plugin(library).map_err(anyhow::Error::msg)?;
            let options = isolation::child_options(&plugin.manifest);
            serve_stdio(
                Arc::new(Registry::new(vec![plugin])),
                options,
                protocol_out,
                None,
            )
        }
    }
}

/// Serves `registry` on stdin and `protocol_out` until stdin ends or a shutdown signal; with a
/// `source`, a new generation each time its plugins change.
fn serve_stdio(
    registry: Arc<Registry>,
    options: serve::Options,
    protocol_out: std::fs::File,
    source: Option<host::reload::Source>,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    let served = runtime.block_on(serve::stdio::run(registry, options, protocol_out, source));
    // A read of stdin may still be blocked on a thread of its own: do not wait for it.
    runtime.shutdown_background();
    Ok(served?)
}

/// The registry of the plugin folder, logging what it holds, and where it comes from (watched
/// unless `no_watch`).
fn registry(
    common: &host::config::Common,
    no_watch: bool,
) -> anyhow::Result<(Arc<Registry>, host::reload::Source)> {
    let discovery = common.discover()?;
    tracing::info!(
        "{} plugin(s) in {}: {}",
        discovery.plugins.len(),
        common.plugin_dir.display(),
        discovery
            .plugins
            .iter()
            .map(|p| p.manifest.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let registry = Arc::new(Registry::new(discovery.plugins.clone()));
    registry.warn_of_new_conflicts(None);
    Ok((registry, common.source(discovery, no_watch)))
}
