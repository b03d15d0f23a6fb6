//! The matching engine of the built-in `classify` (ingress) and `filter`
//! (egress) hooks: rules are tried in order and the first match wins.
//!
//! - [`key`]: the 32-byte [`Key`] of an IPv4 packet, laid out for DPDK's ACL;
//!   [`key6`]: the 64-byte [`Key6`] of an IPv6 packet.
//! - [`rule`]: one rule's optional conditions ([`MatchRule`]) and the
//!   reference meaning of matching them.
//! - [`parse`]: match conditions from a rule's TOML table
//!   ([`parse_match`]).
//! - [`classifier`]: the [`Classifier`] / [`ClassifierBuilder`] traits the
//!   hooks use, so that this crate stays DPDK-free, and the
//!   [`LinearClassifier`] reference implementation. The app provides one on
//!   `rte_acl`.
//! - [`flow_cache`]: the per-worker exact-match cache in front of a
//!   classifier ([`CachedClassifier`] shared, a [`FlowCache`] per worker).
//! - [`fragment`]: the fragments rules cannot judge (RFC 1858), dropped
//!   before them ([`FragmentGuard`]).

pub mod classifier;
pub mod flow_cache;
pub mod flow_cache6;
pub mod fragment;
pub mod key;
pub mod key6;
pub mod parse;
pub mod rule;

pub use classifier::{
    validate_rules, Answers, Classifier, ClassifierBuilder, LinearBuilder, LinearClassifier,
    MAX_SETS,
};
pub use flow_cache::{Answer, CacheStats, CachedClassifier, FlowCache};
pub use flow_cache6::FlowCache6;
pub use fragment::FragmentGuard;
pub use key::{CtBits, Key, CT_ALL, CT_ESTABLISHED, CT_NEW, CT_RELATED, FLAG_L4};
pub use key6::Key6;
pub use parse::{parse_match, MATCH_KEYS};
pub use rule::{Family, MatchRule, Prefix, Prefix6};
