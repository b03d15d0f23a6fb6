//! What one worker keeps for the hooks whatever hook set it runs: state
//! that a kind's instances share on the worker and that outlives a reload
//! (the stateful filters' connection table). Only that worker touches it,
//! through `&mut`: no lock.

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Names one entry of every worker's [`WorkerStore`]: a kind makes one key
/// and keeps it for its life, so every instance it builds finds the same
/// entry, across reloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StoreKey(u64);

impl StoreKey {
    /// A key no other `new` in this process returns.
    pub fn new() -> StoreKey {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        StoreKey(NEXT.fetch_add(1, Relaxed))
    }
}

impl Default for StoreKey {
    fn default() -> Self {
        StoreKey::new()
    }
}

/// One worker's entries, by [`StoreKey`]. A handful at most (one per
/// stateful kind), so a lookup is a short scan and a type check: once per
/// burst, not per packet.
#[derive(Default)]
pub struct WorkerStore {
    entries: Vec<(StoreKey, Box<dyn Any + Send>)>,
}

impl WorkerStore {
    pub fn new() -> Self {
        WorkerStore::default()
    }

    /// The entry of `key`, made by `make` the first time (or when the entry
    /// there is of another type). For [`Hook::worker`](crate::Hook::worker),
    /// at the quiescent point.
    pub fn get_or_insert_with<T: Any + Send>(
        &mut self,
        key: StoreKey,
        make: impl FnOnce() -> T,
    ) -> &mut T {
        let at = match self.entries.iter().position(|(k, _)| *k == key) {
            Some(i) if self.entries[i].1.is::<T>() => i,
            Some(i) => {
                self.entries[i].1 = Box::new(make());
                i
            }
            None => {
                self.entries.push((key, Box::new(make())));
                self.entries.len() - 1
            }
        };
        match self.entries[at].1.downcast_mut::<T>() {
            Some(t) => t,
            None => unreachable!("the entry was just checked or made as a T"),
        }
    }

    /// The entry of `key`, if there is one of type `T`.
    #[inline]
    pub fn get_mut<T: Any + Send>(&mut self, key: StoreKey) -> Option<&mut T> {
        self.entries
            .iter_mut()
            .find(|(k, _)| *k == key)
            .and_then(|(_, e)| e.downcast_mut::<T>())
    }

    /// The entry of `key`, if there is one of type `T`.
    pub fn get<T: Any + Send>(&self, key: StoreKey) -> Option<&T> {
        self.entries
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, e)| e.downcast_ref::<T>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_made_once_and_found_by_its_key_and_type() {
        let (a, b) = (StoreKey::new(), StoreKey::new());
        assert_ne!(a, b);
        let mut s = WorkerStore::new();
        *s.get_or_insert_with(a, || 1u32) += 1;
        assert_eq!(*s.get_or_insert_with(a, || 100u32), 2, "made once");
        assert_eq!(s.get_mut::<u32>(b), None);
        assert_eq!(s.get::<u64>(a), None, "another type");
        s.get_or_insert_with(b, || String::from("b"));
        assert_eq!(s.get::<String>(b).map(String::as_str), Some("b"));
        // A key met with another type: its entry is replaced.
        assert_eq!(*s.get_or_insert_with(a, || 7u64), 7);
        assert_eq!(s.get::<u32>(a), None);
    }
}
