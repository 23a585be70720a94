//! A server's life: [`run`] starts the state (opening the plugins that asked to be opened at
//! start-up, reloading when given a source), binds, serves until SIGINT or SIGTERM, drains,
//! and tells every opened plugin to stop.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

use crate::{
    auth::Authenticator,
    build::Builder,
    providers::ProviderOpener,
    registry::Registry,
    reload::{Source, Triggers},
    serve::{
        Options, ServeError, ServeState,
        edge::{
            app::{check_path, front_door},
            drain,
            front::Front,
            listener,
            ready::Ready,
        },
        generation::{
            availability,
            swap::{self as reload},
        },
        host_context::rounds,
        mcp::subscriptions,
    },
};

/// How long connections may take to close once the calls have ended (or the grace is over).
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// A server started and not yet listening: what every request shares, the front door all
/// requests pass, and what shutting it down needs. The binary serves it on a listener of its
/// own ([`run`]); an application mounts its front door in its own router (`crate::embed`).
#[derive(Debug)]
pub(crate) struct Serving {
    state: Arc<ServeState>,
    front: Front,
    drain: Arc<drain::Drain>,
    sessions_cancel: CancellationToken,
    grace: Duration,
    /// How long to serve on, not ready, before draining.
    delay: Duration,
    /// Reloading goes on while this lives.
    _reloading: Option<reload::Reloading>,
}

impl Serving {
    /// Starts serving `registry`'s plugins as `args` say (the MCP path and authentication
    /// checked, the plugins that asked to be opened at start-up opened); with a `source`, a new
    /// generation each time its plugins change ([`crate::reload`]).
    pub(crate) async fn start(
        registry: Arc<Registry>,
        args: &Options,
        source: Option<Source>,
    ) -> Result<Self, ServeError> {
        let path = check_path(&args.path)?;
        let auth = Authenticator::new(&args.auth, &path)
            .map_err(ServeError::Auth)?
            .map(Arc::new);
        if let Some(oauth) = auth.as_ref().and_then(|a| a.oauth()) {
            tokio::spawn(Arc::clone(oauth.jwks()).keep_fresh(oauth.jwks_refresh()));
        }
        let sessions_cancel = CancellationToken::new();
        let (state, reloading) = start(registry, args, source).await?;
        if let Some(store) = auth.as_ref().and_then(|a| a.key_store()) {
            tokio::spawn(crate::auth::store::KeyStore::watch(
                Arc::clone(store),
                sessions_cancel.clone(),
            ));
        }
        let drain = Arc::new(drain::Drain::default());
        let front = front_door(
            Arc::clone(&state),
            args,
            &path,
            sessions_cancel.clone(),
            Arc::clone(&drain),
            auth,
        );
        Ok(Self {
            state,
            front,
            drain,
            sessions_cancel,
            grace: args.shutdown_grace,
            delay: args.shutdown_delay,
            _reloading: reloading,
        })
    }

    /// The front door: every route behind the guard, the drain and the credential check.
    pub(crate) fn front(&self) -> Front {
        self.front.clone()
    }

    /// Turns `/readyz` to 503, serves on for the shutdown delay, then drains.
    pub(crate) async fn leave(&self) {
        self.state.readiness.leave();
        if !self.delay.is_zero() {
            tracing::info!(
                "shutting down: /readyz answers 503; serving on for {} s (--shutdown-delay) \
                 before draining",
                self.delay.as_secs()
            );
            tokio::time::sleep(self.delay).await;
        }
        self.drain().await;
    }

    /// Refuses new requests, gives those in flight up to the shutdown grace to finish and send
    /// their answers, then ends the sessions.
    pub(crate) async fn drain(&self) {
        let grace = self.grace;
        tracing::info!(
            "shutting down: refusing new requests, {} in flight get up to {} s to finish",
            self.drain.in_flight(),
            grace.as_secs()
        );
        self.drain.start();
        if tokio::time::timeout(grace, self.drain.settled())
            .await
            .is_err()
        {
            tracing::warn!(
                "{} requests still running after {} s (--shutdown-grace); stopping anyway",
                self.drain.in_flight(),
                grace.as_secs()
            );
        }
        self.sessions_cancel.cancel();
    }

    /// Tells every opened plugin the host is stopping.
    pub(crate) async fn stop(&self) {
        stop(self.state.generation().builder()).await;
    }
}

