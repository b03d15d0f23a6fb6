//! Locks of the control side (never taken on the packet path).

use std::sync::{Mutex, MutexGuard};

/// Lock `m`, taking the data of a poisoned lock as it is: a thread that
/// panicked while holding it has already ended the run (`panic = "abort"`
/// in release), and shutdown must still get the mbufs and counters back.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
