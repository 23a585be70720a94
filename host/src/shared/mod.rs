//! State the replicas of one deployment share, in Redis (`--redis-url`): what a replica
//! publishes for the others (a resource changed, a plugin turned a tool off), requests to the
//! replica that runs a task (its state, an answer, a cancel), records that outlive a replica
//! (tasks, 2025-11-25 sessions) and token buckets every replica draws from.
//!
//! Without `--redis-url` nothing here runs and a process keeps all of it to itself.
//!
//! [`Shared`] holds one multiplexed connection (redis-rs's `ConnectionManager`: it reconnects,
//! and every command has a response timeout) for commands, and one pub/sub connection that
//! listens on the deployment's event channel and on this replica's own channel. Writes that
//! must land in order (a task's states, then the answer that says it changed) go through one
//! writer task. A background check pings Redis: [`Shared::reachable`] is what `/readyz` says.

pub(crate) mod sessions;

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use futures::{FutureExt, StreamExt, future::BoxFuture};
use redis::{AsyncCommands, aio::ConnectionManager};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::util::{backoff::backoff, lock::lock};

/// How long one command to Redis may take before it fails.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long connecting to Redis may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a request to another replica waits for its answer.
const ASK_TIMEOUT: Duration = Duration::from_secs(5);
/// How often Redis is pinged for `/readyz`.
const PING_EVERY: Duration = Duration::from_secs(2);

/// Why shared state could not be reached or used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SharedError {
    /// The URL is not a Redis URL.
    #[error("--redis-url: {0}")]
    Url(String),
    /// Redis answered with an error, or not at all.
    #[error("Redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// The replica asked is not listening (it stopped, or never ran).
    #[error("replica `{0}` is not reachable (it stopped, or its connection to Redis is down)")]
    Gone(String),
    /// The replica asked did not answer in time.
    #[error("replica `{0}` did not answer within {1:?}")]
    Late(String, Duration),
    /// The replica asked answered with an error: its message.
    #[error("{0}")]
    Refused(String),
    /// A message that is not what this version sends.
    #[error("a message from Redis is not understood: {0}")]
    Message(#[from] serde_json::Error),
}

/// Where the shared state is (`--redis-url`, `--redis-prefix`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RedisOptions {
    /// The Redis URL: `redis://` or `rediss://` (TLS), with the user, password and database
    /// in it.
    pub(crate) url: String,
    /// What this deployment's keys and channels start with.
    pub(crate) prefix: String,
}

impl RedisOptions {
    /// The shared state, as the replica `replica` or, without a name, one made of the host
    /// name and a random suffix.
    pub(crate) fn connect(&self, replica: Option<&str>) -> Result<Arc<Shared>, SharedError> {
        let replica = replica.map_or_else(made_up_name, str::to_owned);
        Shared::connect(&self.url, replica, self.prefix.clone())
    }
}

/// A replica name for a replica given none: its host name (letters, digits, `-` and `_`
/// only) and 8 random hex digits.
fn made_up_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default();
    let host: String = host
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let mut random = [0u8; 4];
    let _ = getrandom::fill(&mut random);
    let suffix = crate::util::hash::hex(&random);
    if host.is_empty() {
        format!("replica-{suffix}")
    } else {
        format!("{host}-{suffix}")
    }
}

/// What one replica sends another on its channel.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Envelope {
    /// A request; the answer goes to `from`'s channel with the same `id`.
    Request { id: u64, from: String, body: Value },
    /// The answer to request `id`: its body, or why there is none.
    Answer {
        id: u64,
        body: Result<Value, String>,
    },
}

/// An event every replica hears, with the replica it comes from.
#[derive(Debug, Serialize, Deserialize)]
struct Broadcast {
    origin: String,
    event: Value,
}

/// What answers the requests other replicas send this one.
pub(crate) type Responder =
    Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, String>> + Send + Sync>;
/// What hears the events other replicas publish.
pub(crate) type Listener = Arc<dyn Fn(Value) + Send + Sync>;

/// One write, done in order with the others.
enum Write {
    Set {
        key: String,
        value: String,
        ttl: Duration,
    },
    Delete {
        key: String,
    },
    Publish {
        channel: String,
        message: String,
    },
}

