//! Built-in hook kinds: `accept` (a no-op, to measure and count),
//! `classify` (ingress: mark, class or drop by rules) and `filter` (egress,
//! netfilter-like, optionally stateful).

pub mod accept;

pub use accept::AcceptKind;
