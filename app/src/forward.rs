//! The forwarding pipeline of the foundation: every burst received on a port's
//! queue goes out, untouched, on the peer port (like testpmd's `io` mode).
//! Which lcore polls which (port, queue) is planned here, once, at start.

use crate::cli::Forward;
use crate::counters::LcoreCounters;
use crate::dpdk::{MbufBurst, RxQueue, TxQueue};
use hooks::DropReason;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// One RX queue polled by a worker and the TX queue its packets leave on.
#[derive(Debug)]
pub struct Stream {
    pub rx: RxQueue,
    /// Index into the worker's `tx` queues.
    pub tx_slot: usize,
}

/// What one worker lcore does: its streams and the TX queues it owns.
#[derive(Debug)]
pub struct WorkerPlan {
    pub lcore: u32,
    pub streams: Vec<Stream>,
    pub tx: Vec<TxQueue>,
}

/// Check the forwarding rules against each other: one TX port per RX port.
pub fn check_rules(rules: &[Forward]) -> Result<(), String> {
    let mut seen: BTreeMap<u16, u16> = BTreeMap::new();
    for r in rules {
        if let Some(tx) = seen.insert(r.rx, r.tx) {
            if tx != r.tx {
                return Err(format!(
                    "port {} is the RX side of two rules (--forward {}:{} and --forward {}:{}); \
                     a port's packets go to one peer",
                    r.rx, r.rx, tx, r.rx, r.tx
                ));
            }
        }
    }
    Ok(())
}

/// The default rules when none are given: ports paired 0<->1, 2<->3, ...
pub fn default_rules(port_count: u16) -> Result<Vec<Forward>, String> {
    if port_count < 2 || !port_count.is_multiple_of(2) {
        return Err(format!(
            "without --forward, ports are paired 0<->1, 2<->3, ... and that needs an even number \
             of ports, but DPDK has {port_count}; add devices or give --forward RX:TX"
        ));
    }
    Ok((0..port_count)
        .map(|p| Forward { rx: p, tx: p ^ 1 })
        .collect())
}

/// Spread the RX queues of the rules over `workers` round-robin. `rx` holds each
/// port's RX queue tokens, `tx` each port's TX queue tokens (one per worker:
/// worker `i` gets TX queue `i` of every port it sends on).
pub fn plan(
    rules: &[Forward],
    mut rx: BTreeMap<u16, Vec<RxQueue>>,
    mut tx: BTreeMap<u16, Vec<Option<TxQueue>>>,
    workers: &[u32],
) -> Vec<WorkerPlan> {
    let mut plans: Vec<WorkerPlan> = workers
        .iter()
        .map(|&lcore| WorkerPlan {
            lcore,
            streams: Vec::new(),
            tx: Vec::new(),
        })
        .collect();
    let mut next = 0usize;
    for rule in rules {
        let queues = rx.remove(&rule.rx).unwrap_or_default();
        for q in queues {
            let w = next % plans.len();
            next += 1;
            let plan = &mut plans[w];
            let slot = match plan.tx.iter().position(|t| t.port() == rule.tx) {
                Some(s) => s,
                None => {
                    let token = tx
                        .get_mut(&rule.tx)
                        .and_then(|v| v.get_mut(w))
                        .and_then(Option::take)
                        .expect("one TX queue per worker on every TX port");
                    plan.tx.push(token);
                    plan.tx.len() - 1
                }
            };
            plan.streams.push(Stream {
                rx: q,
                tx_slot: slot,
            });
        }
    }
    plans.retain(|p| !p.streams.is_empty());
    plans
}

/// The worker loop: poll every stream, forward each burst, count, until `stop`.
/// Every received packet is either handed to a driver or freed and counted
/// before the next poll, so nothing is in flight when it returns. At exit the
/// RX queues go back through `returned`, for the main lcore's shutdown drain.
pub fn run_worker(
    mut plan: WorkerPlan,
    counters: Arc<LcoreCounters>,
    stop: Arc<AtomicBool>,
    returned: Arc<Mutex<Vec<RxQueue>>>,
) -> i32 {
    let mut burst = MbufBurst::new();
    // Busy vs idle: one TSC read per round, counted into the round before
    // it (busy when it received anything).
    let mut round_start = crate::dpdk::tsc();
    let mut received = false;
    while !stop.load(Relaxed) {
        let now = crate::dpdk::tsc();
        counters.poll_round(received, now.wrapping_sub(round_start));
        round_start = now;
        received = false;
        for s in plan.streams.iter_mut() {
            let n = s.rx.rx_burst(&mut burst);
            if n == 0 {
                continue;
            }
            received = true;
            counters.rx(s.rx.port(), n as u64);
            let txq = &mut plan.tx[s.tx_slot];
            let out = txq.tx_burst(&mut burst);
            counters.tx(txq.port(), out.sent as u64);
            if out.dropped != 0 {
                counters.dropped(txq.port(), DropReason::TxQueueFull, out.dropped as u64);
            }
        }
    }
    let queues = plan.streams.into_iter().map(|s| s.rx);
    match returned.lock() {
        Ok(mut v) => v.extend(queues),
        Err(poisoned) => poisoned.into_inner().extend(queues),
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_rules_pair_ports_both_ways() {
        let r = default_rules(4).unwrap();
        assert_eq!(
            r,
            vec![
                Forward { rx: 0, tx: 1 },
                Forward { rx: 1, tx: 0 },
                Forward { rx: 2, tx: 3 },
                Forward { rx: 3, tx: 2 }
            ]
        );
        assert!(default_rules(1).unwrap_err().contains("DPDK has 1"));
        assert!(default_rules(0).is_err());
        assert!(default_rules(3).is_err());
    }

    #[test]
    fn one_peer_per_rx_port() {
        assert!(check_rules(&[Forward { rx: 0, tx: 1 }, Forward { rx: 0, tx: 1 }]).is_ok());
        let e = check_rules(&[Forward { rx: 0, tx: 1 }, Forward { rx: 0, tx: 2 }]).unwrap_err();
        assert!(e.contains("port 0 is the RX side of two rules"), "{e}");
    }
}