/// Serves `registry`'s plugins as `args` say on the address they name, until SIGINT or
/// SIGTERM; with a `source`, a new generation each time its plugins change.
pub(crate) async fn run(
    registry: Arc<Registry>,
    args: Options,
    source: Option<Source>,
) -> Result<(), ServeError> {
    args.auth.check_host(&args.host)?;
    // Before the plugins open, so that their opening is counted.
    if let Some(given) = &args.metrics_addr {
        let bound = crate::serve::edge::metrics::serve(given).await?;
        eprintln!("metrics on http://{bound}/metrics");
    }
    let serving = Serving::start(registry, &args, source).await?;
    let host = crate::util::loopback::unbracketed(&args.host);
    let listener = tokio::net::TcpListener::bind((host, args.port))
        .await
        .map_err(|source| ServeError::Bind {
            address: format!("{}:{}", args.host, args.port),
            source,
        })?;
    let address: SocketAddr = listener.local_addr()?;
    if address.ip().is_unspecified() && args.allowed_hosts.is_empty() {
        tracing::warn!(
            "listening on every interface, but only loopback Host headers are accepted: \
             add --allowed-host NAME for the names clients use"
        );
    }
    if let Some(file) = &args.ready_file {
        Ready::new(address, args.path.trim())
            .write(file)
            .map_err(|source| ServeError::ReadyFile {
                path: file.clone(),
                source,
            })?;
    }
    eprintln!("listening on http://{address}{}", args.path.trim());
    if args.ui {
        eprintln!("the page: http://{address}/ui");
    }
    serve_on(&serving, listener, args.connections, shutdown_signal()).await;
    Ok(())
}

/// Serves `serving` on `listener` within `limits` until `shutdown` resolves; then drains,
/// closes the connections and stops the plugins.
pub(crate) async fn serve_on(
    serving: &Serving,
    listener: tokio::net::TcpListener,
    limits: listener::ConnectionLimits,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let closing = CancellationToken::new();
    let mut server = tokio::spawn(listener::serve(
        listener,
        serving.front(),
        limits,
        closing.clone(),
    ));
    shutdown.await;
    serving.leave().await;
    closing.cancel();
    if tokio::time::timeout(CLOSE_GRACE, &mut server)
        .await
        .is_err()
    {
        tracing::debug!("connections still open after {CLOSE_GRACE:?}; closing them");
        server.abort();
    }
    serving.stop().await;
}

/// The state serving `registry` as `args` say, once the plugins that asked to be opened at
/// start-up are, with resource updates dispatched and, with a `source`, reloading going (while
/// the [`reload::Reloading`] lives).
pub(crate) async fn start(
    registry: Arc<Registry>,
    args: &Options,
    source: Option<Source>,
) -> Result<(Arc<ServeState>, Option<reload::Reloading>), ServeError> {
    let (triggers, receiver) = Triggers::channel();
    let opener = match source {
        Some(_) => ProviderOpener::relisting(triggers.clone()),
        None => ProviderOpener::default(),
    };
    let builder = Arc::new(Builder::with_opener(registry, Arc::new(opener)));
    let opening = Arc::clone(&builder);
    tokio::task::spawn_blocking(move || opening.open_startup_plugins())
        .await
        .map_err(ServeError::Startup)?;
    let sealer = rounds::Sealer::from_env()?;
    let policy = args
        .policy
        .as_deref()
        .map(crate::policy::PolicyStore::open)
        .transpose()
        .map_err(ServeError::Policy)?
        .map(Arc::new);
    let shared = args
        .redis
        .as_ref()
        .map(|redis| redis.connect(args.replica_id.as_deref()))
        .transpose()?;
    let (state, updates, availability) =
        ServeState::new(builder, args, sealer, policy, shared.clone());
    if let Some(source) = &source {
        state
            .skipped
            .store(Arc::new(crate::reports::SkippedRow::all(&source.skipped)));
    }
    let state = Arc::new(state);
    if let Some(shared) = &shared {
        crate::serve::replicas::join(&state, shared);
    }
    if let Some(store) = &state.policy {
        let listening = Arc::downgrade(&state);
        tokio::spawn(crate::policy::PolicyStore::watch(
            Arc::downgrade(store),
            CancellationToken::new(),
            move || {
                if let Some(state) = listening.upgrade() {
                    let told = state.announce_policy_change();
                    tracing::debug!("told {told} sessions their tool lists may have changed");
                }
            },
        ));
    }
    tokio::spawn(availability::apply_changes(
        Arc::clone(&state),
        availability,
    ));
    tokio::spawn(subscriptions::dispatch(
        Arc::clone(&state.subscriptions),
        updates,
    ));
    let reloading =
        source.map(|source| reload::start(Arc::clone(&state), source, triggers, receiver));
    Ok((state, reloading))
}

/// Tells every opened plugin the host is stopping.
pub(crate) async fn stop(builder: &Arc<Builder>) {
    let builder = Arc::clone(builder);
    let _ = tokio::task::spawn_blocking(move || builder.stop_all()).await;
    tracing::info!("stopped");
}

/// Resolves on SIGINT (Ctrl-C) or, on Unix, SIGTERM.
pub(crate) async fn shutdown_signal() {
    let interrupt = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!("cannot listen for Ctrl-C: {error}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!("cannot listen for SIGTERM: {error}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}
