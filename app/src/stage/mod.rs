//! Pipeline stages as plain functions over a frame's bytes and its metadata:
//! no DPDK types, so each is unit-tested on byte buffers. The burst loop calls
//! them per packet and counts what they return as a drop reason.

pub mod ip;
pub mod l2;
pub mod plain;
