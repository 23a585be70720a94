//! Resource subscriptions across sessions, and the sending of `notifications/resources/updated`.
//!
//! [`Hub`] is the server-wide record: which sessions subscribed to which URI, with the
//! [`Subscriber`] to notify each. A session's handler holds a [`Session`], its entry in the hub:
//! `resources/subscribe` and `resources/unsubscribe` go through it, and dropping it (rmcp drops
//! the handler when the session ends) forgets all its subscriptions. Under 2026-07-28, which has
//! no sessions, each `subscriptions/listen` stream is an entry of its own, holding the URIs of
//! its filter for as long as the stream is open. A subscription is only recorded for a URI the
//! session's own active set serves (checked in [`crate::serve::mcp::contributions::subscribe`]), so a session
//! only hears about resources it can read.
//!
//! A plugin says a resource changed through its call context (`HostContext::resource_updated`),
//! from its own threads: [`Updates::send`] puts the URI into an unbounded channel (no reactor
//! needed), and [`dispatch`], a task on the host's runtime, sends the notification to every
//! session subscribed to that URI, each in a task of its own so a slow client delays no other.
//! A session whose transport is closed, or whose send fails, is forgotten.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use crate::util::lock::lock;
use rmcp::{
    RoleServer,
    model::{ResourceUpdatedNotification, ResourceUpdatedNotificationParam, ServerNotification},
    service::{Peer, SubscriptionSink},
};
use tokio::sync::mpsc;

/// Which sessions subscribed to which URI; `P` is how a session is reached (a peer).
pub(crate) struct Hub<P> {
    next: AtomicU64,
    bounds: Bounds,
    state: Mutex<State<P>>,
}

/// What one session may subscribe to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// The most subscriptions one session holds.
    pub(crate) per_session: usize,
    /// The longest URI, in bytes.
    pub(crate) uri_bytes: usize,
}

/// Why a subscription was refused: the bound it would pass.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refused {
    /// The session holds as many subscriptions as allowed.
    #[error(
        "this session already holds {limit} resource subscriptions, the most \
         --max-subscriptions allows; unsubscribe from one first"
    )]
    TooMany {
        /// The limit.
        limit: usize,
    },
    /// The URI is longer than allowed.
    #[error("the URI is {length} bytes long; --max-uri-length allows at most {limit}")]
    UriTooLong {
        /// The URI's length in bytes.
        length: usize,
        /// The limit.
        limit: usize,
    },
}

impl Bounds {
    /// Whether a URI this long may be subscribed to.
    pub(crate) fn check_uri(&self, uri: &str) -> Result<(), Refused> {
        if uri.len() > self.uri_bytes {
            return Err(Refused::UriTooLong {
                length: uri.len(),
                limit: self.uri_bytes,
            });
        }
        Ok(())
    }
}

struct State<P> {
    /// URI -> session id -> how to reach it.
    by_uri: BTreeMap<String, BTreeMap<u64, P>>,
    /// Session id -> its URIs.
    by_session: BTreeMap<u64, BTreeSet<String>>,
}

impl<P> State<P> {
    /// Removes `session` from the subscribers of `uri`, and `uri` once it has none left.
    fn drop_subscriber(&mut self, uri: &str, session: u64) {
        if let Some(sessions) = self.by_uri.get_mut(uri) {
            sessions.remove(&session);
            if sessions.is_empty() {
                self.by_uri.remove(uri);
            }
        }
    }
}

/// The hub the server runs.
pub(crate) type ServerHub = Hub<Subscriber>;

/// How a subscriber hears of a change.
#[derive(Debug, Clone)]
pub(crate) enum Subscriber {
    /// A 2025-11-25 session, through its peer.
    Session(Peer<RoleServer>),
    /// A 2026-07-28 `subscriptions/listen` stream, which tags what it sends with its id.
    Stream(SubscriptionSink),
}

impl Subscriber {
    /// Whether it is known to be gone (a stream only says so when a send fails).
    fn is_gone(&self) -> bool {
        match self {
            Self::Session(peer) => peer.is_transport_closed(),
            Self::Stream(_) => false,
        }
    }

    /// Sends `notifications/resources/updated` for `uri`; why not, if it could not.
    async fn resource_updated(&self, uri: String) -> Result<(), String> {
        let params = ResourceUpdatedNotificationParam::new(uri);
        match self {
            Self::Session(peer) => peer
                .notify_resource_updated(params)
                .await
                .map_err(|e| e.to_string()),
            Self::Stream(sink) => sink
                .send(ServerNotification::ResourceUpdatedNotification(
                    ResourceUpdatedNotification::new(params),
                ))
                .await
                .map_err(|e| e.to_string()),
        }
    }
}

