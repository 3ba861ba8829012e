#![allow(dead_code)]
pub mod cluster;
pub mod raw;
