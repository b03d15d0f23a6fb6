//! The file as serde and `toml` read it: unchecked values with the byte
//! span of every item and field, and the limits and defaults of its fields.

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;
use toml::Spanned;

/// Default `rx_queues` of a port.
pub const DEFAULT_RX_QUEUES: u16 = 1;
/// Largest `rx_queues` of a port.
pub const MAX_RX_QUEUES: u16 = 64;
/// Default `mtu` of a port.
pub const DEFAULT_MTU: u16 = 1500;
/// Smallest `mtu` (the IPv4 minimum).
pub const MIN_MTU: u16 = 68;
/// Largest `mtu`.
/// The largest MTU: a frame must fit one mbuf (2048 bytes of data room, less
/// the Ethernet header); jumbo frames would need larger mbufs or scatter RX.
pub const MAX_MTU: u16 = 2034;
/// Largest DPDK port id accepted for an integer `device` (RTE_MAX_ETHPORTS can be at most 1024).
pub const MAX_PORT_ID: u16 = 1023;
/// Largest lcore id accepted for `[[lcore]] id` (RTE_MAX_LCORE can be at most 1024).
pub const MAX_LCORE_ID: u32 = 1023;
/// Most next hops of one route (ECMP).
pub const MAX_NEXT_HOPS: usize = 16;

/// The whole file as TOML gives it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConfig {
    #[serde(default)]
    pub(crate) port: Vec<Spanned<RawPort>>,
    #[serde(default)]
    pub(crate) route: Vec<Spanned<RawRoute>>,
    /// Both spellings are accepted, even mixed in one file (a serde alias
    /// would reject the mix as a duplicate field).
    #[serde(default)]
    pub(crate) neighbour: Vec<Spanned<RawNeighbour>>,
    #[serde(default)]
    pub(crate) neighbor: Vec<Spanned<RawNeighbour>>,
    #[serde(default)]
    pub(crate) lcore: Vec<Spanned<RawLcore>>,
    #[serde(default)]
    pub(crate) hook: Vec<Spanned<toml::Table>>,
    /// `[kernel]`: the ports' kernel interfaces.
    pub(crate) kernel: Option<Spanned<RawKernel>>,
}

/// `[kernel]`: whether each port has a kernel interface, and the routing
/// peers whose traffic to us goes to the kernel ahead of the rest.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawKernel {
    pub(crate) interfaces: Option<Spanned<bool>>,
    pub(crate) peers: Option<Spanned<Vec<Spanned<String>>>>,
    pub(crate) ttl_security: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPort {
    pub(crate) device: Spanned<RawDevice>,
    pub(crate) address: Spanned<String>,
    pub(crate) mac: Option<Spanned<String>>,
    pub(crate) rx_queues: Option<Spanned<Int>>,
    pub(crate) mtu: Option<Spanned<Int>>,
    /// IPv6 addresses with their subnets, e.g. `["2001:db8:1::1/64"]`.
    pub(crate) ipv6: Option<Spanned<Vec<Spanned<String>>>>,
    /// The link-local address; derived from the MAC when absent.
    pub(crate) link_local: Option<Spanned<String>>,
    /// The name of the port's kernel interface (with `[kernel] interfaces`).
    pub(crate) kernel_interface: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRoute {
    pub(crate) prefix: Spanned<String>,
    pub(crate) via: Option<Spanned<RawVia>>,
    pub(crate) device: Option<Spanned<RawDevice>>,
}

/// `via`: one gateway (a string) or several (an array of strings: ECMP).
pub(crate) enum RawVia {
    One(String),
    Many(Vec<Spanned<String>>),
}

impl<'de> Deserialize<'de> for RawVia {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawVia;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a next hop address (string) or an array of them (ECMP)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawVia, E> {
                Ok(RawVia::One(v.to_owned()))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<RawVia, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = seq.next_element::<Spanned<String>>()? {
                    out.push(v);
                }
                Ok(RawVia::Many(out))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNeighbour {
    pub(crate) address: Spanned<String>,
    pub(crate) mac: Spanned<String>,
    /// The port of an IPv6 link-local neighbour.
    pub(crate) device: Option<Spanned<RawDevice>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLcore {
    pub(crate) id: Spanned<Int>,
    pub(crate) queues: Spanned<Vec<Spanned<String>>>,
}

/// A `device` value before checks: a string or an integer.
pub(crate) enum RawDevice {
    Name(String),
    Id(i64),
}

impl<'de> Deserialize<'de> for RawDevice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RawDevice;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a device name or PCI address (string) or a DPDK port id (integer)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawDevice, E> {
                Ok(RawDevice::Name(v.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawDevice, E> {
                Ok(RawDevice::Id(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawDevice, E> {
                Ok(RawDevice::Id(i64::try_from(v).unwrap_or(i64::MAX)))
            }
        }
        d.deserialize_any(V)
    }
}

/// An integer field before range checks (so the range error is ours, and a
/// type error says "expected an integer" rather than "expected i64").
pub(crate) struct Int(pub(crate) i64);

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Int;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Int, E> {
                Ok(Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Int, E> {
                Ok(Int(i64::try_from(v).unwrap_or(i64::MAX)))
            }
        }
        d.deserialize_any(V)
    }
}
