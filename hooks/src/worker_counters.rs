//! A hook's own counters, one cache line per worker: a worker adds with a
//! relaxed load and store to its own line (no locked instruction, no line
//! shared between workers); the control plane sums when it reads.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

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

    /// Counter `i` summed over workers.
    pub fn sum(&self, i: usize) -> u64 {
        self.lines
            .iter()
            .map(|l| l.0.get(i).map_or(0, |c| c.load(Relaxed)))
            .sum()
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
        c.add(0, 9, 1);
        assert_eq!((c.sum(0), c.sum(1), c.sum(9)), (7, 2, 0));
    }
}
