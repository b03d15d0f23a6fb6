//! A hook's own counters, one cache line per worker: a worker adds (or
//! publishes a value it keeps) with a relaxed load and store to its own line (no locked instruction, no line
//! shared between workers); the control plane sums when it reads.

use crate::{BuildContext, HookPoint};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

#[repr(align(64))]
struct Line<const N: usize>([AtomicU64; N]);

/// `N` counters per worker.
pub struct WorkerCounters<const N: usize> {
    lines: Box<[Line<N>]>,
}

impl<const N: usize> WorkerCounters<N> {
    /// Counters for `workers` workers (at least one line).
    pub fn new(workers: usize) -> Self {
        WorkerCounters {
            lines: (0..workers.max(1))
                .map(|_| Line(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
        }
    }

    /// Add `values[i]` to counter `i` of `worker`, for every `i`: one
    /// burst's counts in one call (one line found, the zeros skipped). As
    /// [`WorkerCounters::add`] for who may call it.
    #[inline]
    pub fn add_all(&self, worker: usize, values: &[u64; N]) {
        let Some(line) = self.lines.get(worker) else {
            for (i, &v) in values.iter().enumerate() {
                self.add(worker, i, v);
            }
            return;
        };
        for (c, &v) in line.0.iter().zip(values) {
            if v != 0 {
                c.store(c.load(Relaxed) + v, Relaxed);
            }
        }
    }

    /// Add `n` to counter `i` of `worker`. Only that worker may call this
    /// for its index; an out-of-range worker adds atomically to the last
    /// line.
    #[inline]
    pub fn add(&self, worker: usize, i: usize, n: u64) {
        if n == 0 || i >= N {
            return;
        }
        match self.lines.get(worker) {
            Some(l) => l.0[i].store(l.0[i].load(Relaxed) + n, Relaxed),
            None => {
                self.lines[self.lines.len() - 1].0[i].fetch_add(n, Relaxed);
            }
        }
    }

    /// Set counter `i` of `worker` to `v` (a value the worker keeps, such
    /// as its table's size, published). Only that worker may call this for
    /// its index; an out-of-range worker stores into the last line.
    #[inline]
    pub fn set(&self, worker: usize, i: usize, v: u64) {
        let line = self
            .lines
            .get(worker)
            .unwrap_or(&self.lines[self.lines.len() - 1]);
        if let Some(c) = line.0.get(i) {
            c.store(v, Relaxed);
        }
    }

    /// Counter `i` summed over workers.
    pub fn sum(&self, i: usize) -> u64 {
        self.lines
            .iter()
            .map(|l| l.0.get(i).map_or(0, |c| c.load(Relaxed)))
            .sum()
    }
}

/// A kind's counters by instance (point, port, name), so that an instance
/// rebuilt by a rule reload keeps counting where the old one stopped.
pub struct CounterStore<const N: usize> {
    by_instance: Mutex<HashMap<(HookPoint, u16, String), Arc<WorkerCounters<N>>>>,
}

impl<const N: usize> Default for CounterStore<N> {
    fn default() -> Self {
        CounterStore {
            by_instance: Mutex::new(HashMap::new()),
        }
    }
}

impl<const N: usize> CounterStore<N> {
    /// The counters of the instance `cx` builds (new ones the first time).
    pub fn for_instance(&self, cx: &BuildContext) -> Arc<WorkerCounters<N>> {
        let mut m = crate::lock(&self.by_instance);
        m.entry((cx.point, cx.port, cx.name.clone()))
            .or_insert_with(|| Arc::new(WorkerCounters::new(cx.workers)))
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_over_workers() {
        let c = WorkerCounters::<2>::new(2);
        c.add(0, 0, 3);
        c.add(1, 0, 4);
        c.add(1, 1, 1);
        c.add(5, 1, 1);
        c.add_all(1, &[1, 0]);
        c.add_all(7, &[0, 2]);
        c.add(0, 9, 1);
        assert_eq!((c.sum(0), c.sum(1), c.sum(9)), (8, 4, 0));
        c.set(0, 0, 1);
        c.set(0, 9, 1);
        assert_eq!(c.sum(0), 6);
    }

    #[test]
    fn the_same_instance_gets_the_same_counters() {
        let store = CounterStore::<1>::default();
        let cx = |name: &str, port| BuildContext {
            workers: 1,
            point: HookPoint::Egress,
            port,
            ports: vec![],
            name: name.into(),
        };
        store.for_instance(&cx("fw", 1)).add(0, 0, 5);
        assert_eq!(store.for_instance(&cx("fw", 1)).sum(0), 5);
        assert_eq!(store.for_instance(&cx("fw", 2)).sum(0), 0);
        assert_eq!(store.for_instance(&cx("other", 1)).sum(0), 0);
    }
}
