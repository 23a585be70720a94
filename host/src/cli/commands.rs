//! What each command of the command line runs: listing, the graph, the keys file, and
//! serving over HTTP, over stdio, or as an isolated plugin's child.

use std::sync::Arc;

use plugin_manifest::Manifest;

use super::args::{Cli, Command, KeysCommand};
use crate::{
    auth::admin,
    build::private_copy::RemoveOnExit,
    embed::ServerBuilder,
    registry::Registry,
    reports::{graph, listing::Listing},
    serve,
};

/// Runs the command `cli` names.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let (common, command) = cli.into_command();
    match command {
        Command::List { json, refresh } => {
            if refresh {
                let found = common.sources().discover()?;
                tokio::runtime::Runtime::new()?
                    .block_on(crate::providers::bridged::refresh(&found.plugins));
            }
            let discovery = common.sources().discover()?;
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
            let discovery = common.sources().discover()?;
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
        Command::Pins(command) => super::pins::run(&common, command),
        Command::Serve(args) => {
            let _copies = RemoveOnExit { sweep: true };
            crate::build::crash_note::install();
            let sources = args.served.sources(&common);
            let server = ServerBuilder::from_parts(sources, args.options(), !args.served.no_watch);
            tokio::runtime::Runtime::new()?.block_on(server.run())?;
            Ok(())
        }
        Command::Stdio(args) => {
            let _copies = RemoveOnExit { sweep: true };
            crate::build::crash_note::install();
            let sources = args.served.sources(&common);
            let server = ServerBuilder::from_parts(sources, args.options(), !args.served.no_watch);
            run_stdio(server.serve_stdio(), tokio::runtime::Runtime::new()?)
        }
        Command::Keygen {
            out,
            password_env,
            force,
        } => super::trust::keygen(&out, password_env.as_deref(), force),
        Command::Sign {
            libraries,
            key,
            password_env,
        } => super::trust::sign(&libraries, &key, password_env.as_deref()),
        Command::Lock => super::trust::lock(&common),
        Command::Isolated {
            library,
            sha256,
            confine,
            no_hot_path,
        } => {
            let _copies = RemoveOnExit { sweep: false };
            crate::observe::plugin_logs::await_parent();
            let protocol_out = serve::stdio::protect_stdout()?;
            let plugin = crate::providers::isolated::child_plugin(library, sha256)?;
            // Before any thread starts and before the library is opened.
            let _sandbox = confine
                .map(|policy| {
                    crate::providers::isolated::confine::enter(
                        &policy,
                        &plugin.path,
                        &plugin.manifest.name,
                    )
                })
                .transpose()?;
            crate::providers::isolated::watch_parent();
            let options = serve::Options {
                hot_path: !no_hot_path,
                ..child_options(&plugin.manifest)
            };
            // One thread serves the one plugin: a call crosses no thread in the child (a sync
            // tool still runs on the blocking pool), where tokio's workers would wake each
            // other for each request read and each answer written.
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let served = serve::stdio::run(
                Arc::new(Registry::new(vec![plugin])),
                options,
                protocol_out,
                None,
            );
            run_stdio(served, runtime)
        }
    }
}

/// Runs a server on stdin and stdout to its end, on `runtime`.
fn run_stdio<E>(
    served: impl std::future::Future<Output = Result<(), E>>,
    runtime: tokio::runtime::Runtime,
) -> anyhow::Result<()>
where
    E: std::error::Error + Send + Sync + 'static,
{
    let served = runtime.block_on(served);
    // A read of stdin may still be blocked on a thread of its own: do not wait for it.
    runtime.shutdown_background();
    Ok(served?)
}

/// What the child serves: every toolset of its one library (it serves nothing else), without
/// the host's own `list_server_toolsets`, each result saying what the tool answered.
fn child_options(manifest: &Manifest) -> serve::Options {
    let toolsets: Vec<&str> = manifest.toolsets.iter().map(|t| t.name.as_str()).collect();
    serve::Options {
        fallback: Some(crate::selection::Query::parse(&format!(
            "only={}",
            toolsets.join(",")
        ))),
        toolsets_tool: false,
        for_parent: true,
        ..serve::Options::default()
    }
}
