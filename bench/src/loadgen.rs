//! The DPDK side of `fastpath-bench run` / `search`: one lcore that sends the
//! flow spec's packets out of one port, at a fixed rate or as fast as it can,
//! stamping each with a sequence number and the TSC, and receives them back
//! on another port (or the same one) into a [`Sink`].
//!
//! Sequence numbers run on across trials: a trial counts only its own, so a
//! late packet of the previous trial is never taken for one of this trial.

use crate::report::Trial;
use crate::search::Device;
use crate::sink::Sink;
use crate::traffic::{restamp_tsc, FlowCursor, Signature, Template, TrafficSpec};
use fastpath::dpdk::{
    self, Eal, MbufBurst, Mempool, Port, PortConfig, RxQueue, TxQueue, BURST_SIZE,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where and how to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Port to send on: a DPDK port name (`net_memif0`) or id.
    pub tx_port: String,
    /// Port to receive on (may be the TX port).
    pub rx_port: String,
    /// Mbufs in the generator's pool.
    pub mbufs: u32,
    /// How long to wait for both links to come up (memif: for the peer).
    pub link_timeout: Duration,
    /// Sending phase of each trial.
    pub trial: Duration,
    /// After sending, how long to keep receiving stragglers at most.
    pub drain: Duration,
}

/// A started generator / sink.
pub struct LoadGen {
    tx: TxQueue,
    rx: RxQueue,
    /// The TX port's own RX queue when it differs from `rx`: polled and freed
    /// so a DUT's frames toward it (ARP, replies) never back up.
    tx_port_rx: Option<RxQueue>,
    templates: Vec<Vec<Template>>,
    cursor: FlowCursor,
    spec: TrafficSpec,
    opts: Options,
    next_seq: u64,
    hz: u64,
    stop: Arc<AtomicBool>,
    /// Frames without a signature seen on the RX port(s), over all trials.
    pub foreign: u64,
    /// Trials where the generator sent less than 99 % of the rate asked.
    pub short_trials: u64,
    /// Packets the TX ring refused in fixed-rate trials (counted lost: the
    /// device did not take them), over all trials.
    pub refused: u64,
    ports: Vec<Port>,
    pool: Mempool,
    _eal: Eal,
}

fn resolve(name: &str) -> Result<u16, String> {
    if let Ok(id) = name.parse::<u16>() {
        if Port::is_valid(id) {
            return Ok(id);
        }
    }
    Port::find(name).ok_or_else(|| {
        format!(
            "port '{name}' not found; {}",
            fastpath::dpdk::port::describe_ports()
        )
    })
}

