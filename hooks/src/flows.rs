//! A burst's flow summaries as a confirm sees them: given, or made from
//! the caller's own keys only for the packets a hook asks about.

use crate::{FlowSummary, MAX_BURST};

/// The flow summaries of the packets of a run the pipeline's flow memo is
/// about to answer (it is gone; `ConnTable::confirm_leased` keeps it). A hook whose leases
/// hold for most packets asks for few summaries: the memo makes each from
/// its key when asked (a dynamic call), instead of all of them up front.
#[derive(Clone, Copy)]
pub enum Flows<'a> {
    /// Every packet's summary.
    Given(&'a [FlowSummary]),
    /// `len` packets; packet `i`'s summary is `make(i)`.
    Made {
        len: usize,
        make: &'a dyn Fn(usize) -> FlowSummary,
    },
}

impl Flows<'_> {
    /// Packets.
    #[inline(always)]
    pub fn len(&self) -> usize {
        match self {
            Flows::Given(s) => s.len(),
            Flows::Made { len, .. } => *len,
        }
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Packet `i`'s summary (`i < len()`; past it, a default summary).
    #[inline(always)]
    pub fn get(&self, i: usize) -> FlowSummary {
        match self {
            Flows::Given(s) => s.get(i).copied().unwrap_or_default(),
            Flows::Made { len, make } => {
                if i < *len {
                    make(i)
                } else {
                    FlowSummary::default()
                }
            }
        }
    }

    /// The first `n` summaries (at most [`MAX_BURST`]) in `out`, for a hook
    /// that wants them all; returns how many.
    pub fn fill(&self, out: &mut [FlowSummary; MAX_BURST]) -> usize {
        let n = self.len().min(MAX_BURST);
        match self {
            Flows::Given(s) => out[..n].copy_from_slice(&s[..n]),
            Flows::Made { make, .. } => {
                for (i, o) in out[..n].iter_mut().enumerate() {
                    *o = make(i);
                }
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(i: usize) -> FlowSummary {
        FlowSummary {
            src: i as u32,
            sport: 7,
            ..FlowSummary::default()
        }
    }

    #[test]
    fn made_and_given_flows_say_the_same() {
        let given: Vec<FlowSummary> = (0..5).map(summary).collect();
        let make = summary;
        let made = Flows::Made {
            len: 5,
            make: &make,
        };
        let given = Flows::Given(&given);
        assert_eq!((made.len(), given.len()), (5, 5));
        for i in 0..6 {
            assert_eq!(made.get(i), given.get(i), "packet {i}");
        }
        assert_eq!(made.get(5), FlowSummary::default());
        let (mut a, mut b) = (
            [FlowSummary::default(); MAX_BURST],
            [FlowSummary::default(); MAX_BURST],
        );
        assert_eq!((made.fill(&mut a), given.fill(&mut b)), (5, 5));
        assert_eq!(a, b);
        assert_eq!(a[4], summary(4));
    }
}
