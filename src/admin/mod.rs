//! The admin endpoint: HTTP for Prometheus (`/metrics`), health checks
//! (`/healthz`, `/readyz`) and `POST /reload`. It sits above the other
//! layers: it reads the metrics, the sessions' shared state and the
//! topology, and triggers reloads; none of them know about it.

pub mod console;
pub mod http;
mod ready;
pub mod topology;
mod v1;

pub use http::serve;

/// Accept on `listener` forever and run `serve` for each connection in a
/// task of its own, at most `max` at once (one more is closed at once).
/// Accept errors (EMFILE and friends repeat at once) pause, never spin.
pub(crate) async fn accept_limited<F, Fut>(
    listener: tokio::net::TcpListener,
    max: usize,
    what: &str,
    serve: F,
) where
    F: Fn(tokio::net::TcpStream, std::net::SocketAddr) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let places = std::sync::Arc::new(tokio::sync::Semaphore::new(max));
    let mut backoff = crate::frontend::backoff::AcceptBackoff::default();
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(s) => {
                backoff.reset();
                s
            }
            Err(e) => {
                tracing::warn!(error = %e, "{what}: accept failed");
                backoff.wait().await;
                continue;
            }
        };
        let Ok(place) = places.clone().try_acquire_owned() else {
            tracing::debug!("{what}: connection limit reached, closing a new connection");
            continue;
        };
        let work = serve(stream, peer);
        tokio::spawn(async move {
            let _place = place;
            work.await
        });
    }
}
