//! The admin HTTP endpoint: /metrics, /healthz, /readyz (hyper 1), and
//! `POST /reload` (hot reload of the configuration file: 200 with what
//! changed, 400 with the file's error and the running configuration kept).

use std::convert::Infallible;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tracing::debug;

use crate::frontend::Shared;

pub async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| handle(req, shared.clone()));
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await
            {
                debug!(error = %e, "admin http connection");
            }
        });
    }
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r
}

async fn handle(req: Request<Incoming>, shared: Arc<Shared>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(match req.uri().path() {
        "/metrics" => {
            let mut r = text(StatusCode::OK, shared.metrics.render());
            r.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"),
            );
            r
        }
        "/healthz" => text(StatusCode::OK, "ok\n".into()),
        "/readyz" => readyz(&shared).await,
        "/reload" if req.method() == hyper::Method::POST => match crate::reload::reload(&shared).await {
            Ok(summary) => text(StatusCode::OK, format!("{summary}\n")),
            Err(e) => text(StatusCode::BAD_REQUEST, format!("{e}\n")),
        },
        "/reload" => text(StatusCode::METHOD_NOT_ALLOWED, "use POST /reload\n".into()),
        _ => text(StatusCode::NOT_FOUND, "not found\n".into()),
    })
}

/// Ready when the master of every group accepts a connection.
async fn readyz(shared: &Shared) -> Response<Full<Bytes>> {
    let mut failures = Vec::new();
    for g in &shared.runtime().topology.groups {
        let key = crate::backend::PoolKey::sluice_own();
        match g.master.get(key).await {
            Ok(mut c) => {
                if let Err(e) = c.ping().await {
                    failures.push(format!("{}: {e}", g.master.label));
                }
            }
            Err(e) => failures.push(format!("{}: {e}", g.master.label)),
        }
    }
    if failures.is_empty() {
        text(StatusCode::OK, "ready\n".into())
    } else {
        text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {}\n", failures.join("; ")),
        )
    }
}
