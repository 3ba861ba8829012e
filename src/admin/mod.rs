//! The admin endpoint: HTTP for Prometheus (`/metrics`), health checks
//! (`/healthz`, `/readyz`) and `POST /reload`. It sits above the other
//! layers: it reads the metrics, the sessions' shared state and the
//! topology, and triggers reloads; none of them know about it.

pub mod http;
mod ready;
pub mod topology;

pub use http::serve;
