//! A router worker lcore: polls its RX queues, runs each burst through the
//! pipeline, sends what the control plane injects, and punts what it must.

use super::txbuf::TxBuffer;
use crate::capture::{DropSite, Stage, Tap, NO_PORT};
use crate::counters::LcoreCounters;
use crate::datapath::{Outputs, Pipeline, Scratch};
use crate::dpdk::{MbufBurst, QsbrReader, RingConsumer, RingProducer, RxQueue};
use crate::neigh::GraceReader;
use hooks::snapshot::Subscriber;
use hooks::{DropReason, HookSet};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// What a worker gives back when it stops, for the main lcore's shutdown
/// drain: its RX queues and the consumer side of its inject ring.
#[derive(Default)]
pub struct ReturnedQueues {
    pub rx: Vec<RxQueue>,
    pub inject: Vec<RingConsumer>,
}

/// One worker's queues, rings and shared tables.
pub struct RouterWorker {
    pub rx: Vec<RxQueue>,
    /// TX buffers indexed by port id (`None` for ports not in use).
    pub tx: Vec<Option<TxBuffer>>,
    /// Worker → control.
    pub punt: RingProducer,
    /// Control → worker: packets to send (`meta.out_port` says where).
    pub inject: RingConsumer,
    pub pipeline: Pipeline,
    /// The hook chains, refreshed at the quiescent point of every loop.
    pub hooks: Subscriber<HookSet>,
    /// Reports the quiescent point to the neighbour table, whose reclaimed
    /// slots are reused only after every worker passed one.
    pub neigh_grace: GraceReader,
    /// Reports the quiescent point to the FIB (RCU QSBR): next hops and
    /// LPM groups a route change unpublished are reused only after it.
    pub rcu: QsbrReader,
    /// Time each stage with the TSC.
    pub timed: bool,
}

impl RouterWorker {
    /// Poll until `stop`; then flush, and hand the RX queues and the inject
    /// ring back. Nothing received is in flight when this returns: it was
    /// sent, dropped and counted, or is in the punt ring (the control plane's).
    pub fn run(
        mut self,
        counters: Arc<LcoreCounters>,
        stop: Arc<AtomicBool>,
        returned: Arc<Mutex<ReturnedQueues>>,
    ) -> i32 {
        let mut burst = MbufBurst::new();
        let mut punt = MbufBurst::new();
        let mut injected = MbufBurst::new();
        let mut scratch = Box::new(Scratch::for_worker(self.pipeline.worker));
        // Busy vs idle: one TSC read per round, counted into the round
        // before it (busy when it received anything).
        let mut round_start = crate::dpdk::tsc();
        let mut received = false;
        while !stop.load(Relaxed) {
            let now = crate::dpdk::tsc();
            counters.poll_round(received, now.wrapping_sub(round_start));
            round_start = now;
            received = false;
            // The quiescent point: between bursts, nothing of the old
            // snapshot is held, no neighbour index, no next-hop id.
            let hooks = self.hooks.quiescent();
            // This worker's `HookWorker` of each new hook is made here, not in a burst.
            scratch.hooks.refresh(hooks);
            self.neigh_grace.quiescent();
            self.rcu.quiescent();
            for q in self.rx.iter_mut() {
                let n = q.rx_burst(&mut burst);
                if n == 0 {
                    continue;
                }
                received = true;
                let port = q.port();
                counters.rx(port, n as u64);
                let mut out = Outputs {
                    tx: &mut self.tx,
                    punt: &mut punt,
                    counters: &counters,
                    scratch: &mut scratch,
                };
                match self.timed {
                    true => self
                        .pipeline
                        .process::<true>(port, &mut burst, &mut out, hooks),
                    false => self
                        .pipeline
                        .process::<false>(port, &mut burst, &mut out, hooks),
                }
                if !punt.is_empty() {
                    let tap = &self.pipeline.capture;
                    punt_to_control(&mut self.punt, &mut punt, &counters, tap);
                }
            }
            if self.inject.dequeue_burst(&mut injected) != 0 {
                send_injected(
                    &mut self.tx,
                    &mut injected,
                    &counters,
                    &self.pipeline.capture,
                );
            }
        }
        for txb in self.tx.iter_mut().flatten() {
            txb.flush(&counters);
        }
        let mut back = crate::sync::lock(&returned);
        back.rx.append(&mut self.rx);
        back.inject.push(self.inject);
        0
    }
}

/// Hand the punted packets to the control lcore; a full ring drops them.
#[cold]
fn punt_to_control(
    ring: &mut RingProducer,
    punt: &mut MbufBurst,
    counters: &LcoreCounters,
    tap: &Tap,
) {
    ring.enqueue_burst(punt);
    for m in punt.drain() {
        let at = DropSite::new(DropReason::ControlRingFull, Stage::Punt, m.meta().in_port);
        counters.dropped(at.in_port, at.reason, 1);
        tap.capture(m.data(), at);
    }
}

/// Send what the control plane injected, through the TX buffers.
#[cold]
fn send_injected(
    tx: &mut [Option<TxBuffer>],
    injected: &mut MbufBurst,
    counters: &LcoreCounters,
    tap: &Tap,
) {
    for m in injected.drain() {
        let port = m.meta().out_port;
        counters.injected(port, 1);
        match tx.get_mut(usize::from(port)) {
            Some(Some(txb)) => txb.push(m, counters),
            _ => {
                counters.dropped(port, DropReason::NoRoute, 1);
                tap.capture(
                    m.data(),
                    DropSite::new(DropReason::NoRoute, Stage::Tx, NO_PORT).to_port(port),
                );
            }
        }
    }
    for txb in tx.iter_mut().flatten() {
        txb.flush(counters);
    }
}
