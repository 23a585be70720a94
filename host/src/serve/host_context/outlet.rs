//! Where a call's notifications go when the host answers its request itself
//! (`crate::serve::edge::hot`) rather than through rmcp's service loop: an [`Outlet`] in the
//! request's extensions takes them, and the request's answer carries them before its result,
//! as rmcp puts them on the request's own stream.

use rmcp::model::{
    LoggingMessageNotification, ProgressNotification, ServerJsonRpcMessage, ServerNotification,
};
use tokio::sync::mpsc;

use super::context::Event;

/// The notifications of one request answered by the host itself. They are boxed: the channel
/// allocates its first block of 32 slots when it is made, 256 bytes of pointers rather than
/// 12 kB of messages, for every request though most send none.
#[derive(Debug, Clone)]
pub(crate) struct Outlet {
    sender: mpsc::UnboundedSender<Box<ServerJsonRpcMessage>>,
    /// Whether log messages come here too. In a session they go to the peer, which sends them
    /// on the session's standalone stream as rmcp does; without a session there is no other
    /// way to the client.
    logs: bool,
}

impl Outlet {
    /// An outlet, taking log messages too when `logs`, and the receiving end.
    pub(crate) fn new(logs: bool) -> (Self, mpsc::UnboundedReceiver<Box<ServerJsonRpcMessage>>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (Self { sender, logs }, receiver)
    }

    /// Takes `event` if it is a notification for this outlet; gives it back otherwise.
    pub(super) fn take(&self, event: Event) -> Option<Event> {
        let notification = match event {
            Event::Progress(params) => {
                ServerNotification::ProgressNotification(ProgressNotification::new(params))
            }
            Event::Log(params) if self.logs => ServerNotification::LoggingMessageNotification(
                LoggingMessageNotification::new(params),
            ),
            other => return Some(other),
        };
        // The answer is gone with its receiver: nothing is waiting for the notification.
        let _ = self
            .sender
            .send(Box::new(ServerJsonRpcMessage::notification(notification)));
        None
    }
}
