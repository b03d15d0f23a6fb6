//! The hook kinds fastpath ships with, registered under their config names:
//! `accept`, `classify` (ingress) and `filter` (egress), the last two
//! matching with DPDK's ACL library.

use crate::dpdk::acl::AclBuilder;
use hooks::builtin::{AcceptKind, ClassifyKind, FilterKind};
use hooks::rules::ClassifierBuilder;
use hooks::Registry;
use std::sync::Arc;

/// NUMA socket "any" for the ACL contexts (built after EAL starts).
const SOCKET_ID_ANY: i32 = -1;

/// A registry holding every built-in hook kind. Programs that start fastpath
/// with hooks of their own register them here too.
pub fn registry() -> Registry {
    let registry = Registry::new();
    let acl: Arc<dyn ClassifierBuilder> = Arc::new(AclBuilder::new(SOCKET_ID_ANY));
    for kind in [
        Arc::new(AcceptKind) as Arc<dyn hooks::HookKind>,
        Arc::new(ClassifyKind::new(acl.clone())),
        Arc::new(FilterKind::new(acl)),
    ] {
        // Built-in names are distinct; the handles are dropped, keeping
        // the kinds registered for the life of the registry.
        let _ = registry.register(kind);
    }
    registry
}
