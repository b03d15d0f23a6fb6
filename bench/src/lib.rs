//! fastpath's benchmark tooling: valid test frames, the parsers that read rates
//! from fastpath's and testpmd's periodic statistics, and the side-by-side
//! comparison that rewrites `bench/RESULTS.md`.

pub mod compare;
pub mod frame;
pub mod hooks_bench;
pub mod rates;
