//! [`Queue`]: where plugins' messages to the server go (a resource changed, a tool turned off),
//! from any thread, with or without a runtime; one task of the server reads them in order.

use tokio::sync::mpsc;

/// The sending end of an unbounded queue; cloned into every call's context.
#[derive(Debug)]
pub(crate) struct Queue<T>(mpsc::UnboundedSender<T>);

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> Queue<T> {
    /// A sending end and the receiving end the server's task reads.
    pub(crate) fn channel() -> (Self, mpsc::UnboundedReceiver<T>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (Self(sender), receiver)
    }

    /// Queues `message`; returns at once. Dropped once the server stopped reading.
    pub(crate) fn send(&self, message: T) {
        let _ = self.0.send(message);
    }
}
