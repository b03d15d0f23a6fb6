//! ip6_input on frames changed at random (a seeded generator, the same
//! cases each run): l2_input then ip6_input never panic, every packet ends
//! in exactly one step the stages declare (the bench checks it), and a
//! packet forwarded is its input with the hop limit one less and the
//! padding cut, byte for byte.

use super::frames::{icmp6, udp6, Frame6};
use crate::datapath::contract::Steps;
use crate::datapath::testing::Bench;
use crate::datapath::{ip6_input, l2_input};

/// xorshift64*: enough to spread the cases, and the same every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn templates() -> Vec<Frame6> {
    let peer = "2001:db8:1::7";
    vec![
        udp6(peer, "2001:db8:100::9"),
        udp6(peer, "2001:db8:100::9").dest_opts().pad(9),
        udp6(peer, "2001:db8:2::77"),
        icmp6(peer, "2001:db8:1::1", 128),
        icmp6(peer, "ff02::1:ff00:1", 135).dst_mac([0x33, 0x33, 0xff, 0, 0, 1]),
        udp6(peer, "2001:db8:100::9").grow(1500),
    ]
}

#[test]
fn changed_frames_end_in_one_step_and_forwards_are_exact() {
    let mut rng = Rng(0x6a09_e667_f3bc_c909);
    let templates = templates();
    let mut b = Bench::with_ipv6();
    let (mut forwarded, mut others) = (0, 0);
    for case in 0..3000 {
        let n = 1 + rng.below(8);
        let mut frames = Vec::new();
        for _ in 0..n {
            let mut f = templates[rng.below(templates.len())].build();
            for _ in 0..rng.below(5) {
                let at = 14 + rng.below(f.len() - 14).min(80);
                f[at] = rng.next() as u8;
            }
            if rng.below(4) == 0 {
                f.truncate(54 + rng.below(f.len() - 53));
            }
            frames.push(f);
        }
        b.burst.free_all();
        b.frames(&frames);
        b.scratch.steps = Steps::default();
        b.run(&l2_input::SPEC, l2_input::run);
        let steps = b.run(&ip6_input::SPEC, ip6_input::run);
        assert!(steps.is_partition(n), "case {case}: {steps:?}");
        for (i, f) in frames.iter().enumerate() {
            if steps.neigh_output & (1 << i) == 0 {
                others += 1;
                continue;
            }
            forwarded += 1;
            let len = 14 + 40 + usize::from(u16::from_be_bytes([f[18], f[19]]));
            let out = b.data(i);
            assert_eq!(out.len(), len, "case {case} packet {i}");
            assert_eq!(out[21], f[21] - 1, "case {case} packet {i}");
            assert_eq!(out[..21], f[..21], "case {case} packet {i}");
            assert_eq!(out[22..], f[22..len], "case {case} packet {i}");
        }
    }
    // Both ways taken often: the cases are not all refused, nor all passed.
    assert!(forwarded > 2000 && others > 2000, "{forwarded} {others}");
}
