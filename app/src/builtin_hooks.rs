//! The hook kinds fastpath ships with, registered under their config names.

use hooks::Registry;

/// A registry holding every built-in hook kind.
pub fn registry() -> Registry {
    Registry::new()
}
