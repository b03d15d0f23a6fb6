//! `--until-input-done`: a run that ends on its own once its input is used
//! up, instead of after a guessed `--duration`.
//!
//! Every port fastpath receives on must then be a finite source: a
//! `net_pcap` vdev reading `rx_pcap=` files without `infinite_rx`, or one
//! that receives nothing (`net_pcap` with only `tx_pcap`, `net_null` with
//! `no-rx=1`). The frames of each file are counted at start. The run ends,
//! through the same stop and drain as Ctrl-C, once each such port has
//! received them all (or its driver has lost them: `rx_nombuf`, errors)
//! and nothing is in flight: every packet received or created has been
//! sent, dropped, consumed or stolen. That takes in what the control plane
//! answers (ARP and ICMP replies are counted as created until sent) and the
//! packets waiting for a neighbour: sent once it answers, dropped as
//! `neigh_failed` once it does not (a `--duration` stop drops them as
//! `shutdown_drain` instead). Timers that run with no packet waiting (the
//! re-probe of a stale neighbour or of a failed gateway) are not waited for.
//!
//! `net_pcap` reads a file on the worker's `rx_burst`, one record at a time:
//! a slow worker makes it read later, never lose a frame (no ring to
//! overflow, `rx_missed` stays 0); it loses one only when the pool is empty
//! (`rx_nombuf`) or a record cannot be read (`ierrors`), and both count.

use super::error::RunError;
use crate::dpdk::port::port_name;
use crate::ops::sample::Sample;
use crate::ops::state::Ops;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What one `--vdev` receives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// `net_pcap` reading these files once each, the i-th on its i-th RX queue.
    PcapFiles(Vec<PathBuf>),
    /// Nothing ever (`net_pcap` without an RX side, `net_null,no-rx=1`).
    Nothing,
    /// A source with no end, and why (`infinite_rx=1`, an interface, ...).
    Endless(String),
}

/// What each `--vdev` of the command line receives, by device name; read
/// from the EAL arguments before EAL starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputSources {
    vdevs: Vec<(String, Source)>,
}

/// A port fastpath polls: its id, its device name and the RX queues
/// fastpath sets up on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Polled {
    pub port: u16,
    pub name: String,
    pub rx_queues: u16,
}

/// One input port's frames: what its files hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    pub port: u16,
    pub name: String,
    pub files: Vec<PathBuf>,
    pub frames: u64,
}

/// The end of a run's input: each polled port and the frames it will read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputEnd {
    inputs: Vec<Input>,
}

/// The device arguments of a `--vdev` value (`name,key=value,...`).
fn kvargs(spec: &str) -> (String, Vec<(String, String)>) {
    let mut parts = spec.split(',');
    let name = parts.next().unwrap_or("").trim().to_string();
    let args = parts
        .filter(|p| !p.trim().is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), v.trim().to_string()),
            None => (p.trim().to_string(), String::new()),
        })
        .collect();
    (name, args)
}

/// Whether vdev `name` is of `driver` (or its `eth_` alias), e.g. `net_pcap0`.
fn of_driver(name: &str, driver: &str) -> bool {
    let alias = driver.replacen("net_", "eth_", 1);
    name.starts_with(driver) || name.starts_with(&alias)
}

