//! Built-in hook kinds: `accept` (a no-op, to measure and count),
//! `classify` (ingress: mark, class or drop by rules) and `filter` (egress,
//! netfilter-like, optionally stateful).

pub mod accept;
pub mod classify;
pub mod filter;

pub use accept::AcceptKind;
pub use classify::ClassifyKind;
pub use filter::FilterKind;

#[cfg(test)]
pub(crate) mod test_util;