impl<P> std::fmt::Debug for Hub<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.state);
        f.debug_struct("Hub")
            .field("uris", &state.by_uri.keys().collect::<Vec<_>>())
            .field("sessions", &state.by_session.len())
            .finish()
    }
}

impl<P: Clone> Hub<P> {
    /// An empty hub whose sessions subscribe within `bounds`.
    pub(crate) fn new(bounds: Bounds) -> Arc<Self> {
        Arc::new(Self {
            next: AtomicU64::new(1),
            bounds,
            state: Mutex::new(State {
                by_uri: BTreeMap::new(),
                by_session: BTreeMap::new(),
            }),
        })
    }

    /// A new session's entry; dropping it forgets the session's subscriptions.
    pub(crate) fn session(self: &Arc<Self>) -> Session<P> {
        Session {
            id: self.next.fetch_add(1, Ordering::Relaxed),
            hub: Arc::clone(self),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<P>> {
        lock(&self.state)
    }

    fn subscribe(&self, session: u64, uri: &str, peer: P) -> Result<(), Refused> {
        self.bounds.check_uri(uri)?;
        let mut state = self.lock();
        let uris = state.by_session.entry(session).or_default();
        if !uris.contains(uri) && uris.len() >= self.bounds.per_session {
            if uris.is_empty() {
                state.by_session.remove(&session);
            }
            return Err(Refused::TooMany {
                limit: self.bounds.per_session,
            });
        }
        uris.insert(uri.to_owned());
        state
            .by_uri
            .entry(uri.to_owned())
            .or_default()
            .insert(session, peer);
        Ok(())
    }

    fn unsubscribe(&self, session: u64, uri: &str) {
        let mut state = self.lock();
        state.drop_subscriber(uri, session);
        if let Some(uris) = state.by_session.get_mut(&session) {
            uris.remove(uri);
            if uris.is_empty() {
                state.by_session.remove(&session);
            }
        }
    }

    /// Forgets every subscription of `session`.
    pub(crate) fn forget(&self, session: u64) {
        let mut state = self.lock();
        for uri in state.by_session.remove(&session).unwrap_or_default() {
            state.drop_subscriber(&uri, session);
        }
    }

    /// The sessions subscribed to `uri`, with their ids.
    pub(crate) fn subscribers(&self, uri: &str) -> Vec<(u64, P)> {
        self.lock()
            .by_uri
            .get(uri)
            .map(|s| s.iter().map(|(id, p)| (*id, p.clone())).collect())
            .unwrap_or_default()
    }

    /// Whether a session is subscribed to `uri`.
    pub(crate) fn holds(&self, uri: &str) -> bool {
        self.lock().by_uri.contains_key(uri)
    }

    /// The URIs `session` subscribed to.
    #[cfg(test)]
    fn uris_of(&self, session: u64) -> BTreeSet<String> {
        self.lock()
            .by_session
            .get(&session)
            .cloned()
            .unwrap_or_default()
    }
}

/// One session's entry in the hub.
pub(crate) struct Session<P: Clone> {
    id: u64,
    hub: Arc<Hub<P>>,
}

impl<P: Clone> std::fmt::Debug for Session<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("id", &self.id).finish()
    }
}

impl<P: Clone> Session<P> {
    /// Subscribes the session, reached through `peer`, to `uri`, unless that would pass a
    /// bound. Subscribing again to a URI it holds is always allowed.
    pub(crate) fn subscribe(&self, uri: &str, peer: P) -> Result<(), Refused> {
        self.hub.subscribe(self.id, uri, peer)
    }

    /// What the session may subscribe to.
    pub(crate) fn bounds(&self) -> Bounds {
        self.hub.bounds
    }

    /// Unsubscribes the session from `uri` (nothing if it was not subscribed).
    pub(crate) fn unsubscribe(&self, uri: &str) {
        self.hub.unsubscribe(self.id, uri);
    }

    /// The URIs the session subscribed to.
    #[cfg(test)]
    pub(crate) fn uris(&self) -> BTreeSet<String> {
        self.hub.uris_of(self.id)
    }
}

impl<P: Clone> Drop for Session<P> {
    fn drop(&mut self) {
        self.hub.forget(self.id);
    }
}

/// Where plugins' "this resource changed" goes, by URI: [`dispatch`] drains it.
pub(crate) type Updates = crate::serve::generation::queue::Queue<String>;

