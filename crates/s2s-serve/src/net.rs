//! The connection layer: accepting sockets under a cap, HTTP/1 with timeouts, and shutdown with
//! a deadline.
//!
//! `axum::serve` runs hyper without a timer, which turns hyper's header-read timeout off: a client
//! that sends half a header holds its socket for ever. Here every connection is served by hyper's
//! HTTP/1 builder with tokio's timer, so the head of each request (the first, and every later one
//! on a kept-alive socket) must arrive within `header_timeout`; a response write that makes no
//! progress for `write_timeout` closes the connection ([`WriteDeadline`]); at most
//! `max_connections` sockets are open at once (more wait in the kernel's backlog); and shutdown
//! waits at most `shutdown_timeout` for in-flight requests before dropping them.

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};

/// Connection limits and timeouts.
#[derive(Clone, Debug)]
pub struct NetLimits {
    /// Time for a request's head (request line and headers) to arrive; also how long a
    /// kept-alive socket may stay idle before its next request.
    pub header_timeout: Duration,
    /// Time for a request's body to arrive once its head has.
    pub body_timeout: Duration,
    /// Longest a response write may make no progress (a client that stops reading).
    pub write_timeout: Duration,
    /// Most connections open at once.
    pub max_connections: usize,
    /// Longest shutdown waits for in-flight requests.
    pub shutdown_timeout: Duration,
}

impl Default for NetLimits {
    fn default() -> Self {
        NetLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            max_connections: 512,
            shutdown_timeout: Duration::from_secs(10),
        }
    }
}

/// How serving ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Drained {
    /// Every in-flight request finished.
    All,
    /// The shutdown deadline passed; this many connections were dropped.
    Dropped(usize),
}

/// Serves `app` on `listener` until `shutdown` resolves, then drains under the deadline.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: &NetLimits,
    shutdown: impl Future<Output = ()>,
) -> Drained {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        while connections.try_join_next().is_some() {}
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of file descriptors and the like: wait instead of spinning.
                Err(e) => {
                    eprintln!("s2s serve: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let io = TokioIo::new(WriteDeadline::new(stream, limits.write_timeout));
        let conn = http.serve_connection(io, TowerToHyperService::new(app.clone()));
        let conn = graceful.watch(conn);
        connections.spawn(async move {
            let _ = conn.await;
            drop(slot);
        });
    }
    drop(listener);
    drop(app);
    let drained = tokio::select! {
        () = graceful.shutdown() => Drained::All,
        () = tokio::time::sleep(limits.shutdown_timeout) => {
            while connections.try_join_next().is_some() {}
            Drained::Dropped(connections.len())
        }
    };
    // Dropping the connections drops their handlers, whose requests' searches then stop.
    connections.shutdown().await;
    drained
}

/// A socket whose writes fail with `TimedOut` once one has been pending for longer than the
/// limit; the deadline restarts whenever a write makes progress.
pub struct WriteDeadline {
    inner: TcpStream,
    limit: Duration,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl WriteDeadline {
    pub fn new(inner: TcpStream, limit: Duration) -> Self {
        WriteDeadline {
            inner,
            limit,
            stalled: None,
        }
    }

    /// Maps a write's poll result through the deadline.
    fn watch<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if polled.is_ready() {
            self.stalled = None;
            return polled;
        }
        let limit = self.limit;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + limit)));
        ready!(sleep.as_mut().poll(cx));
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the client stopped reading the response",
        )))
    }
}

impl AsyncRead for WriteDeadline {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for WriteDeadline {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writing to a peer that never reads fills the socket buffers, then fails with `TimedOut`
    /// after the limit instead of waiting for ever.
    #[tokio::test]
    async fn a_write_the_peer_never_reads_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        let mut w = WriteDeadline::new(stream, Duration::from_millis(200));
        let chunk = vec![7u8; 1 << 16];
        let mut written = 0usize;
        let err = loop {
            match std::future::poll_fn(|cx| Pin::new(&mut w).poll_write(cx, &chunk)).await {
                Ok(n) => written += n,
                Err(e) => break e,
            }
            assert!(written < 1 << 30, "the socket buffers never filled");
        };
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        assert!(written > 0);
        drop(peer);
    }
}
