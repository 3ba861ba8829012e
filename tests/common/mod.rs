#![allow(dead_code)]
pub mod accounts;
pub mod cluster;
pub mod failover;
pub mod http;
pub mod raw;
pub mod reads;
pub mod tls;
pub mod wire;
