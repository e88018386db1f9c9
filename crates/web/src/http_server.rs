//! The HTTP listener: hyper's connection builder with the limits axum's own
//! `serve` does not expose. A client has `header_read_timeout` to send a
//! request's headers (a slow-header client cannot hold a socket for ever),
//! and a quiet HTTP/2 connection as long to answer a ping;
//! at most `max_connections` are served at once, the rest wait in the
//! kernel's accept queue; on shutdown, no new connections are taken and
//! in-flight requests finish (for at most `DRAIN`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Requests one HTTP/2 connection carries at once.
const H2_STREAMS: u32 = 100;
/// Largest header block an HTTP/2 request may send (HTTP/1's limit is hyper's).
const H2_HEADER_BYTES: u32 = 64 * 1024;

/// Longest wait for in-flight requests at shutdown.
const DRAIN: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_read_timeout: Duration,
    pub max_connections: usize,
}

/// HTTP/2's connection preface: hyper reads this many bytes to tell it
/// from HTTP/1.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Wait until the client has sent enough to tell its protocol (the whole
/// preface, or bytes that are not one); false when it hangs up first.
async fn first_bytes(stream: &tokio::net::TcpStream) -> bool {
    let mut buf = [0u8; 24];
    loop {
        match stream.peek(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) if n >= H2_PREFACE.len() || buf[..n] != H2_PREFACE[..n] => return true,
            // A prefix of the preface so far: wait for more.
            Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// Serve `app` on `listener` until `shutdown` resolves. Each request carries
/// its peer's address as `ConnectInfo<SocketAddr>`.
pub async fn serve(listener: TcpListener, app: Router, limits: Limits, shutdown: impl Future<Output = ()>) {
    let mut builder = Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    // HTTP/2: a connection is pinged once quiet for the header timeout and
    // closed when the ping goes unanswered that long again (a client that
    // sends its preface and goes quiet holds nothing for ever), and one
    // connection carries at most `H2_STREAMS` requests at once.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(limits.header_read_timeout))
        .keep_alive_timeout(limits.header_read_timeout)
        .max_concurrent_streams(H2_STREAMS)
        .max_header_list_size(H2_HEADER_BYTES);
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors or memory: wait rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let svc = tower::ServiceExt::map_request(app.clone(), move |mut req: axum::extract::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            req
        });
        let (builder, watcher, wait) = (builder.clone(), graceful.watcher(), limits.header_read_timeout);
        tokio::spawn(async move {
            // The protocol is told by the first bytes, which hyper waits
            // for without a timeout: a client that sends fewer never
            // reaches the header timeout, so it has as long to send them.
            if !tokio::time::timeout(wait, first_bytes(&stream)).await.unwrap_or(false) {
                drop(permit);
                return;
            }
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), hyper_util::service::TowerToHyperService::new(svc));
            // A client that hangs up or times out ends its connection; nothing to report.
            let _ = watcher.watch(conn.into_owned()).await;
            drop(permit);
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(DRAIN) => tracing::warn!("shutdown: connections still open after {DRAIN:?}; closing them"),
    }
}
