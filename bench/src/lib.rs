//! fastpath's benchmark tooling: valid test frames, the parsers that read rates
//! from fastpath's and testpmd's periodic statistics, and the side-by-side
//! comparison that rewrites `bench/RESULTS.md`.

#![forbid(unsafe_code)]

pub mod compare;
pub mod compare_markdown;
pub mod dut_process;
pub mod fpm_replay;
pub mod frame;
pub mod harness;
pub mod hooks_bench;
pub mod hooks_case;
pub mod hooks_markdown;
pub mod hooks_rules;
pub mod loadgen;
pub mod memif_compare;
pub mod pcap_cache;
pub mod pcap_run;
pub mod plot;
pub mod rates;
pub mod report;
pub mod search;
pub mod sink;
pub mod spec_args;
pub mod traffic;
