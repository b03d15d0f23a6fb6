//! The exit codes the README promises for a stop that is not clean: 3 when
//! mbufs did not come back to their pool, 130 when a second Ctrl-C comes
//! while the first one's shutdown is still under way.
//!
//! The leak comes from a hook that steals packets and loses them (it never
//! drops what it took), run in this process with the hook registered, as a
//! hook author's own binary would; the error's exit code is the one
//! `fastpath`'s `main` exits with. The second Ctrl-C goes to the binary
//! while its shutdown cannot finish: its worker is blocked writing to a
//! pcap FIFO that nobody reads (the test sees it sleep in `pipe_write`).

mod common;
#[path = "common/received.rs"]
mod received;

use common::ctl::{fifo, prefix};
use common::frames::udp;
use common::watch::Watched;
use common::*;
use fastpath::lifecycle::RunError;
use hooks::{
    BuildContext, Hook, HookArgs, HookBuildError, HookBurst, HookContext, HookKind, HookPoint,
    HookWorker, OwnedPacket, Verdict, WorkerStore,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// UDP destination port of the packets the hook steals and loses.
const LOST_PORT: u16 = 9;

/// Steals UDP to `LOST_PORT` at ingress and forgets it: a hook with a bug.
struct Loser;

impl Hook for Loser {
    fn worker(&self, _: usize, _: &mut WorkerStore) -> Box<dyn HookWorker> {
        Box::new(Loser)
    }
}

impl HookWorker for Loser {
    fn process(&mut self, _: &HookContext, _: &mut WorkerStore, burst: &mut HookBurst<'_, '_>) {
        burst.for_each_accepted(|_, p| {
            let l3 = usize::from(p.meta().l3_offset);
            let dport = p.data().get(l3 + 22..l3 + 24)?;
            (u16::from_be_bytes([dport[0], dport[1]]) == LOST_PORT).then_some(Verdict::Stolen)
        });
    }

    fn take(&mut self, _: &HookContext, packets: &mut dyn Iterator<Item = Box<dyn OwnedPacket>>) {
        // The bug: neither kept nor dropped, so never freed.
        packets.for_each(std::mem::forget);
    }
}

struct LoserKind;

impl HookKind for LoserKind {
    fn name(&self) -> &str {
        "loser"
    }
    fn points(&self) -> &[HookPoint] {
        &[HookPoint::Ingress]
    }
    fn build(&self, _: &HookArgs, _: &BuildContext) -> Result<Arc<dyn Hook>, HookBuildError> {
        Ok(Arc::new(Loser))
    }
}

#[test]
fn mbufs_a_hook_lost_end_the_run_with_exit_code_3() {
    use clap::Parser;
    const TEST: &str = "leak";
    const LOST: u32 = 8;
    const ROUTED: u32 = 40;
    let mut frames: Vec<Vec<u8>> = (0..ROUTED as u16)
        .map(|i| udp([10, 0, 1, 2], [198, 51, 100, 9], 1000 + i, 53))
        .collect();
    frames.extend(
        (0..LOST as u16).map(|i| udp([10, 0, 1, 2], [198, 51, 100, 9], 2000 + i, LOST_PORT)),
    );
    let config = concat!(
        pcap_router_config!(),
        "\n[[hook]]\npoint = \"ingress\"\nport = \"net_pcap0\"\nkind = \"loser\"\nname = \"lose\"\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    std::fs::write(p("router.toml"), config).unwrap();
    write_pcap(&p("in0.pcap"), &frames);
    write_pcap(&p("in1.pcap"), &[]);
    let app = [
        "--config".to_string(),
        p("router.toml").display().to_string(),
    ];
    let mut argv = vec!["fastpath".to_string()];
    argv.extend(eal_args(TEST, &pcap_vdevs(dir.path())));
    argv.push("--".into());
    argv.extend(app.iter().cloned());
    let args = fastpath::cli::AppArgs::try_parse_from(
        std::iter::once("fastpath".to_string()).chain(app.iter().cloned()),
    )
    .expect("app args");
    let registry = fastpath::builtin_hooks::registry();
    let _handle = registry
        .register(Arc::new(LoserKind))
        .expect("not a built-in name");

    // Stop this process's router (SIGINT, as Ctrl-C) once it took in every
    // frame; stop it on a failure too, so that the run returns.
    let pid = std::process::id().to_string();
    let stopper = std::thread::spawn(move || {
        let waited = std::panic::catch_unwind(|| {
            received::wait_received(
                &prefix(TEST),
                &[(0, u64::from(ROUTED + LOST))],
                Duration::from_secs(60),
            )
        });
        let sent = std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -INT {pid}");
        if let Err(e) = waited {
            std::panic::resume_unwind(e);
        }
    });
    let result = fastpath::runtime::run_with_registry(&argv, &args, &registry);
    stopper.join().expect("every frame received");

    let err = match result {
        Ok(r) => panic!("a run that lost {LOST} mbufs succeeded: {r:?}"),
        Err(e) => e,
    };
    assert_eq!(err.exit_code(), 3, "{err}");
    let RunError::Leak { missing, report } = &err else {
        panic!("not a leak: {err}");
    };
    assert_eq!(*missing, LOST, "{err}");
    assert_eq!(report.mbufs.in_use_at_exit, LOST, "{report:?}");
    assert_eq!(report.totals.stolen, u64::from(LOST), "{report:?}");
    assert_eq!(report.totals.tx, u64::from(ROUTED), "{report:?}");
    assert!(report.totals.balanced, "{report:?}");
    assert!(err.to_string().contains("(leak)"), "{err}");
}

/// Whether a thread of process `pid` sleeps writing to a pipe.
fn writing_to_a_pipe(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|t| {
        std::fs::read_to_string(t.path().join("wchan")).is_ok_and(|w| w.contains("pipe_write"))
    })
}

/// Whether SIGINT is pending for process `pid` (sent, not yet delivered).
fn sigint_pending(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .filter_map(|l| {
            l.strip_prefix("SigPnd:")
                .or_else(|| l.strip_prefix("ShdPnd:"))
        })
        .any(|mask| u64::from_str_radix(mask.trim(), 16).is_ok_and(|m| m & (1 << (2 - 1)) != 0))
}

/// Poll `cond` until it holds, at most `limit`; fail naming `what`.
fn until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < limit,
            "waiting for {what}: not within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_second_ctrl_c_during_shutdown_exits_at_once_with_130() {
    const TEST: &str = "ctrlc2";
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    std::fs::write(p("router.toml"), pcap_router_config!()).unwrap();
    let frames: Vec<Vec<u8>> = (0..64u16)
        .map(|i| udp([10, 0, 1, 2], [198, 51, 100, 9], 1000 + i, 53))
        .collect();
    write_pcap(&p("in0.pcap"), &frames);
    write_pcap(&p("in1.pcap"), &[]);
    // Port 1's output: a FIFO opened for reading and never read.
    let out1 = fifo(dir.path(), "out1.pcap");
    let held = {
        let out1 = out1.clone();
        std::thread::spawn(move || std::fs::File::open(out1).expect("open the FIFO"))
    };
    let vdevs = [
        format!(
            "net_pcap0,rx_pcap={},tx_pcap={},infinite_rx=1",
            p("in0.pcap").display(),
            p("out0.pcap").display()
        ),
        format!(
            "net_pcap1,rx_pcap={},tx_pcap={}",
            p("in1.pcap").display(),
            out1.display()
        ),
    ];
    let mut cmd = fastpath();
    cmd.args(eal_args(TEST, &vdevs))
        .args(["--", "--config"])
        .arg(p("router.toml"));
    let mut child = Watched::spawn(cmd);
    let pid = child.id();
    child.wait_stderr("fastpath: control socket", Duration::from_secs(30));
    let _reader = held.join().expect("the FIFO's reader");
    // The worker fills the FIFO and blocks: no shutdown can finish now.
    until(
        "the worker to block on the full FIFO",
        Duration::from_secs(60),
        || writing_to_a_pipe(pid),
    );
    child.signal("-INT");
    until(
        "the first SIGINT to be delivered",
        Duration::from_secs(10),
        || !sigint_pending(pid),
    );
    child.signal("-INT");
    let r = child.finish(Duration::from_secs(30));
    assert_eq!(
        r.status.code(),
        Some(130),
        "{:?}\nstdout:\n{}\nstderr:\n{}",
        r.status,
        r.stdout,
        r.stderr
    );
    assert!(
        r.stderr
            .contains("fastpath: second signal, exiting without cleanup"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stdout.contains("balanced"),
        "a report after the second signal:\n{}",
        r.stdout
    );
}