impl LoadGen {
    /// Start EAL with `eal_args` (program name first), open and start the
    /// ports, and wait for their links.
    pub fn start(
        eal_args: &[String],
        spec: TrafficSpec,
        opts: Options,
        stop: Arc<AtomicBool>,
    ) -> Result<LoadGen, String> {
        let (eal, _) = Eal::init(eal_args).map_err(|e| e.to_string())?;
        let pool = Mempool::new("bench_pool", opts.mbufs, 256, eal.socket_id())
            .map_err(|e| e.to_string())?;
        let tx_id = resolve(&opts.tx_port)?;
        let rx_id = resolve(&opts.rx_port)?;
        let mut ports = Vec::new();
        let mut queues = Vec::new();
        for id in if tx_id == rx_id {
            vec![tx_id]
        } else {
            vec![tx_id, rx_id]
        } {
            let mut p = Port::open(id).map_err(|e| e.to_string())?;
            let (rx, tx) = p
                .configure(&PortConfig::default(), &pool)
                .map_err(|e| e.to_string())?;
            p.start().map_err(|e| {
                let hint = if p.name().starts_with("net_memif") {
                    " (a memif client needs its server listening on the socket: start the \
                     device under test first, with role=server on the same socket path)"
                } else {
                    ""
                };
                format!("{e}{hint}")
            })?;
            queues.push((rx.into_iter().next(), tx.into_iter().next()));
            ports.push(p);
        }
        let deadline = Instant::now() + opts.link_timeout;
        for p in &ports {
            while !p.link().up {
                if Instant::now() > deadline || stop.load(Ordering::Relaxed) {
                    return Err(format!(
                        "port {} ({}): link still down after {:?}; is the device under test \
                         running and connected? (memif: the same socket path and id, and the \
                         other role on the peer)",
                        p.id(),
                        p.name(),
                        opts.link_timeout
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let mut q = queues.into_iter();
        let (tx_rx, tx) = q.next().ok_or("no TX port")?;
        let tx = tx.ok_or("the TX port has no TX queue")?;
        let (rx, tx_port_rx) = match q.next() {
            Some((rx, _)) => (rx.ok_or("the RX port has no RX queue")?, tx_rx),
            None => (tx_rx.ok_or("the port has no RX queue")?, None),
        };
        Ok(LoadGen {
            tx,
            rx,
            tx_port_rx,
            templates: spec.templates(),
            cursor: FlowCursor::new(&spec),
            spec,
            opts,
            next_seq: 0,
            hz: dpdk::tsc_hz(),
            stop,
            foreign: 0,
            short_trials: 0,
            refused: 0,
            ports,
            pool,
            _eal: eal,
        })
    }

    /// The TSC frequency.
    pub fn tsc_hz(&self) -> u64 {
        self.hz
    }

    /// Mbufs of the generator's pool not back in it (0 once idle).
    pub fn mbufs_in_use(&self) -> u32 {
        self.pool.in_use()
    }

    /// Fill `burst` with up to `n` stamped packets; returns how many.
    #[inline]
    fn fill(&mut self, burst: &mut MbufBurst, n: usize, now: u64) -> usize {
        if !burst.alloc_bulk(&self.pool, n) {
            return 0;
        }
        for m in burst.as_mut_slice() {
            let seq = self.next_seq;
            let (si, flow) = self.cursor.next(&self.spec, seq);
            let t = &self.templates[si][flow as usize];
            let appended = m.append(&t.bytes);
            debug_assert!(
                appended,
                "a template of {} bytes fits an mbuf",
                t.bytes.len()
            );
            t.stamp(m.data_mut(), Signature { seq, tsc: now });
            self.next_seq += 1;
        }
        n
    }

    /// Receive what has arrived (up to four bursts, so the sink keeps up
    /// with a sender that only sends one); returns how many carried packets.
    #[inline]
    fn receive(&mut self, burst: &mut MbufBurst, sink: &mut Sink) -> usize {
        let mut total = 0;
        for _ in 0..4 {
            let n = self.rx.rx_burst(burst);
            if n == 0 {
                break;
            }
            let now = dpdk::tsc();
            for m in burst.as_slice() {
                sink.record(m.data(), now);
            }
            burst.free_all();
            total += n;
        }
        if let Some(q) = &mut self.tx_port_rx {
            self.foreign += q.rx_burst(burst) as u64;
            burst.free_all();
        }
        total
    }

    /// One trial: send at `rate_pps` (None: as fast as possible) for the
    /// trial length, then receive stragglers until all arrived or the drain
    /// time is over.
    ///
    /// At a fixed rate the generator behaves like a wire: packets the TX ring
    /// refuses (the device did not take them in time) are freed and counted
    /// as sent and lost. As fast as possible, the ring's back-pressure is the
    /// pace: refused packets wait for room, and get a fresh TSC before each
    /// try, so their wait is not counted as the device's latency.
    pub fn run_trial(&mut self, rate_pps: Option<f64>, allowed_loss: f64) -> Result<Trial, String> {
        let hz = self.hz;
        let base = self.next_seq;
        let expected = rate_pps.unwrap_or(20e6) * self.opts.trial.as_secs_f64() * 1.1;
        let mut sink = Sink::with_expected(hz, base, expected as u64);
        let udp = self.spec.udp_offset();
        let mut out = MbufBurst::new();
        let mut inb = MbufBurst::new();
        let start = dpdk::tsc();
        let end = start + (self.opts.trial.as_secs_f64() * hz as f64) as u64;
        // Packets due per TSC tick, as a 32.32 fixed-point factor.
        let per_tick = rate_pps.map(|r| ((r / hz as f64) * (1u64 << 32) as f64) as u128);
        let mut now = start;
        while now < end {
            if self.stop.load(Ordering::Relaxed) {
                return Err("interrupted".into());
            }
            if out.is_empty() {
                let sent = self.next_seq - base;
                let room = match per_tick {
                    None => BURST_SIZE as u64,
                    Some(f) => {
                        let due = ((u128::from(now - start) * f) >> 32) as u64;
                        due.saturating_sub(sent).min(BURST_SIZE as u64)
                    }
                };
                self.fill(&mut out, room as usize, now);
            } else {
                for m in out.as_mut_slice() {
                    restamp_tsc(m.data_mut(), udp, now);
                }
            }
            if per_tick.is_some() {
                self.refused += self.tx.tx_burst(&mut out).dropped as u64;
            } else {
                self.tx.tx_burst_retain(&mut out);
            }
            self.receive(&mut inb, &mut sink);
            now = dpdk::tsc();
        }
        let send_end = now;
        // Stamped packets still waiting for room (as fast as possible) were
        // never offered.
        let sent = self.next_seq - base - out.len() as u64;
        out.free_all();
        let drain_until = Instant::now() + self.opts.drain;
        let mut quiet_since = Instant::now();
        while sink.received() < sent && Instant::now() < drain_until {
            if self.stop.load(Ordering::Relaxed) {
                return Err("interrupted".into());
            }
            if self.receive(&mut inb, &mut sink) > 0 {
                quiet_since = Instant::now();
            } else if quiet_since.elapsed() > self.opts.drain / 4 {
                break;
            }
        }
        self.foreign += sink.foreign();
        let seconds = (send_end - start) as f64 / hz as f64;
        // Offered is what went out, not what was asked: a generator that
        // cannot keep up must not claim the rate for the device.
        let offered = sent as f64 / seconds.max(1e-9);
        if let Some(r) = rate_pps {
            if offered < r * 0.99 {
                self.short_trials += 1;
            }
        }
        Ok(sink.trial(sent, offered, seconds, allowed_loss))
    }

    /// Send a little traffic (100,000 packets/s for `period`) and throw the
    /// figures away: the path is set up (a device's first packets can meet
    /// a port still starting, caches are cold) before the first real trial.
    pub fn warm_up(&mut self, period: Duration) -> Result<(), String> {
        let trial = std::mem::replace(&mut self.opts.trial, period);
        let r = self.run_trial(Some(100_000.0), 1.0);
        self.opts.trial = trial;
        self.quiesce(Duration::from_millis(50));
        r.map(|_| ())
    }

    /// Receive and free whatever still arrives for `period` (between trials,
    /// or before stopping).
    pub fn quiesce(&mut self, period: Duration) {
        let mut sink = Sink::starting_at(self.hz, self.next_seq);
        let mut inb = MbufBurst::new();
        let until = Instant::now() + period;
        while Instant::now() < until {
            self.receive(&mut inb, &mut sink);
        }
    }

    /// Stop and close the ports; the pool and EAL go when `self` drops.
    pub fn stop(mut self) -> Result<u32, String> {
        self.quiesce(Duration::from_millis(50));
        for p in &mut self.ports {
            p.stop().map_err(|e| e.to_string())?;
        }
        for p in &mut self.ports {
            p.close().map_err(|e| e.to_string())?;
        }
        Ok(self.pool.in_use())
    }
}

impl Device for LoadGen {
    fn trial(&mut self, rate_pps: Option<f64>, allowed_loss: f64) -> Result<Trial, String> {
        let t = self.run_trial(rate_pps, allowed_loss)?;
        self.quiesce(Duration::from_millis(20));
        Ok(t)
    }
}
