//! The next hops the LPM's ids index, and the member lists of ECMP groups:
//! fixed-capacity arrays the workers read lock-free while the control plane
//! writes, every field an atomic.
//!
//! A slot is written while no LPM entry holds its id, and only then is its
//! id stored in the LPM (whose entry stores are release stores), so a worker
//! that finds the id reads the finished slot. A slot stays as it is while
//! published; it is written again only after its id left the LPM and a
//! grace period passed (`writer`). The one exception is a group's `neigh`
//! word, its live members' chunk and count, which the writer replaces with
//! one release store after it wrote the new chunk: a worker reads the old
//! or the new member list, never a mix.

use super::{HopKind, NextHop, MAX_PATHS};
use std::sync::atomic::{fence, AtomicU16, AtomicU32, AtomicU8, Ordering::*};

/// One next hop, field by field.
#[derive(Debug, Default)]
struct HopSlot {
    kind: AtomicU8,
    port: AtomicU16,
    mtu: AtomicU16,
    gateway: AtomicU32,
    neigh: AtomicU32,
}

/// Bits of a group's `neigh` word that hold its live member count.
const COUNT_BITS: u32 = 8;

/// A group's `neigh` word: member chunk `chunk`, `count` live members.
pub(super) fn group_word(chunk: u32, count: usize) -> u32 {
    debug_assert!(count <= MAX_PATHS);
    chunk << COUNT_BITS | count as u32
}

fn kind_code(k: HopKind) -> u8 {
    k as u8
}

/// The kind of a stored code (a code no kind has reads as never routed).
#[inline(always)]
fn kind_of(code: u8) -> HopKind {
    match code {
        0 => HopKind::Forward,
        1 => HopKind::Local,
        2 => HopKind::NotUnicast,
        3 => HopKind::Martian,
        4 => HopKind::Group,
        _ => HopKind::Martian,
    }
}

/// The next-hop slots and the groups' member chunks.
#[derive(Debug)]
pub(super) struct HopTable {
    slots: Box<[HopSlot]>,
    /// `MAX_PATHS` member ids per chunk.
    members: Box<[AtomicU32]>,
}

impl HopTable {
    pub(super) fn new(hops: usize, chunks: usize) -> HopTable {
        HopTable {
            slots: (0..hops).map(|_| HopSlot::default()).collect(),
            members: (0..chunks * MAX_PATHS).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// The next hop in slot `id`.
    #[inline(always)]
    pub(super) fn get(&self, id: u32) -> Option<NextHop> {
        let s = self.slots.get(id as usize)?;
        Some(NextHop {
            kind: kind_of(s.kind.load(Relaxed)),
            port: s.port.load(Relaxed),
            gateway: s.gateway.load(Relaxed),
            neigh: s.neigh.load(Relaxed),
            mtu: s.mtu.load(Relaxed),
        })
    }

    /// The member a flow of `hash` takes in the group whose `neigh` word is
    /// `word` (multiply-shift: no division on the packet path).
    #[inline]
    pub(super) fn member(&self, word: u32, hash: u32) -> Option<NextHop> {
        // Pairs with the release store of the group's word: the chunk it
        // names was written before.
        fence(Acquire);
        let count = u64::from(word & ((1 << COUNT_BITS) - 1));
        if count == 0 {
            return None;
        }
        let chunk = (word >> COUNT_BITS) as usize;
        let i = ((u64::from(hash) * count) >> 32) as usize;
        let id = self.members.get(chunk * MAX_PATHS + i)?.load(Relaxed);
        self.get(id).filter(|h| h.kind != HopKind::Group)
    }

    /// Write slot `id`, not published (no LPM entry holds it).
    pub(super) fn write(&self, id: u32, h: &NextHop) {
        let s = &self.slots[id as usize];
        s.kind.store(kind_code(h.kind), Relaxed);
        s.port.store(h.port, Relaxed);
        s.mtu.store(h.mtu, Relaxed);
        s.gateway.store(h.gateway, Relaxed);
        s.neigh.store(h.neigh, Release);
    }

    /// Write member chunk `chunk` (no group's word names it).
    pub(super) fn write_chunk(&self, chunk: u32, ids: &[u32]) {
        let base = chunk as usize * MAX_PATHS;
        for (slot, id) in self.members[base..base + MAX_PATHS].iter().zip(ids) {
            slot.store(*id, Relaxed);
        }
    }

    /// Point published group `id` at another member list (one release store).
    pub(super) fn set_group_word(&self, id: u32, word: u32) {
        self.slots[id as usize].neigh.store(word, Release);
    }
}