/// This replica's connection to the deployment's shared state.
pub(crate) struct Shared {
    replica: String,
    prefix: String,
    client: redis::Client,
    connection: ConnectionManager,
    writes: mpsc::UnboundedSender<Write>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>,
    next: AtomicU64,
    reachable: AtomicBool,
    listening: AtomicBool,
    responder: OnceLock<Responder>,
    listener: OnceLock<Listener>,
    cancel: CancellationToken,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("replica", &self.replica)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// The shared state in the Redis of `url`, as the replica `replica`, listening from now on;
    /// keys and channels start with `prefix`. Connects in the background: a Redis that is not
    /// up yet makes the replica not ready (`/readyz`), not fail.
    pub(crate) fn connect(
        url: &str,
        replica: String,
        prefix: String,
    ) -> Result<Arc<Self>, SharedError> {
        let client = redis::Client::open(url).map_err(|e| SharedError::Url(e.to_string()))?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_number_of_retries(2);
        let connection = ConnectionManager::new_lazy_with_config(client.clone(), config)?;
        let (writes, queue) = mpsc::unbounded_channel();
        let shared = Arc::new(Self {
            replica,
            prefix,
            client,
            connection,
            writes,
            pending: Mutex::default(),
            next: AtomicU64::new(1),
            reachable: AtomicBool::new(false),
            listening: AtomicBool::new(false),
            responder: OnceLock::new(),
            listener: OnceLock::new(),
            cancel: CancellationToken::new(),
        });
        tokio::spawn(write_in_order(shared.connection.clone(), queue));
        tokio::spawn(listen(Arc::downgrade(&shared), shared.cancel.clone()));
        tokio::spawn(check(Arc::downgrade(&shared), shared.cancel.clone()));
        Ok(shared)
    }

    /// This replica's name.
    pub(crate) fn replica(&self) -> &str {
        &self.replica
    }

    /// The key or channel `name` of this deployment.
    pub(crate) fn key(&self, name: &str) -> String {
        format!("{}:{name}", self.prefix)
    }

    /// A connection for commands (clones share one multiplexed connection).
    pub(crate) fn connection(&self) -> ConnectionManager {
        self.connection.clone()
    }

    /// Whether Redis answered the last ping and this replica hears its channels; why not.
    pub(crate) fn unreachable(&self) -> Option<String> {
        if !self.reachable.load(Ordering::Relaxed) {
            Some("Redis (--redis-url) does not answer".to_owned())
        } else if !self.listening.load(Ordering::Relaxed) {
            Some("not subscribed to the replicas' channels in Redis yet".to_owned())
        } else {
            None
        }
    }

    /// Sets what answers other replicas' requests.
    pub(crate) fn respond_with(&self, responder: Responder) {
        let _ = self.responder.set(responder);
    }

    /// Sets what hears other replicas' events.
    pub(crate) fn hear_with(&self, listener: Listener) {
        let _ = self.listener.set(listener);
    }

    /// Tells every other replica `event`.
    pub(crate) fn publish(&self, event: Value) {
        let message = Broadcast {
            origin: self.replica.clone(),
            event,
        };
        if let Ok(message) = serde_json::to_string(&message) {
            self.write(Write::Publish {
                channel: self.key("events"),
                message,
            });
        }
    }

    /// Stores `value` under `key` for `ttl`, after every earlier write of this replica.
    pub(crate) fn put(&self, key: String, value: &impl Serialize, ttl: Duration) {
        if let Ok(value) = serde_json::to_string(value) {
            self.write(Write::Set { key, value, ttl });
        }
    }

    /// Deletes `key`, after every earlier write of this replica.
    pub(crate) fn delete(&self, key: String) {
        self.write(Write::Delete { key });
    }

    /// The value stored under `key`, if any.
    pub(crate) async fn get<T: for<'de> Deserialize<'de>>(
        &self,
        key: &str,
    ) -> Result<Option<T>, SharedError> {
        let text: Option<String> = self.connection().get(key).await?;
        Ok(text.map(|t| serde_json::from_str(&t)).transpose()?)
    }

