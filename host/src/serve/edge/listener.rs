//! Connections: the accept loop, bounded.
//!
//! - At most [`ConnectionLimits::max_connections`] are served at once; one beyond gets
//!   `503 Service Unavailable` and is closed at once, so a flood cannot take the process's file
//!   descriptors (and with them `/healthz`).
//! - A client has [`ConnectionLimits::header_timeout`] to send a request's headers, counted from
//!   the connection's start or from the end of its previous answer; a connection that sends none
//!   in that time is closed (half-sent headers included: slowloris).
//! - A write the client does not take for [`ConnectionLimits::idle_timeout`] (it stopped reading
//!   its answer) ends the connection; a body that stalls that long is refused by
//!   [`crate::serve::edge::body`].
//!
//! [`serve`] returns once `stop` is cancelled and every connection has closed: on `stop`, each
//! connection finishes the answer it is writing and closes.

use std::{
    future::Future as _,
    io,
    net::SocketAddr,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::{conn::auto::Builder, graceful::GracefulShutdown},
};
use tokio::{
    io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, ReadBuf},
    net::{TcpListener, TcpStream},
    sync::Semaphore,
    time::Sleep,
};
use tokio_util::sync::CancellationToken;

use crate::serve::edge::front::Front;

/// The bounds on connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConnectionLimits {
    /// Connections served at once.
    pub(crate) max_connections: usize,
    /// Time to send a request's headers.
    pub(crate) header_timeout: Duration,
    /// Time a write may wait for the client to read, and a body may stall.
    pub(crate) idle_timeout: Duration,
}

impl ConnectionLimits {
    /// The defaults: 512 connections, 10 s for headers, 60 s idle.
    pub(crate) const DEFAULT: Self = Self {
        max_connections: 512,
        header_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(60),
    };
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// How long a refused connection may take to receive its 503.
const REFUSAL_WRITE: Duration = Duration::from_secs(1);

/// How long the loop pauses when `accept` fails (out of file descriptors, say), so that it does
/// not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves `front` on `listener` within `limits` until `stop` is cancelled and every connection
/// has closed.
pub(crate) async fn serve(
    listener: TcpListener,
    front: Front,
    limits: ConnectionLimits,
    stop: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    loop {
        let (tcp, peer) = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!("cannot accept a connection: {error}");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        // Nagle's algorithm meeting the client's delayed ACK stalls every SSE answer ~44 ms.
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {error}");
        }
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            tokio::spawn(refuse(tcp, peer, limits.max_connections));
            continue;
        };
        let io = TokioIo::new(WriteTimeout::new(tcp, limits.idle_timeout));
        let front = front.clone();
        let service =
            hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                front.clone().handle(request.map(axum::body::Body::new))
            });
        let connection = graceful.watch(builder.serve_connection(io, service).into_owned());
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%peer, "connection ended: {}", crate::util::error::chain(&*error));
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Answers a connection over the limit with 503 and closes it.
async fn refuse(mut tcp: TcpStream, peer: SocketAddr, max: usize) {
    tracing::warn!(%peer, "refused a connection: {max} connections are open (--max-connections)");
    let body = format!("Service Unavailable: {max} connections are open\n");
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nretry-after: 1\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSAL_WRITE, async {
        tcp.write_all(response.as_bytes()).await?;
        tcp.shutdown().await
    })
    .await;
}

/// A stream whose writes fail with `TimedOut` when the peer takes none of them for `limit`.
#[derive(Debug)]
struct WriteTimeout<S> {
    inner: S,
    limit: Duration,
    /// Armed while a write is pending.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteTimeout<S> {
    fn new(inner: S, limit: Duration) -> Self {
        Self {
            inner,
            limit,
            deadline: None,
        }
    }

    /// Whether a pending write has waited past the limit (arming the timer on first wait).
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        let limit = self.limit;
        let deadline = self
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        deadline.as_mut().poll(cx).is_ready()
    }

    fn timed_out(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the client read nothing for {} s (--idle-timeout)",
                self.limit.as_secs()
            ),
        )
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteTimeout<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> WriteTimeout<S> {
    /// Polls a write-side operation under the timeout.
    fn guarded<T>(
        &mut self,
        cx: &mut Context<'_>,
        operation: impl FnOnce(Pin<&mut S>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match operation(Pin::new(&mut self.inner), cx) {
            Poll::Ready(result) => {
                self.deadline = None;
                Poll::Ready(result)
            }
            Poll::Pending if self.expired(cx) => Poll::Ready(Err(self.timed_out())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.guarded(cx, |inner, cx| inner.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.guarded(cx, |inner, cx| inner.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.guarded(cx, AsyncWrite::poll_flush)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.guarded(cx, AsyncWrite::poll_shutdown)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt as _, duplex};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_write_the_peer_never_takes_times_out() {
        let (near, _far) = duplex(8);
        let mut stream = WriteTimeout::new(near, Duration::from_secs(60));
        let error = stream.write_all(&[0; 64]).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(error.to_string().contains("60 s"), "{error}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_peer_that_reads_keeps_the_stream_alive() {
        let (near, mut far) = duplex(8);
        let mut stream = WriteTimeout::new(near, Duration::from_secs(60));
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut chunk = [0; 8];
            while got.len() < 64 {
                tokio::time::sleep(Duration::from_secs(30)).await;
                let n = far.read(&mut chunk).await.unwrap();
                got.extend_from_slice(&chunk[..n]);
            }
            got.len()
        });
        stream.write_all(&[1; 64]).await.unwrap();
        assert_eq!(reader.await.unwrap(), 64);
    }
}
