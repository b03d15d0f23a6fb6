//! zebra's side of the FPM connection, arbitrary: a byte stream (raw, or
//! frames zebra sends with edits) read frame by frame as the listener
//! reads it. Checked: nothing panics; the parser's answer is a function
//! of the bytes (a second parse of the same frame gives the same answer);
//! a rejected frame changes nothing; what is accepted goes through zebra's
//! RIB into a FIB stand-in whose routes are all FPM routes of at most
//! `MAX_PATHS` next hops (one in IPv6), every one of the route's family
//! and in a port's subnet; a sweep after a disconnect leaves no route.

#![no_main]

use arbitrary::Arbitrary;
use fastpath::fib::{Origin, MAX_PATHS};
use fastpath::fpm::build::{
    del_nexthop, del_route, frame_of, multipath, new_group, new_nexthop, new_route, via,
};
use fastpath::fpm::frame::{read_frame, Read1};
use fastpath::fpm::{parse_frame, Event, FibSink, FpmRib, FpmStats};
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Arbitrary, Debug)]
struct Input {
    /// Start from frames zebra could send (chosen by these bytes), then
    /// edit them; else `raw` is the stream.
    seeds: Vec<u8>,
    edits: Vec<(u16, u8)>,
    raw: Vec<u8>,
}

fn seed(n: u8) -> Vec<u8> {
    let a = |i: u8| Ipv4Addr::new(10, 0, (i % 3) + 1, i);
    let p = Ipv4Addr::new(198, 51, n, 0);
    let a6 = |i: u8| Ipv6Addr::new(0x2001, 0xdb8, u16::from(i % 3) + 1, 0, 0, 0, 0, u16::from(i));
    let p6 = Ipv6Addr::new(0x2001, 0xdb8, 0x100 + u16::from(n), 0, 0, 0, 0, 0);
    match n % 8 {
        0 => frame_of(&[new_route(p, 24, via(a(n), 2))]),
        1 => frame_of(&[del_route(p, 24), new_route(p, 24, multipath(&[a(n), a(n + 1)]))]),
        2 => frame_of(&[new_nexthop(u32::from(n), a(n), 2), new_group(99, &[u32::from(n), 7])]),
        3 => frame_of(&[new_route(p, 24, vec![netlink_packet_route::route::RouteAttribute::NhId(99)])]),
        4 => frame_of(&[del_nexthop(u32::from(n))]),
        5 => frame_of(&[del_route(p, 24)]),
        6 => frame_of(&[
            new_route(p6, 48, multipath(&[a6(n), a6(n.wrapping_add(1))])),
            new_nexthop(u32::from(n) + 1000, a6(n), 2),
        ]),
        _ => frame_of(&[del_route(p6, 48)]),
    }
}

#[derive(Default)]
struct Fib(BTreeMap<(IpAddr, u8), (Origin, Vec<(IpAddr, usize)>)>);

impl FibSink for Fib {
    fn origin(&self, p: IpAddr, l: u8) -> Option<Origin> {
        self.0.get(&(p, l)).map(|r| r.0.clone())
    }
    fn port_of(&self, g: IpAddr) -> Option<usize> {
        match g {
            IpAddr::V4(g) => {
                let o = g.octets();
                (o[0] == 10 && o[1] == 0 && (1..=2).contains(&o[2])).then(|| usize::from(o[2] - 1))
            }
            IpAddr::V6(g) => {
                let s = g.segments();
                (s[..2] == [0x2001, 0xdb8] && (1..=2).contains(&s[2]) && s[3] == 0)
                    .then(|| usize::from(s[2] - 1))
            }
        }
    }
    /// Interfaces 2 and 3 are ports 0 and 1's kernel interfaces.
    fn port_of_interface(&self, oif: u32) -> Option<usize> {
        matches!(oif, 2 | 3).then(|| oif as usize - 2)
    }
    fn set(&mut self, p: IpAddr, l: u8, hops: &[(IpAddr, usize)]) -> Result<(), String> {
        self.0.insert((p, l), (Origin::Fpm, hops.to_vec()));
        Ok(())
    }
    fn remove(&mut self, p: IpAddr, l: u8) -> Result<(), String> {
        self.0.remove(&(p, l));
        Ok(())
    }
}

fuzz_target!(|input: Input| {
    let mut stream: Vec<u8> = if input.seeds.is_empty() {
        input.raw
    } else {
        input.seeds.iter().take(16).flat_map(|n| seed(*n)).collect()
    };
    for (at, v) in input.edits.iter().take(8) {
        if !stream.is_empty() {
            let i = usize::from(*at) % stream.len();
            stream[i] = *v;
        }
    }
    let stats = Arc::new(FpmStats::default());
    let mut rib = FpmRib::new(Duration::from_secs(1), stats.clone());
    let mut fib = Fib::default();
    let now = Instant::now();
    rib.apply(vec![Event::Connected(1)], now, &mut fib);
    let mut r = &stream[..];
    loop {
        match read_frame(&mut r) {
            Ok(Read1::Body(body)) => {
                let first = parse_frame(&body);
                assert_eq!(first, parse_frame(&body), "the answer is a function of the bytes");
                let before = fib.0.clone();
                match first {
                    Ok(parsed) => rib.apply(vec![Event::Frame(1, parsed)], now, &mut fib),
                    Err(_) => assert_eq!(fib.0, before, "a rejected frame changes nothing"),
                }
            }
            Ok(Read1::Lost(..) | Read1::Closed) | Err(_) => break,
        }
    }
    for ((p, _), (origin, hops)) in &fib.0 {
        assert_eq!(*origin, Origin::Fpm);
        let max = if p.is_ipv4() { MAX_PATHS } else { 1 };
        assert!(!hops.is_empty() && hops.len() <= max);
        // The port of the gateway's subnet; outside every subnet, one whose
        // kernel interface a path named.
        let port_ok = |g: &IpAddr, port: usize| match fib.port_of(*g) {
            Some(p) => p == port,
            None => port < 2,
        };
        assert!(hops.iter().all(|(g, port)| g.is_ipv4() == p.is_ipv4() && port_ok(g, *port)));
    }
    assert!(rib.len() >= fib.0.len());
    rib.apply(vec![Event::Disconnected(1)], now, &mut fib);
    rib.tick(now + Duration::from_secs(1), &mut fib);
    assert!(fib.0.is_empty(), "the sweep leaves nothing: {:?}", fib.0);
    assert!(rib.is_empty());
});
