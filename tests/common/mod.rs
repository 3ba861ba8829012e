#![allow(dead_code)]
pub mod cluster;