    /// Asks the replica `replica` `body`; its answer. Sent after every earlier write of this
    /// replica, so what it wrote before is in Redis when the other replica reads.
    pub(crate) async fn ask(&self, replica: &str, body: Value) -> Result<Value, SharedError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = oneshot::channel();
        lock(&self.pending).insert(id, answer);
        let envelope = Envelope::Request {
            id,
            from: self.replica.clone(),
            body,
        };
        let sent: Result<usize, redis::RedisError> = self
            .connection()
            .publish(self.channel_of(replica), serde_json::to_string(&envelope)?)
            .await;
        let outcome = match sent {
            Ok(0) => Err(SharedError::Gone(replica.to_owned())),
            Ok(_) => match tokio::time::timeout(ASK_TIMEOUT, answered).await {
                Ok(Ok(Ok(body))) => Ok(body),
                Ok(Ok(Err(why))) => Err(SharedError::Refused(why)),
                Ok(Err(_)) | Err(_) => Err(SharedError::Late(replica.to_owned(), ASK_TIMEOUT)),
            },
            Err(e) => Err(e.into()),
        };
        lock(&self.pending).remove(&id);
        outcome
    }

    fn channel_of(&self, replica: &str) -> String {
        self.key(&format!("replica:{replica}"))
    }

    fn write(&self, write: Write) {
        let _ = self.writes.send(write);
    }

    /// Handles one message from a channel this replica listens on.
    fn hear(self: &Arc<Self>, channel: &str, payload: &str) {
        if channel == self.key("events") {
            match serde_json::from_str::<Broadcast>(payload) {
                Ok(b) if b.origin == self.replica => {}
                Ok(b) => {
                    if let Some(listener) = self.listener.get() {
                        listener(b.event);
                    }
                }
                Err(e) => tracing::warn!("an event from Redis is not understood: {e}"),
            }
            return;
        }
        match serde_json::from_str::<Envelope>(payload) {
            Ok(Envelope::Answer { id, body }) => {
                if let Some(waiting) = lock(&self.pending).remove(&id) {
                    let _ = waiting.send(body);
                }
            }
            Ok(Envelope::Request { id, from, body }) => {
                let Some(responder) = self.responder.get().cloned() else {
                    return;
                };
                let shared = Arc::clone(self);
                tokio::spawn(async move {
                    let body = responder(body).await;
                    if let Ok(message) = serde_json::to_string(&Envelope::Answer { id, body }) {
                        shared.write(Write::Publish {
                            channel: shared.channel_of(&from),
                            message,
                        });
                    }
                });
            }
            Err(e) => tracing::warn!("a request from Redis is not understood: {e}"),
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Carries out the writes one after the other, so they land in the order they were made.
async fn write_in_order(
    mut connection: ConnectionManager,
    mut queue: mpsc::UnboundedReceiver<Write>,
) {
    while let Some(write) = queue.recv().await {
        let done: Result<(), redis::RedisError> = match write {
            Write::Set { key, value, ttl } => {
                connection.set_ex(key, value, ttl.as_secs().max(1)).await
            }
            Write::Delete { key } => connection.del(key).await,
            Write::Publish { channel, message } => connection
                .publish(channel, message)
                .await
                .map(|_: usize| ()),
        };
        if let Err(error) = done {
            tracing::warn!("a write to Redis failed: {error}");
        }
    }
}

/// Listens on the event channel and this replica's own, reconnecting after a failure.
async fn listen(shared: std::sync::Weak<Shared>, cancel: CancellationToken) {
    let mut attempt = 0;
    loop {
        let Some(this) = shared.upgrade() else { return };
        let channels = [this.key("events"), this.channel_of(&this.replica)];
        let subscribed = async {
            let mut pubsub = this.client.get_async_pubsub().await?;
            pubsub.subscribe(&channels).await?;
            Ok::<_, redis::RedisError>(pubsub)
        }
        .await;
        match subscribed {
            Ok(pubsub) => {
                attempt = 0;
                this.listening.store(true, Ordering::Relaxed);
                tracing::info!(
                    replica = this.replica,
                    "listening to the other replicas in Redis"
                );
                let mut messages = pubsub.into_on_message();
                drop(this);
                loop {
                    let message = tokio::select! {
                        () = cancel.cancelled() => return,
                        message = messages.next() => message,
                    };
                    let (Some(message), Some(this)) = (message, shared.upgrade()) else {
                        break;
                    };
                    let payload: String = message.get_payload().unwrap_or_default();
                    this.hear(message.get_channel_name(), &payload);
                }
                if let Some(this) = shared.upgrade() {
                    this.listening.store(false, Ordering::Relaxed);
                }
                tracing::warn!("the subscription to Redis ended; subscribing again");
            }
            Err(error) => {
                this.listening.store(false, Ordering::Relaxed);
                tracing::warn!("cannot subscribe to the replicas' channels in Redis: {error}");
                drop(this);
            }
        }
        let wait = backoff(attempt).min(Duration::from_secs(5));
        attempt += 1;
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Pings Redis now and every [`PING_EVERY`], recording whether it answered.
async fn check(shared: std::sync::Weak<Shared>, cancel: CancellationToken) {
    let mut first = true;
    loop {
        if !std::mem::take(&mut first) {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(PING_EVERY) => {}
            }
        }
        let Some(this) = shared.upgrade() else { return };
        let mut connection = this.connection();
        let answered = redis::cmd("PING")
            .query_async::<String>(&mut connection)
            .map(|r| r.is_ok())
            .await;
        if this.reachable.swap(answered, Ordering::Relaxed) != answered {
            if answered {
                tracing::info!("Redis answers");
            } else {
                tracing::warn!("Redis (--redis-url) does not answer");
            }
        }
    }
}
