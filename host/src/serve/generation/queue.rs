//! [`Queue`]: where plugins' messages to the server go (a resource changed, a tool turned off),
//! from any thread, with or without a runtime; one task of the server reads them in order.

use std::sync::Arc;

use tokio::sync::mpsc;

/// What else hears each message: the other replicas, with `--redis-url`.
pub(crate) type Mirror<T> = Arc<dyn Fn(&T) + Send + Sync>;

/// The sending end of an unbounded queue; cloned into every call's context.
pub(crate) struct Queue<T> {
    sender: mpsc::UnboundedSender<T>,
    mirror: Option<Mirror<T>>,
}

impl<T> std::fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("mirrored", &self.mirror.is_some())
            .finish()
    }
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Self {
            sender: self.sender.clone(),
            mirror: self.mirror.clone(),
        }
    }
}

impl<T> Queue<T> {
    /// A sending end and the receiving end the server's task reads.
    pub(crate) fn channel() -> (Self, mpsc::UnboundedReceiver<T>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let queue = Self {
            sender,
            mirror: None,
        };
        (queue, receiver)
    }

    /// The same queue, each message also given to `mirror` as it is sent.
    pub(crate) fn mirrored(self, mirror: Option<Mirror<T>>) -> Self {
        Self { mirror, ..self }
    }

    /// The same queue without its mirror: for messages that came from where it mirrors to.
    pub(crate) fn unmirrored(&self) -> Self {
        Self {
            sender: self.sender.clone(),
            mirror: None,
        }
    }

    /// Queues `message`; returns at once. Dropped once the server stopped reading.
    pub(crate) fn send(&self, message: T) {
        if let Some(mirror) = &self.mirror {
            mirror(&message);
        }
        let _ = self.sender.send(message);
    }
}
