//! Named drop reasons and their per-lcore counters. Every packet fastpath does not
//! transmit or punt is counted under exactly one of these.

/// Why a packet was dropped. The discriminant indexes [`DropCounters`].
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The output queue refused the packet (`tx_burst` sent fewer than offered).
    TxQueueFull = 0,
}

impl DropReason {
    /// Every reason, in counter order.
    pub const ALL: [DropReason; 1] = [DropReason::TxQueueFull];
    /// Number of reasons: the length of a counter array.
    pub const COUNT: usize = Self::ALL.len();

    /// Short snake_case name, used in statistics output and JSON.
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::TxQueueFull => "tx_queue_full",
        }
    }

    /// One line for an operator: what happened and what usually causes it.
    pub const fn description(self) -> &'static str {
        match self {
            DropReason::TxQueueFull => {
                "output queue full: the peer port's TX ring had no free descriptors"
            }
        }
    }
}

/// One counter per drop reason, owned by one lcore.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropCounters(pub [u64; DropReason::COUNT]);

impl DropCounters {
    /// Count `n` drops for `reason`.
    #[inline(always)]
    pub fn add(&mut self, reason: DropReason, n: u64) {
        self.0[reason as usize] += n;
    }

    /// Drops counted for `reason`.
    pub fn get(&self, reason: DropReason) -> u64 {
        self.0[reason as usize]
    }

    /// Drops over every reason.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Add another lcore's counters into these.
    pub fn merge(&mut self, other: &DropCounters) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_indexed_in_order() {
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
        let mut names: Vec<_> = DropReason::ALL.iter().map(|r| r.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), DropReason::COUNT);
    }

    #[test]
    fn counters_add_and_merge() {
        let mut a = DropCounters::default();
        a.add(DropReason::TxQueueFull, 3);
        let mut b = DropCounters::default();
        b.add(DropReason::TxQueueFull, 4);
        a.merge(&b);
        assert_eq!(a.get(DropReason::TxQueueFull), 7);
        assert_eq!(a.total(), 7);
    }
}