/// What a vdev receives, as its driver reads the arguments.
fn source(name: &str, args: &[(String, String)]) -> Source {
    let all = |key: &str| -> Vec<&str> {
        args.iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    if of_driver(name, "net_pcap") {
        // As net_pcap's probe reads them: `iface` first, then `rx_pcap`
        // (with `infinite_rx` when given once), then `rx_iface`/`rx_iface_in`.
        if let Some(i) = all("iface").first() {
            return Source::Endless(format!("interface {i} (iface={i})"));
        }
        let files = all("rx_pcap");
        if !files.is_empty() {
            let infinite = all("infinite_rx");
            if infinite.len() == 1 && infinite[0] != "0" {
                return Source::Endless(format!(
                    "{} again and again (infinite_rx={})",
                    files.join(", "),
                    infinite[0]
                ));
            }
            return Source::PcapFiles(files.iter().map(PathBuf::from).collect());
        }
        for key in ["rx_iface", "rx_iface_in"] {
            if let Some(i) = all(key).first() {
                return Source::Endless(format!("interface {i} ({key}={i})"));
            }
        }
        return Source::Nothing;
    }
    if of_driver(name, "net_null") && all("no-rx").iter().any(|v| *v != "0") {
        return Source::Nothing;
    }
    let driver = name.trim_end_matches(|c: char| c.is_ascii_digit());
    Source::Endless(format!("a {driver} device"))
}

impl InputSources {
    /// From the `--vdev` values of the EAL arguments (`name,key=value,...`).
    pub fn from_vdevs(specs: &[String]) -> InputSources {
        InputSources {
            vdevs: specs
                .iter()
                .map(|s| {
                    let (name, args) = kvargs(s);
                    let src = source(&name, &args);
                    (name, src)
                })
                .collect(),
        }
    }

    /// [`InputSources::plan`] for ports by id, each with the RX queues
    /// fastpath sets up on it; a refusal is a usage error.
    pub fn plan_ports(
        &self,
        ports: impl IntoIterator<Item = (u16, u16)>,
    ) -> Result<InputEnd, RunError> {
        let polled: Vec<Polled> = ports
            .into_iter()
            .map(|(port, rx_queues)| Polled {
                port,
                name: port_name(port),
                rx_queues,
            })
            .collect();
        self.plan(&polled).map_err(RunError::Usage)
    }

    /// The input of each port fastpath polls, its files' frames counted; an
    /// error names a port whose input has no end, or whose files are not all
    /// read, and how to run it instead.
    pub fn plan(&self, polled: &[Polled]) -> Result<InputEnd, String> {
        self.plan_with(polled, crate::pcap::count_frames)
    }

    fn plan_with(
        &self,
        polled: &[Polled],
        count: impl Fn(&Path) -> std::io::Result<u64>,
    ) -> Result<InputEnd, String> {
        let fix = "--until-input-done needs every port fastpath receives on to read pcap files \
                   (--vdev net_pcapN,rx_pcap=FILE, without infinite_rx=1) or to receive nothing \
                   (net_pcap with only tx_pcap, net_null with no-rx=1); for this input, stop \
                   with --duration SECS or Ctrl-C instead";
        let mut inputs = Vec::new();
        for Polled {
            port,
            name,
            rx_queues,
        } in polled
        {
            let src = self.vdevs.iter().find(|(n, _)| n == name).map(|(_, s)| s);
            let files = match src {
                Some(Source::PcapFiles(f)) => f.clone(),
                Some(Source::Nothing) => Vec::new(),
                Some(Source::Endless(why)) => {
                    return Err(format!(
                        "--until-input-done: port {port} ({name}) receives from {why}, which \
                         has no end; {fix}"
                    ))
                }
                None => {
                    return Err(format!(
                        "--until-input-done: port {port} ({name}) is not a --vdev of this command \
                         line, so its input has no known end; {fix}"
                    ))
                }
            };
            // net_pcap reads its i-th rx_pcap file on its i-th RX queue: a
            // file past the queues fastpath sets up is never read.
            if files.len() > usize::from(*rx_queues) {
                let n = files.len();
                return Err(format!(
                    "--until-input-done: port {port} ({name}) has {n} rx_pcap files, one per RX \
                     queue, but fastpath sets up {rx_queues} RX queue(s) on it, so the rest \
                     would never be read; give the port {n} RX queues (rx_queues = {n} in its \
                     [[port]], or --rx-queues {n}) or one rx_pcap file"
                ));
            }
            let mut frames = 0;
            for f in &files {
                frames += count(f).map_err(|e| {
                    format!(
                        "--until-input-done: port {port} ({name}): cannot count the frames of \
                         rx_pcap={}: {e}",
                        f.display()
                    )
                })?;
            }
            inputs.push(Input {
                port: *port,
                name: name.clone(),
                files,
                frames,
            });
        }
        Ok(InputEnd { inputs })
    }
}

impl InputEnd {
    /// The input ports and their frames.
    pub fn inputs(&self) -> &[Input] {
        &self.inputs
    }

    /// Frames port `input` has read so far: received by a worker, or lost
    /// by its driver (`rx_nombuf`, errors) after it read them.
    fn read(input: &Input, s: &Sample) -> u64 {
        s.ports
            .iter()
            .find(|p| p.id == input.port)
            .map_or(0, |p| p.count.rx + p.driver.rx_nombuf + p.driver.rx_errors)
    }

    /// Whether every frame of every input has been read and nothing is in
    /// flight. `s` reads every lcore's ends before its starts, so a packet
    /// still on its way is never seen as ended.
    pub fn reached(&self, s: &Sample) -> bool {
        s.in_flight() == 0 && self.inputs.iter().all(|i| Self::read(i, s) >= i.frames)
    }

    /// What the input's end is waiting for, e.g. "port 0 (net_pcap0) read
    /// 1200 of the 2000 frames of in.pcap; 3 packets in flight".
    pub fn waiting_for(&self, s: &Sample) -> String {
        let mut parts: Vec<String> = self
            .inputs
            .iter()
            .filter(|i| Self::read(i, s) < i.frames)
            .map(|i| {
                let files: Vec<String> = i.files.iter().map(|f| f.display().to_string()).collect();
                format!(
                    "port {} ({}) read {} of the {} frames of {}",
                    i.port,
                    i.name,
                    Self::read(i, s),
                    i.frames,
                    files.join(", ")
                )
            })
            .collect();
        let in_flight = s.in_flight();
        if in_flight > 0 {
            parts.push(format!(
                "{in_flight} packets in flight (in the control plane: waiting for a neighbour, \
                 or to be answered)"
            ));
        }
        if parts.is_empty() {
            "nothing".into()
        } else {
            parts.join("; ")
        }
    }

    /// "2000 frames on port 0, 0 on port 1".
    pub fn describe(&self) -> String {
        self.inputs
            .iter()
            .enumerate()
            .map(|(k, i)| match k {
                0 => format!("{} frames on port {}", i.frames, i.port),
                _ => format!("{} on port {}", i.frames, i.port),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Say how the input's end went, once the loop ended: when it was reached,
/// or what it still waited for; `Some` with that when the deadline came
/// first (the run then fails, see [`verdict`]).
pub fn report_end(
    ended: &super::Ended,
    input: Option<&InputEnd>,
    ops: &Ops,
    started: Instant,
) -> Option<String> {
    let end = input?;
    match ended {
        super::Ended::InputDone => {
            eprintln!(
                "fastpath: input used up after {:.3} s ({}), nothing in flight: stopping",
                started.elapsed().as_secs_f64(),
                end.describe()
            );
            None
        }
        super::Ended::Deadline => Some(end.waiting_for(&Sample::take(ops))),
        super::Ended::Stopped => {
            let s = Sample::take(ops);
            if !end.reached(&s) {
                eprintln!(
                    "fastpath: stopped before the input was used up: {}",
                    end.waiting_for(&s)
                );
            }
            None
        }
    }
}

/// The run's result once torn down: with `unfinished` (the input was not
/// used up when `--duration` ended, see [`report_end`]), a run that
/// would have succeeded fails with the report kept.
pub fn verdict(
    result: Result<crate::report::Report, super::RunError>,
    unfinished: Option<String>,
) -> Result<crate::report::Report, super::RunError> {
    let Some(waiting_for) = unfinished else {
        return result;
    };
    match result {
        Ok(report) => Err(super::RunError::InputNotUsedUp {
            waiting_for,
            report: Box::new(report),
        }),
        Err(e) => {
            eprintln!(
                "fastpath: --duration ended before the input was used up; waiting for {waiting_for}"
            );
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::PortCount;
    use crate::dpdk::PortStats;
    use crate::ops::sample::PortSample;

    fn sources(specs: &[&str]) -> InputSources {
        InputSources::from_vdevs(&specs.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    /// Two RX queues on every port.
    fn polled(ports: &[(u16, &str)]) -> Vec<Polled> {
        ports
            .iter()
            .map(|(i, n)| Polled {
                port: *i,
                name: n.to_string(),
                rx_queues: 2,
            })
            .collect()
    }

    /// Every file holds as many frames as its name is long.
    fn plan(specs: &[&str], ports: &[(u16, &str)]) -> Result<InputEnd, String> {
        sources(specs).plan_with(&polled(ports), |p| Ok(p.file_name().unwrap().len() as u64))
    }

    #[test]
    fn pcap_files_and_silent_ports_have_an_end() {
        let end = plan(
            &[
                "net_pcap0,rx_pcap=/t/a.pcap,rx_pcap=/t/bb.pcap,tx_pcap=/t/o.pcap",
                "net_pcap1,tx_pcap=/t/out.pcap",
                "net_null0,no-rx=1",
                "eth_pcap2,rx_pcap=/t/c.pcap,infinite_rx=0",
            ],
            &[
                (0, "net_pcap0"),
                (1, "net_pcap1"),
                (2, "net_null0"),
                (3, "eth_pcap2"),
            ],
        )
        .unwrap();
        let frames: Vec<(u16, u64)> = end.inputs().iter().map(|i| (i.port, i.frames)).collect();
        assert_eq!(frames, [(0, 6 + 7), (1, 0), (2, 0), (3, 6)]);
        assert_eq!(
            end.describe(),
            "13 frames on port 0, 0 on port 1, 0 on port 2, 6 on port 3"
        );
    }

    #[test]
    fn endless_inputs_are_refused_naming_the_port_and_the_fix() {
        for (spec, name, why) in [
            (
                "net_pcap0,rx_pcap=/t/a.pcap,infinite_rx=1",
                "net_pcap0",
                "infinite_rx=1",
            ),
            ("net_pcap0,iface=eth0", "net_pcap0", "iface=eth0"),
            ("net_pcap0,rx_iface=eth0", "net_pcap0", "rx_iface=eth0"),
            ("net_null0", "net_null0", "a net_null device"),
            (
                "net_af_packet0,iface=veth0",
                "net_af_packet0",
                "a net_af_packet device",
            ),
            ("net_ring0", "net_ring0", "a net_ring device"),
        ] {
            let e = plan(&[spec], &[(3, name)]).unwrap_err();
            assert!(e.contains(&format!("port 3 ({name})")), "{e}");
            assert!(e.contains(why), "{e}");
            assert!(e.contains("has no end"), "{e}");
            assert!(e.contains("--duration SECS or Ctrl-C instead"), "{e}");
        }
        // A port that is no vdev (a PCI device) has no known end either.
        let e = plan(&["net_pcap0,rx_pcap=/t/a.pcap"], &[(1, "0000:01:00.0")]).unwrap_err();
        assert!(e.contains("port 1 (0000:01:00.0) is not a --vdev"), "{e}");
    }

    #[test]
    fn files_past_the_rx_queues_are_refused() {
        let mut one_queue = polled(&[(0, "net_pcap0")]);
        one_queue[0].rx_queues = 1;
        let e = sources(&["net_pcap0,rx_pcap=/t/a.pcap,rx_pcap=/t/b.pcap"])
            .plan_with(&one_queue, |_| Ok(1))
            .unwrap_err();
        assert!(e.contains("port 0 (net_pcap0) has 2 rx_pcap files"), "{e}");
        assert!(e.contains("give the port 2 RX queues"), "{e}");
    }

    #[test]
    fn a_port_nobody_polls_may_be_endless() {
        // --forward 0:1 polls only port 0: net_null1 only transmits.
        let end = plan(
            &["net_pcap0,rx_pcap=/t/a.pcap", "net_null1"],
            &[(0, "net_pcap0")],
        );
        assert_eq!(end.unwrap().inputs().len(), 1);
    }

    #[test]
    fn a_file_that_cannot_be_counted_is_named() {
        let e = sources(&["net_pcap0,rx_pcap=/t/a.pcap"])
            .plan_with(&polled(&[(0, "net_pcap0")]), |_| {
                Err(std::io::Error::other("bad magic"))
            })
            .unwrap_err();
        assert!(
            e.contains("port 0 (net_pcap0)") && e.contains("/t/a.pcap"),
            "{e}"
        );
        assert!(e.contains("bad magic"), "{e}");
    }

    fn sample(ports: &[(u16, u64, u64)], total: PortCount) -> Sample {
        Sample {
            at: std::time::Instant::now(),
            ports: ports
                .iter()
                .map(|(id, rx, nombuf)| PortSample {
                    id: *id,
                    name: format!("net_pcap{id}"),
                    count: PortCount {
                        rx: *rx,
                        ..PortCount::default()
                    },
                    driver: PortStats {
                        rx_nombuf: *nombuf,
                        ..PortStats::default()
                    },
                })
                .collect(),
            workers: Vec::new(),
            total,
            stage_drops: Default::default(),
        }
    }

    #[test]
    fn reached_once_every_frame_is_read_and_nothing_is_in_flight() {
        let end = plan(
            &["net_pcap0,rx_pcap=/t/abcd", "net_pcap1,tx_pcap=/t/o"],
            &[(0, "net_pcap0"), (1, "net_pcap1")],
        )
        .unwrap();
        let ended = |rx, tx| PortCount {
            rx,
            tx,
            ..PortCount::default()
        };
        // 3 of 4 frames read, all sent.
        let s = sample(&[(0, 3, 0), (1, 0, 0)], ended(3, 3));
        assert!(!end.reached(&s));
        assert!(
            end.waiting_for(&s)
                .contains("port 0 (net_pcap0) read 3 of the 4 frames of /t/abcd"),
            "{}",
            end.waiting_for(&s)
        );
        // All 4 read, one not sent yet.
        let s = sample(&[(0, 4, 0), (1, 0, 0)], ended(4, 3));
        assert!(!end.reached(&s));
        assert!(end.waiting_for(&s).starts_with("1 packets in flight"));
        // All read and sent.
        assert!(end.reached(&sample(&[(0, 4, 0), (1, 0, 0)], ended(4, 4))));
        // One the driver lost for want of an mbuf counts as read.
        assert!(end.reached(&sample(&[(0, 3, 1), (1, 0, 0)], ended(3, 3))));
    }
}