/// Sends each URI that comes through `updates` to the sessions subscribed to it, until every
/// sender is gone.
pub(crate) async fn dispatch(hub: Arc<ServerHub>, mut updates: mpsc::UnboundedReceiver<String>) {
    while let Some(uri) = updates.recv().await {
        for (session, subscriber) in hub.subscribers(&uri) {
            if subscriber.is_gone() {
                hub.forget(session);
                continue;
            }
            let hub = Arc::clone(&hub);
            let uri = uri.clone();
            tokio::spawn(async move {
                if let Err(error) = subscriber.resource_updated(uri).await {
                    tracing::debug!("session {session} is gone ({error}); forgetting it");
                    hub.forget(session);
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOMY: Bounds = Bounds {
        per_session: 100,
        uri_bytes: 100,
    };

    fn names(subscribers: Vec<(u64, &'static str)>) -> Vec<&'static str> {
        subscribers.into_iter().map(|(_, p)| p).collect()
    }

    #[test]
    fn each_uri_reaches_the_sessions_subscribed_to_it() {
        let hub = Hub::new(ROOMY);
        let a = hub.session();
        let b = hub.session();
        a.subscribe("x://1", "a").unwrap();
        a.subscribe("x://2", "a").unwrap();
        b.subscribe("x://1", "b").unwrap();
        assert_eq!(names(hub.subscribers("x://1")), ["a", "b"]);
        assert_eq!(names(hub.subscribers("x://2")), ["a"]);
        assert!(hub.subscribers("x://3").is_empty());
        // Subscribing twice is once.
        b.subscribe("x://1", "b").unwrap();
        assert_eq!(names(hub.subscribers("x://1")), ["a", "b"]);
        assert_eq!(b.uris().into_iter().collect::<Vec<_>>(), ["x://1"]);
    }

    #[test]
    fn unsubscribing_stops_one_uri_for_one_session() {
        let hub = Hub::new(ROOMY);
        let a = hub.session();
        let b = hub.session();
        a.subscribe("x://1", "a").unwrap();
        a.subscribe("x://2", "a").unwrap();
        b.subscribe("x://1", "b").unwrap();
        a.unsubscribe("x://1");
        a.unsubscribe("x://never");
        assert_eq!(names(hub.subscribers("x://1")), ["b"]);
        assert_eq!(names(hub.subscribers("x://2")), ["a"]);
        assert_eq!(a.uris().into_iter().collect::<Vec<_>>(), ["x://2"]);
        b.unsubscribe("x://1");
        assert!(hub.subscribers("x://1").is_empty());
        assert!(!hub.lock().by_uri.contains_key("x://1"), "no empty entries");
    }

    #[test]
    fn a_session_that_ends_or_is_forgotten_leaves_nothing_behind() {
        let hub = Hub::new(ROOMY);
        let a = hub.session();
        let b = hub.session();
        a.subscribe("x://1", "a").unwrap();
        a.subscribe("x://2", "a").unwrap();
        b.subscribe("x://2", "b").unwrap();
        drop(a);
        assert!(hub.subscribers("x://1").is_empty());
        assert_eq!(names(hub.subscribers("x://2")), ["b"]);
        hub.forget(b.id);
        assert!(b.uris().is_empty());
        assert!(hub.subscribers("x://2").is_empty());
        let state = hub.lock();
        assert!(state.by_uri.is_empty() && state.by_session.is_empty());
    }

    #[test]
    fn a_session_subscribes_within_its_bounds() {
        let hub = Hub::new(Bounds {
            per_session: 2,
            uri_bytes: 8,
        });
        let a = hub.session();
        let b = hub.session();
        assert_eq!(
            a.subscribe("x://long-uri", "a"),
            Err(Refused::UriTooLong {
                length: 12,
                limit: 8
            })
        );
        assert_eq!(b.subscribe("x://1", "b"), Ok(()), "nothing was left behind");
        a.subscribe("x://1", "a").unwrap();
        a.subscribe("x://2", "a").unwrap();
        let refused = a.subscribe("x://3", "a").unwrap_err();
        assert_eq!(refused, Refused::TooMany { limit: 2 });
        assert!(
            refused.to_string().contains("--max-subscriptions"),
            "{refused}"
        );
        // Holding a URI already is no new subscription; another session has its own count.
        a.subscribe("x://2", "a").unwrap();
        b.subscribe("x://3", "b").unwrap();
        a.unsubscribe("x://1");
        a.subscribe("x://3", "a").unwrap();
        assert_eq!(names(hub.subscribers("x://3")), ["a", "b"]);
        let none = Hub::new(Bounds {
            per_session: 0,
            uri_bytes: 8,
        });
        assert!(none.session().subscribe("x://1", "c").is_err());
        assert!(none.lock().by_session.is_empty(), "no empty entries");
    }

    #[test]
    fn updates_are_queued_in_order_from_any_thread() {
        let (updates, mut receiver) = Updates::channel();
        let sender = updates.clone();
        std::thread::spawn(move || {
            sender.send("x://1".to_owned());
            sender.send("x://2".to_owned());
        })
        .join()
        .unwrap();
        assert_eq!(receiver.try_recv().unwrap(), "x://1");
        assert_eq!(receiver.try_recv().unwrap(), "x://2");
        drop(receiver);
        updates.send("x://3".to_owned()); // the server is gone: nothing happens
    }
}
