//! The config parser on arbitrary TOML: raw text, or documents built from
//! the config's own sections, keys and plausible values (so that the
//! fuzzer reaches validation, not only the TOML syntax). Parsing never
//! panics; an accepted config holds what the rest of fastpath relies on
//! (indices in range, addresses in their subnets, values in their ranges),
//! and written back as TOML it is accepted again as the same config.

#![no_main]

use arbitrary::Arbitrary;
use fastpath::config::{
    format_mac, DeviceRef, LinkLocal, NextHop6Spec, NextHopSpec, RouterConfig, MAX_LCORE_ID,
    MAX_MTU, MAX_PORT_ID, MAX_RX_QUEUES, MIN_MTU,
};
use libfuzzer_sys::fuzz_target;
use std::fmt::Write;
use std::net::Ipv4Addr;
use std::path::Path;

#[derive(Arbitrary, Debug)]
enum Doc {
    Raw(String),
    Built(Vec<Section>),
}

#[derive(Arbitrary, Debug)]
struct Section {
    table: Table,
    fields: Vec<(Key, Val)>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Table {
    Port,
    Route,
    Neighbour,
    Neighbor,
    Lcore,
    Hook,
    HookRule,
    Other,
}

#[derive(Arbitrary, Debug)]
enum Key {
    Known(u8),
    Other(String),
}

const KEYS: [&str; 19] = [
    "device",
    "address",
    "mac",
    "rx_queues",
    "mtu",
    "prefix",
    "via",
    "id",
    "queues",
    "point",
    "port",
    "kind",
    "name",
    "priority",
    "policy",
    "action",
    "proto",
    "ipv6",
    "link_local",
];

#[derive(Arbitrary, Debug)]
enum Val {
    Str(Pick),
    Int(i64),
    Small(u8),
    Bool(bool),
    Array(Vec<Pick>),
    Text(String),
}

/// A string value, mostly of the shapes the config expects.
#[derive(Arbitrary, Debug)]
enum Pick {
    Device(u8),
    Pci(u8),
    /// 10.0.x.y/len, with x, y and len from small sets.
    Address(u8, u8, u8),
    Ip([u8; 4], u8),
    /// An IPv6 address from a small set, and a prefix length or none.
    Ip6(u8, u8, u8),
    Mac([u8; 6]),
    Queue(u8, u8),
    Word(u8),
    Any(String),
}

impl Pick {
    fn text(&self) -> String {
        const HOSTS: [u8; 6] = [0, 1, 2, 5, 254, 255];
        const LENS: [u8; 9] = [0, 1, 8, 16, 24, 30, 31, 32, 33];
        const WORDS: [&str; 8] = [
            "ingress", "egress", "filter", "classify", "accept", "drop", "tcp", "",
        ];
        match self {
            Pick::Device(n) => format!("net_pcap{}", n % 3),
            Pick::Pci(n) => format!("0000:01:00.{}", n % 3),
            Pick::Address(x, y, l) => format!(
                "10.0.{}.{}/{}",
                x % 4,
                HOSTS[usize::from(*y) % HOSTS.len()],
                LENS[usize::from(*l) % LENS.len()]
            ),
            Pick::Ip(a, l) if *l < 128 => Ipv4Addr::from(*a).to_string(),
            Pick::Ip(a, l) => format!("{}/{}", Ipv4Addr::from(*a), l % 40),
            Pick::Ip6(n, h, l) => {
                const NETS: [&str; 7] = [
                    "2001:db8:1::", "2001:db8:2::", "2001:db8::", "fe80::", "ff02::", "::",
                    "fd00:1::",
                ];
                const LENS6: [u8; 7] = [0, 10, 32, 48, 64, 128, 129];
                let a = format!("{}{}", NETS[usize::from(*n) % NETS.len()], h % 4);
                match l % 8 {
                    7 => a,
                    l => format!("{a}/{}", LENS6[usize::from(l) % LENS6.len()]),
                }
            }
            Pick::Mac(m) => format_mac(m),
            Pick::Queue(d, q) => format!("net_pcap{}:{}", d % 3, q % 3),
            Pick::Word(w) => WORDS[usize::from(*w) % WORDS.len()].to_owned(),
            Pick::Any(s) => s.clone(),
        }
    }
}

fn quoted(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

fn build(sections: &[Section]) -> String {
    let mut t = String::new();
    for s in sections {
        let header = match s.table {
            Table::Port => "[[port]]",
            Table::Route => "[[route]]",
            Table::Neighbour => "[[neighbour]]",
            Table::Neighbor => "[[neighbor]]",
            Table::Lcore => "[[lcore]]",
            Table::Hook => "[[hook]]",
            Table::HookRule => "[[hook.rule]]",
            Table::Other => "[other]",
        };
        let _ = writeln!(t, "{header}");
        for (k, v) in &s.fields {
            let key = match k {
                Key::Known(i) => KEYS[usize::from(*i) % KEYS.len()].to_owned(),
                Key::Other(s) => quoted(s),
            };
            let val = match v {
                Val::Str(p) => quoted(&p.text()),
                Val::Int(i) => i.to_string(),
                Val::Small(i) => i.to_string(),
                Val::Bool(b) => b.to_string(),
                Val::Array(a) => {
                    let items: Vec<String> = a.iter().map(|p| quoted(&p.text())).collect();
                    format!("[{}]", items.join(", "))
                }
                Val::Text(s) => s.clone(),
            };
            let _ = writeln!(t, "{key} = {val}");
        }
    }
    t
}

fuzz_target!(|doc: Doc| {
    let text = match &doc {
        Doc::Raw(s) => s.clone(),
        Doc::Built(sections) => build(sections),
    };
    let path = Path::new("fuzz.toml");
    let Ok(cfg) = RouterConfig::parse(path, &text) else {
        return;
    };
    check(&cfg);
    let again = emit(&cfg);
    match RouterConfig::parse(path, &again) {
        Ok(back) => assert_eq!(without_lines(&back), without_lines(&cfg), "{again}"),
        Err(e) => panic!("an accepted config written back is refused: {e}\n{text}\n---\n{again}"),
    }
});

/// What the rest of fastpath relies on in an accepted config.
fn check(cfg: &RouterConfig) {
    let ports = &cfg.ports;
    assert!(!ports.is_empty());
    for (j, p) in ports.iter().enumerate() {
        assert!((1..=32).contains(&p.prefix_len), "{p:?}");
        assert!((MIN_MTU..=MAX_MTU).contains(&p.mtu));
        assert!((1..=MAX_RX_QUEUES).contains(&p.rx_queues));
        if let DeviceRef::Id(id) = p.device {
            assert!(id <= MAX_PORT_ID);
        }
        if let Some(m) = p.mac {
            assert!(m[0] & 1 == 0 && m != [0; 6], "{p:?}");
        }
        for q in &ports[..j] {
            assert_ne!(q.device.to_string(), p.device.to_string());
            assert!(
                !q.contains(p.address) && !p.contains(q.address),
                "{q:?} {p:?}"
            );
        }
    }
    for (j, r) in cfg.routes.iter().enumerate() {
        assert!(r.prefix_len <= 32);
        let mask = u32::MAX
            .checked_shl(32 - u32::from(r.prefix_len))
            .unwrap_or(0);
        assert_eq!(u32::from(r.prefix) & !mask, 0, "{r:?}: host bits");
        match r.next_hop {
            NextHopSpec::Via { gateway, port } => assert!(ports[port].contains(gateway)),
            NextHopSpec::Connected { port } => assert!(port < ports.len()),
        }
        let twice = cfg.routes[..j]
            .iter()
            .any(|q| (q.prefix, q.prefix_len) == (r.prefix, r.prefix_len));
        assert!(!twice, "{r:?}");
    }
    for n in &cfg.neighbours {
        assert!(ports[n.port].contains(n.address), "{n:?}");
    }
    let on_link = |port: usize, a: std::net::Ipv6Addr| {
        a.segments()[0] & 0xffc0 == 0xfe80 || ports[port].ipv6.iter().any(|i| i.contains(a))
    };
    for (j, r) in cfg.routes6.iter().enumerate() {
        assert!(r.prefix_len <= 128);
        let mask = u128::MAX.checked_shl(128 - u32::from(r.prefix_len)).unwrap_or(0);
        assert_eq!(r.prefix.to_bits() & !mask, 0, "{r:?}: host bits");
        match r.next_hop {
            NextHop6Spec::Via { gateway, port } => {
                assert!(on_link(port, gateway) && !gateway.is_multicast(), "{r:?}")
            }
            NextHop6Spec::Connected { port } => assert!(port < ports.len()),
        }
        let twice = cfg.routes6[..j]
            .iter()
            .any(|q| (q.prefix, q.prefix_len) == (r.prefix, r.prefix_len));
        assert!(!twice, "{r:?}");
    }
    for n in &cfg.neighbours6 {
        assert!(on_link(n.port, n.address), "{n:?}");
    }
    for l in &cfg.lcores {
        assert!(l.id <= MAX_LCORE_ID && !l.queues.is_empty());
        for &(p, q) in &l.queues {
            assert!(q < ports[p].rx_queues, "{l:?}");
        }
    }
}

/// `cfg` as TOML (without its hooks, which a reload replaces and
/// `RouterConfig`'s equality leaves out).
fn emit(cfg: &RouterConfig) -> String {
    let device = |d: &DeviceRef| match d {
        DeviceRef::Name(n) => quoted(n),
        DeviceRef::Id(id) => id.to_string(),
    };
    let mut t = String::new();
    for p in &cfg.ports {
        let _ = writeln!(t, "[[port]]\ndevice = {}", device(&p.device));
        let _ = writeln!(t, "address = \"{}/{}\"", p.address, p.prefix_len);
        if let Some(m) = p.mac {
            let _ = writeln!(t, "mac = \"{}\"", format_mac(&m));
        }
        let _ = writeln!(t, "rx_queues = {}\nmtu = {}", p.rx_queues, p.mtu);
        let ipv6: Vec<String> = p
            .ipv6
            .iter()
            .map(|i| format!("\"{}/{}\"", i.address, i.prefix_len))
            .collect();
        let _ = writeln!(t, "ipv6 = [{}]", ipv6.join(", "));
        if let LinkLocal::Given(a) = p.link_local {
            let _ = writeln!(t, "link_local = \"{a}\"");
        }
    }
    for r in &cfg.routes6 {
        let _ = writeln!(t, "[[route]]\nprefix = \"{}/{}\"", r.prefix, r.prefix_len);
        if let NextHop6Spec::Via { gateway, .. } = r.next_hop {
            let _ = writeln!(t, "via = \"{gateway}\"");
        }
        let port = r.next_hop.port();
        let _ = writeln!(t, "device = {}", device(&cfg.ports[port].device));
    }
    for n in &cfg.neighbours6 {
        let _ = writeln!(t, "[[neighbour]]\naddress = \"{}\"", n.address);
        let _ = writeln!(t, "device = {}", device(&cfg.ports[n.port].device));
        let _ = writeln!(t, "mac = \"{}\"", format_mac(&n.mac));
    }
    for r in &cfg.routes {
        let _ = writeln!(t, "[[route]]\nprefix = \"{}/{}\"", r.prefix, r.prefix_len);
        let gateways: Vec<String> = r
            .next_hops()
            .filter_map(|h| match h {
                NextHopSpec::Via { gateway, .. } => Some(format!("\"{gateway}\"")),
                NextHopSpec::Connected { .. } => None,
            })
            .collect();
        let _ = match r.next_hop {
            NextHopSpec::Via { .. } if gateways.len() > 1 => {
                writeln!(t, "via = [{}]", gateways.join(", "))
            }
            NextHopSpec::Via { gateway, .. } => writeln!(t, "via = \"{gateway}\""),
            NextHopSpec::Connected { port } => {
                writeln!(t, "device = {}", device(&cfg.ports[port].device))
            }
        };
    }
    for n in &cfg.neighbours {
        let _ = writeln!(t, "[[neighbour]]\naddress = \"{}\"", n.address);
        let _ = writeln!(t, "mac = \"{}\"", format_mac(&n.mac));
    }
    for l in &cfg.lcores {
        let queues: Vec<String> = l
            .queues
            .iter()
            .map(|&(p, q)| quoted(&format!("{}:{q}", cfg.ports[p].device)))
            .collect();
        let _ = writeln!(
            t,
            "[[lcore]]\nid = {}\nqueues = [{}]",
            l.id,
            queues.join(", ")
        );
    }
    t
}

/// `cfg` with every line number 0, to compare a config with its copy.
fn without_lines(cfg: &RouterConfig) -> RouterConfig {
    let mut c = cfg.clone();
    c.ports.iter_mut().for_each(|p| p.line = 0);
    c.routes.iter_mut().for_each(|r| r.line = 0);
    c.neighbours.iter_mut().for_each(|n| n.line = 0);
    c.routes6.iter_mut().for_each(|r| r.line = 0);
    c.neighbours6.iter_mut().for_each(|n| n.line = 0);
    c.lcores.iter_mut().for_each(|l| l.line = 0);
    c
}
