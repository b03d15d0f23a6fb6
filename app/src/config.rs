//! Router configuration file (`fastpath [EAL] -- --config FILE`): parsing and
//! static validation.
//!
//! The file is TOML:
//!
//! ```toml
//! # ports: by vdev name / PCI address (string) or DPDK port id (integer)
//! [[port]]
//! device = "net_af_packet0"        # or "0000:01:00.0" or 0
//! address = "10.0.1.1/24"          # our IPv4 address and the connected subnet
//! mac = "02:00:00:00:01:01"        # optional; set on the port at start
//! rx_queues = 1                    # optional, default 1, range 1..=64
//! mtu = 1500                       # optional, default 1500, range 68..=2034
//!
//! [[route]]
//! prefix = "0.0.0.0/0"
//! via = "10.0.1.2"                 # next hop inside a port's connected subnet
//!
//! [[route]]
//! prefix = "192.0.2.0/24"
//! device = "net_af_packet1"        # connected (on-link) route; exactly one of via/device
//!
//! [[route]]
//! prefix = "198.51.100.0/24"
//! via = ["10.0.1.2", "10.0.1.3"]   # ECMP: flows spread over up to 16 next hops
//!
//! [[neighbour]]                    # optional static neighbours (never age); also [[neighbor]]
//! address = "10.0.1.2"
//! mac = "02:00:00:00:01:02"
//!
//! [[lcore]]                        # optional; default: queues round-robin over worker lcores
//! id = 1
//! queues = ["net_af_packet0:0", "net_af_packet1:0"]   # "<device>:<rx queue>"
//! ```
//!
//! Everything that can be checked without DPDK is checked here; each error
//! names the file, the line, the section and the field. Runtime checks done
//! elsewhere (does the device exist, ...) use the `line` of each item and
//! [`RouterConfig::error_at`] to report in the same style.
//!
//! Parsing is two steps: serde + `toml` into private `Raw*` structs that keep
//! the byte span of every item and field ([`toml::Spanned`]), then validation
//! into the public `*Spec` structs, which hold checked values and line numbers.

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::collections::HashMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::ops::Range;
use std::path::{Path, PathBuf};
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

// ---------------------------------------------------------------------------
// Public, validated configuration
// ---------------------------------------------------------------------------

/// A validated router configuration.
#[derive(Clone, Debug)]
pub struct RouterConfig {
    /// The file it was read from (used in error messages).
    pub path: PathBuf,
    /// `[[port]]` items, in file order; other items refer to ports by index.
    pub ports: Vec<PortSpec>,
    /// `[[route]]` items, in file order.
    pub routes: Vec<RouteSpec>,
    /// `[[neighbour]]` / `[[neighbor]]` items, in file order.
    pub neighbours: Vec<NeighbourSpec>,
    /// `[[lcore]]` items, in file order; empty: default queue placement.
    pub lcores: Vec<LcoreSpec>,
    /// `[[hook]]` items, in file order (checked by their kinds when built).
    pub hooks: Vec<crate::hook_config::HookSpec>,
    /// The file's text, for the line numbers of hook errors.
    pub text: String,
}

impl PartialEq for RouterConfig {
    /// Everything but the hooks and the text: what a reload may not change.
    fn eq(&self, o: &Self) -> bool {
        self.path == o.path
            && self.ports == o.ports
            && self.routes == o.routes
            && self.neighbours == o.neighbours
            && self.lcores == o.lcores
    }
}

/// How a port is named: a device name (vdev name or PCI address) or a DPDK port id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DeviceRef {
    /// `device = "net_af_packet0"` or `device = "0000:01:00.0"`.
    Name(String),
    /// `device = 0`.
    Id(u16),
}

impl fmt::Display for DeviceRef {
    /// The name as is, an id in decimal (the form used in `[[lcore]] queues`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceRef::Name(name) => f.write_str(name),
            DeviceRef::Id(id) => write!(f, "{id}"),
        }
    }
}

/// One `[[port]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortSpec {
    pub device: DeviceRef,
    /// Our address on this port.
    pub address: Ipv4Addr,
    /// Length of the connected subnet's prefix (1..=32).
    pub prefix_len: u8,
    /// MAC address to set on the port at start (unicast, non-zero).
    pub mac: Option<[u8; 6]>,
    pub rx_queues: u16,
    pub mtu: u16,
    /// 1-based line of the `[[port]]` header.
    pub line: usize,
}

impl PortSpec {
    /// The connected subnet's network address, host byte order.
    pub fn network(&self) -> u32 {
        u32::from(self.address) & prefix_mask(self.prefix_len)
    }

    /// Whether `a` lies inside the connected subnet.
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        u32::from(a) & prefix_mask(self.prefix_len) == self.network()
    }

    /// The connected subnet's broadcast address.
    pub fn broadcast(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.network() | !prefix_mask(self.prefix_len))
    }

    /// The connected subnet as text, e.g. `10.0.1.0/24`.
    fn subnet(&self) -> String {
        format!("{}/{}", Ipv4Addr::from(self.network()), self.prefix_len)
    }

    /// Whether `a` is the network or broadcast address of a subnet that has
    /// those (prefix <= 30), i.e. not usable as a host address.
    fn is_network_or_broadcast(&self, a: Ipv4Addr) -> bool {
        self.prefix_len <= 30 && (u32::from(a) == self.network() || a == self.broadcast())
    }
}

/// One `[[route]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteSpec {
    /// Destination prefix (host bits are zero).
    pub prefix: Ipv4Addr,
    /// 0..=32.
    pub prefix_len: u8,
    pub next_hop: NextHopSpec,
    /// The next hops after `next_hop` of a multipath (ECMP) route: `via`
    /// with several gateways. Empty for a single next hop.
    pub multipath: Vec<NextHopSpec>,
    /// 1-based line of the `[[route]]` header.
    pub line: usize,
}

impl RouteSpec {
    /// Every next hop, `next_hop` first.
    pub fn next_hops(&self) -> impl Iterator<Item = NextHopSpec> + '_ {
        std::iter::once(self.next_hop).chain(self.multipath.iter().copied())
    }
}

/// Most next hops of one route (ECMP).
pub const MAX_NEXT_HOPS: usize = 16;

/// Where a route sends packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextHopSpec {
    /// `via = "..."`: to a gateway; `port` indexes `RouterConfig::ports`, the port whose subnet holds it.
    Via { gateway: Ipv4Addr, port: usize },
    /// `device = "..."`: on-link, straight to the destination out of `port` (index into `ports`).
    Connected { port: usize },
}

/// One static `[[neighbour]]` (never ages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NeighbourSpec {
    pub address: Ipv4Addr,
    pub mac: [u8; 6],
    /// Index into `RouterConfig::ports` of the port whose subnet holds `address`.
    pub port: usize,
    /// 1-based line of the `[[neighbour]]` header.
    pub line: usize,
}

/// One `[[lcore]]`: the rx queues a worker lcore polls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LcoreSpec {
    pub id: u32,
    /// (index into `RouterConfig::ports`, rx queue).
    pub queues: Vec<(usize, u16)>,
    /// 1-based line of the `[[lcore]]` header.
    pub line: usize,
}

/// A config error: `{path}:{line}: {message}` (or `{path}: {message}` without a line).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {}", .path.display(), line_suffix(.line), .message)]
pub struct ConfigError {
    pub path: PathBuf,
    /// 1-based line the error is about, when known.
    pub line: Option<usize>,
    pub message: String,
}

/// `:{line}` or nothing.
fn line_suffix(line: &Option<usize>) -> String {
    line.map(|l| format!(":{l}")).unwrap_or_default()
}

impl RouterConfig {
    /// Reads and parses the config file at `path`.
    pub fn load(path: &Path) -> Result<RouterConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            path: path.to_path_buf(),
            line: None,
            message: format!("cannot read the config file: {e}"),
        })?;
        Self::parse(path, &text)
    }

    /// Parses and validates config `text`; `path` is only used in errors.
    pub fn parse(path: &Path, text: &str) -> Result<RouterConfig, ConfigError> {
        let ctx = Ctx { path, text };
        let raw: RawConfig = toml::from_str(text).map_err(|e| ctx.toml_error(&e))?;
        ctx.validate(raw)
    }

    /// Index into `ports` of the port named `d`.
    pub fn port_index(&self, d: &DeviceRef) -> Option<usize> {
        self.ports.iter().position(|p| &p.device == d)
    }

    /// A [`ConfigError`] pointing at `line` of this file, for runtime checks
    /// done elsewhere (e.g. "DPDK has no port ...").
    pub fn error_at(&self, line: usize, message: impl Into<String>) -> ConfigError {
        ConfigError {
            path: self.path.clone(),
            line: Some(line),
            message: message.into(),
        }
    }
}

// ---------------------------------------------------------------------------
// Changes at run time (`fastpath ctl`): checked by the file's own rules
// ---------------------------------------------------------------------------

/// A route or neighbour given at run time, to check against a running
/// config's ports exactly as a `[[route]]` or `[[neighbour]]` of its file.
pub enum RuntimeItem<'a> {
    /// `route add PREFIX via IP[,IP...]` (`device`: None) or `dev PORT`.
    Route {
        prefix: &'a str,
        via: &'a [String],
        device: Option<&'a DeviceRef>,
    },
    /// `neigh add IP MAC`.
    Neighbour { address: &'a str, mac: &'a str },
}

impl RouterConfig {
    /// Check a route given at run time; the error says what is wrong and why,
    /// in the words of the file's checks (without the section and line).
    pub fn check_route(
        &self,
        prefix: &str,
        via: &[String],
        device: Option<&DeviceRef>,
    ) -> Result<RouteSpec, String> {
        let raw = self.runtime_raw(RuntimeItem::Route {
            prefix,
            via,
            device,
        })?;
        let ctx = Ctx {
            path: &self.path,
            text: &raw.1,
        };
        let r = raw.0.route.first().ok_or("no route given")?;
        ctx.route(&self.ports, r)
            .map_err(|e| runtime_message(&e.message))
    }

    /// Check a static neighbour given at run time (see [`Self::check_route`]).
    pub fn check_neighbour(&self, address: &str, mac: &str) -> Result<NeighbourSpec, String> {
        let raw = self.runtime_raw(RuntimeItem::Neighbour { address, mac })?;
        let ctx = Ctx {
            path: &self.path,
            text: &raw.1,
        };
        let n = raw.0.neighbour.first().ok_or("no neighbour given")?;
        ctx.neighbour(&self.ports, n)
            .map_err(|e| runtime_message(&e.message))
    }

    /// The item as the one section of a file (so that the file's parser and
    /// its spans serve), parsed.
    fn runtime_raw(&self, item: RuntimeItem<'_>) -> Result<(RawConfig, String), String> {
        let mut t = toml::Table::new();
        let section = match item {
            RuntimeItem::Route {
                prefix,
                via,
                device,
            } => {
                t.insert("prefix".into(), prefix.into());
                match (via, device) {
                    ([one], None) => {
                        t.insert("via".into(), one.as_str().into());
                    }
                    (_, None) => {
                        let list = via.iter().map(|v| toml::Value::from(v.as_str()));
                        t.insert("via".into(), toml::Value::Array(list.collect()));
                    }
                    (_, Some(DeviceRef::Name(n))) => {
                        t.insert("device".into(), n.as_str().into());
                    }
                    (_, Some(DeviceRef::Id(id))) => {
                        t.insert("device".into(), i64::from(*id).into());
                    }
                }
                "route"
            }
            RuntimeItem::Neighbour { address, mac } => {
                t.insert("address".into(), address.into());
                t.insert("mac".into(), mac.into());
                "neighbour"
            }
        };
        let mut doc = toml::Table::new();
        doc.insert(
            section.into(),
            toml::Value::Array(vec![toml::Value::Table(t)]),
        );
        let text = toml::to_string(&doc).map_err(|e| e.to_string())?;
        let raw: RawConfig = toml::from_str(&text).map_err(|e| e.message().to_string())?;
        Ok((raw, text))
    }
}

/// A check's message without its `[[section]] field `name`: ` or
/// `[[section]] ` lead: the command names what it is about.
fn runtime_message(m: &str) -> String {
    for lead in ["[[route]] ", "[[neighbour]] "] {
        if let Some(rest) = m.strip_prefix(lead) {
            return match rest
                .strip_prefix("field `")
                .and_then(|r| r.split_once("`: "))
            {
                Some((field, msg)) => format!("{field}: {msg}"),
                // "{prefix}/{len}: ..." (the command names the prefix).
                None => rest.split_once(": ").map_or(rest, |(_, m)| m).to_string(),
            };
        }
    }
    m.to_string()
}

/// Parses a MAC address, `aa:bb:cc:dd:ee:ff` or `aa-bb-cc-dd-ee-ff`, any case.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let sep = if s.contains('-') { '-' } else { ':' };
    let mut mac = [0u8; 6];
    let mut parts = s.split(sep);
    for byte in mac.iter_mut() {
        let part = parts.next()?;
        if part.len() != 2 || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        *byte = u8::from_str_radix(part, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// Formats a MAC address as `aa:bb:cc:dd:ee:ff` (lower case).
pub fn format_mac(m: &[u8; 6]) -> String {
    let [a, b, c, d, e, f] = m;
    format!("{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{f:02x}")
}

/// Netmask of a prefix length, host byte order (`len` is at most 32).
fn prefix_mask(len: u8) -> u32 {
    match len {
        0 => 0,
        n => u32::MAX << (32 - u32::from(n.min(32))),
    }
}

// ---------------------------------------------------------------------------
// Raw (deserialized, unchecked) form
// ---------------------------------------------------------------------------

/// The whole file as TOML gives it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    port: Vec<Spanned<RawPort>>,
    #[serde(default)]
    route: Vec<Spanned<RawRoute>>,
    /// Both spellings are accepted, even mixed in one file (a serde alias
    /// would reject the mix as a duplicate field).
    #[serde(default)]
    neighbour: Vec<Spanned<RawNeighbour>>,
    #[serde(default)]
    neighbor: Vec<Spanned<RawNeighbour>>,
    #[serde(default)]
    lcore: Vec<Spanned<RawLcore>>,
    #[serde(default)]
    hook: Vec<Spanned<toml::Table>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPort {
    device: Spanned<RawDevice>,
    address: Spanned<String>,
    mac: Option<Spanned<String>>,
    rx_queues: Option<Spanned<Int>>,
    mtu: Option<Spanned<Int>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    prefix: Spanned<String>,
    via: Option<Spanned<RawVia>>,
    device: Option<Spanned<RawDevice>>,
}

/// `via`: one gateway (a string) or several (an array of strings: ECMP).
enum RawVia {
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
struct RawNeighbour {
    address: Spanned<String>,
    mac: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLcore {
    id: Spanned<Int>,
    queues: Spanned<Vec<Spanned<String>>>,
}

/// A `device` value before checks: a string or an integer.
enum RawDevice {
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
struct Int(i64);

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

// ---------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------

/// The file being parsed: turns byte spans into lines and builds errors.
struct Ctx<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Ctx<'_> {
    /// 1-based line of byte `offset`.
    fn line_at(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// 1-based line where `span` starts.
    fn line_of(&self, span: &Range<usize>) -> usize {
        self.line_at(span.start)
    }

    fn error(&self, line: usize, message: String) -> ConfigError {
        ConfigError {
            path: self.path.to_path_buf(),
            line: Some(line),
            message,
        }
    }

    /// `[[section]] field `field`: message`, at the line of `value`.
    fn field_error<T>(
        &self,
        section: &str,
        field: &str,
        value: &Spanned<T>,
        message: impl fmt::Display,
    ) -> ConfigError {
        self.error(
            self.line_of(&value.span()),
            format!("[[{section}]] field `{field}`: {message}"),
        )
    }

    /// A TOML syntax, type, missing-field or unknown-field error, at toml's
    /// line, with the section (and field) it is in when that can be told.
    fn toml_error(&self, e: &toml::de::Error) -> ConfigError {
        let message = e.message().trim().to_owned();
        let Some(span) = e.span() else {
            return ConfigError {
                path: self.path.to_path_buf(),
                line: None,
                message: format!("invalid config: {message}"),
            };
        };
        let line = self.line_at(span.start);
        let text = self.line_text(line);
        if let Some(header) = table_header(text) {
            // about the section itself (unknown section, `[x]` for `[[x]]`);
            // a missing field is reported at its table's header too
            if !message.starts_with("missing field") {
                return self.error(line, header_error(header, &message));
            }
        }
        let place = match (self.section_header_before(line), key_on_line(text)) {
            (Some(section), Some(key)) => format!("{section} field `{key}`: "),
            (Some(section), None) => format!("{section}: "),
            (None, Some(key)) => format!("field `{key}`: "),
            (None, None) => String::new(),
        };
        self.error(line, format!("{place}{message}"))
    }

    /// Text of 1-based line `line`.
    fn line_text(&self, line: usize) -> &str {
        self.text.lines().nth(line.saturating_sub(1)).unwrap_or("")
    }

    /// The `[...]` / `[[...]]` header in force at 1-based line `line`, if any.
    fn section_header_before(&self, line: usize) -> Option<&str> {
        self.text.lines().take(line).filter_map(table_header).last()
    }

    fn validate(&self, raw: RawConfig) -> Result<RouterConfig, ConfigError> {
        let ports = self.ports(&raw.port)?;
        let routes = self.routes(&ports, &raw.route)?;
        let mut neighbours: Vec<&Spanned<RawNeighbour>> =
            raw.neighbour.iter().chain(raw.neighbor.iter()).collect();
        neighbours.sort_by_key(|n| n.span().start);
        let neighbours = self.neighbours(&ports, &neighbours)?;
        let lcores = self.lcores(&ports, &raw.lcore)?;
        let hooks =
            crate::hook_config::parse_hooks(self.path, self.text, &raw.hook, |o| self.line_at(o))?;
        Ok(RouterConfig {
            path: self.path.to_path_buf(),
            ports,
            routes,
            neighbours,
            lcores,
            hooks,
            text: self.text.to_owned(),
        })
    }

    // ----- ports -----------------------------------------------------------

    /// Checks every `[[port]]`, then that no two share a device or a subnet.
    fn ports(&self, raw: &[Spanned<RawPort>]) -> Result<Vec<PortSpec>, ConfigError> {
        if raw.is_empty() {
            return Err(ConfigError {
                path: self.path.to_path_buf(),
                line: None,
                message: "no [[port]] configured; expected at least one [[port]] with a `device` \
                    and an `address`, e.g. device = \"net_af_packet0\", address = \"10.0.1.1/24\""
                    .to_owned(),
            });
        }
        let ports = raw
            .iter()
            .map(|p| self.port(p))
            .collect::<Result<Vec<_>, _>>()?;
        self.check_port_conflicts(&ports, raw)?;
        Ok(ports)
    }

    fn port(&self, raw: &Spanned<RawPort>) -> Result<PortSpec, ConfigError> {
        let r = raw.get_ref();
        let device = self.device("port", &r.device)?;
        let (address, prefix_len) = port_address(r.address.get_ref())
            .map_err(|m| self.field_error("port", "address", &r.address, m))?;
        let mac = match &r.mac {
            Some(m) => {
                Some(unicast_mac(m.get_ref()).map_err(|e| self.field_error("port", "mac", m, e))?)
            }
            None => None,
        };
        let rx_queues = match &r.rx_queues {
            Some(v) => self.ranged("port", "rx_queues", v, 1, MAX_RX_QUEUES)?,
            None => DEFAULT_RX_QUEUES,
        };
        let mtu = match &r.mtu {
            Some(v) => self.ranged("port", "mtu", v, MIN_MTU, MAX_MTU)?,
            None => DEFAULT_MTU,
        };
        Ok(PortSpec {
            device,
            address,
            prefix_len,
            mac,
            rx_queues,
            mtu,
            line: self.line_of(&raw.span()),
        })
    }

    /// A `device` value: a non-empty name or a port id in 0..=MAX_PORT_ID.
    fn device(&self, section: &str, raw: &Spanned<RawDevice>) -> Result<DeviceRef, ConfigError> {
        match raw.get_ref() {
            RawDevice::Name(name) if name.trim().is_empty() => Err(self.field_error(
                section,
                "device",
                raw,
                "the device name is empty; expected a vdev name or PCI address, \
                 e.g. \"net_af_packet0\" or \"0000:01:00.0\", or a DPDK port id, e.g. 0",
            )),
            RawDevice::Name(name) if name.trim() != name => Err(self.field_error(
                section,
                "device",
                raw,
                format!("{name:?} has leading or trailing spaces; expected {:?}", name.trim()),
            )),
            RawDevice::Name(name) => Ok(DeviceRef::Name(name.clone())),
            RawDevice::Id(id) => match u16::try_from(*id) {
                Ok(id) if id <= MAX_PORT_ID => Ok(DeviceRef::Id(id)),
                _ => Err(self.field_error(
                    section,
                    "device",
                    raw,
                    format!(
                        "port id {id} is out of range; expected a DPDK port id from 0 to {MAX_PORT_ID}, \
                         or a device name string"
                    ),
                )),
            },
        }
    }

    /// An integer field that must lie in `lo..=hi`.
    fn ranged<T>(
        &self,
        section: &str,
        field: &str,
        value: &Spanned<Int>,
        lo: T,
        hi: T,
    ) -> Result<T, ConfigError>
    where
        T: TryFrom<i64> + Into<i64> + Copy + fmt::Display,
    {
        let v = value.get_ref().0;
        match T::try_from(v) {
            Ok(t) if (lo.into()..=hi.into()).contains(&v) => Ok(t),
            _ => Err(self.field_error(
                section,
                field,
                value,
                format!("{v} is out of range; expected an integer from {lo} to {hi}"),
            )),
        }
    }

    /// No two ports may name the same device or have overlapping subnets.
    fn check_port_conflicts(
        &self,
        ports: &[PortSpec],
        raw: &[Spanned<RawPort>],
    ) -> Result<(), ConfigError> {
        for (j, (b, raw_b)) in ports.iter().zip(raw).enumerate() {
            for a in &ports[..j] {
                if a.device.to_string() == b.device.to_string() {
                    return Err(self.field_error(
                        "port",
                        "device",
                        &raw_b.get_ref().device,
                        format!(
                            "{} is already configured by the [[port]] at line {} \
                             (this one is at line {}); expected each device in one [[port]] only",
                            describe_device(&b.device),
                            a.line,
                            b.line
                        ),
                    ));
                }
            }
        }
        for (j, (b, raw_b)) in ports.iter().zip(raw).enumerate() {
            for a in &ports[..j] {
                let shorter = a.prefix_len.min(b.prefix_len);
                let mask = prefix_mask(shorter);
                if a.network() & mask == b.network() & mask {
                    return Err(self.field_error(
                        "port",
                        "address",
                        &raw_b.get_ref().address,
                        format!(
                            "overlapping port addresses: {}/{} on {} (line {}) overlaps {}/{} on {} (line {}); \
                             expected each port in its own subnet",
                            b.address, b.prefix_len, label(&b.device), b.line,
                            a.address, a.prefix_len, label(&a.device), a.line
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    // ----- routes ----------------------------------------------------------

    /// Checks every `[[route]]` and that no prefix is given twice.
    fn routes(
        &self,
        ports: &[PortSpec],
        raw: &[Spanned<RawRoute>],
    ) -> Result<Vec<RouteSpec>, ConfigError> {
        let mut routes: Vec<RouteSpec> = Vec::with_capacity(raw.len());
        for r in raw {
            let route = self.route(ports, r)?;
            if let Some(prev) = routes
                .iter()
                .find(|p| p.prefix == route.prefix && p.prefix_len == route.prefix_len)
            {
                return Err(self.field_error(
                    "route",
                    "prefix",
                    &r.get_ref().prefix,
                    format!(
                        "{}/{} is already routed by the [[route]] at line {} (this one is at line {}); \
                         expected each prefix once",
                        route.prefix, route.prefix_len, prev.line, route.line
                    ),
                ));
            }
            routes.push(route);
        }
        Ok(routes)
    }

    fn route(&self, ports: &[PortSpec], raw: &Spanned<RawRoute>) -> Result<RouteSpec, ConfigError> {
        let r = raw.get_ref();
        let line = self.line_of(&raw.span());
        let (prefix, prefix_len) = route_prefix(r.prefix.get_ref())
            .map_err(|m| self.field_error("route", "prefix", &r.prefix, m))?;
        let what = format!("[[route]] {prefix}/{prefix_len}");
        let mut multipath = Vec::new();
        let next_hop = match (&r.via, &r.device) {
            (Some(via), None) => {
                let mut hops = self.route_vias(ports, via)?;
                multipath = hops.split_off(1);
                hops[0]
            }
            (None, Some(device)) => NextHopSpec::Connected {
                port: self.port_of_device(ports, "route", device)?,
            },
            (Some(_), Some(_)) => {
                return Err(self.error(
                    line,
                    format!(
                        "{what}: has both `via` and `device`; expected exactly one: \
                         `via` for a next hop, or `device` for a connected (on-link) route"
                    ),
                ))
            }
            (None, None) => {
                return Err(self.error(
                    line,
                    format!(
                        "{what}: has neither `via` nor `device`; expected exactly one: \
                         `via = \"<next hop address>\"` or `device = \"<port device>\"`"
                    ),
                ))
            }
        };
        self.check_connected_subnet_route(ports, prefix, prefix_len, next_hop, line)?;
        self.check_reserved_route(ports, prefix, prefix_len, line)?;
        Ok(RouteSpec {
            prefix,
            prefix_len,
            next_hop,
            multipath,
            line,
        })
    }

    /// `via`: one next hop, or 1 to `MAX_NEXT_HOPS` different ones.
    fn route_vias(
        &self,
        ports: &[PortSpec],
        via: &Spanned<RawVia>,
    ) -> Result<Vec<NextHopSpec>, ConfigError> {
        let list = match via.get_ref() {
            RawVia::One(s) => {
                return Ok(vec![
                    self.route_via(ports, &Spanned::new(via.span(), s.clone()))?
                ])
            }
            RawVia::Many(list) => list,
        };
        if list.is_empty() || list.len() > MAX_NEXT_HOPS {
            return Err(self.field_error(
                "route",
                "via",
                via,
                format!(
                    "{} next hops; expected 1 to {MAX_NEXT_HOPS} (an array of addresses, e.g. \
                     [\"10.0.1.2\", \"10.0.1.3\"])",
                    list.len()
                ),
            ));
        }
        let mut hops: Vec<NextHopSpec> = Vec::with_capacity(list.len());
        for v in list {
            let hop = self.route_via(ports, v)?;
            if hops.contains(&hop) {
                return Err(self.field_error(
                    "route",
                    "via",
                    v,
                    format!(
                        "next hop {} is given twice; expected each next hop once",
                        v.get_ref().trim()
                    ),
                ));
            }
            hops.push(hop);
        }
        Ok(hops)
    }

    /// A route into space that is never forwarded (multicast, 0/8, 127/8,
    /// 240/4), or for one of our own addresses or a subnet broadcast: the
    /// router would either ignore it or forward what it must not.
    fn check_reserved_route(
        &self,
        ports: &[PortSpec],
        prefix: Ipv4Addr,
        prefix_len: u8,
        line: usize,
    ) -> Result<(), ConfigError> {
        let what = format!("[[route]] {prefix}/{prefix_len}");
        let overlaps = |net: Ipv4Addr, len: u8| {
            let shorter = prefix_len.min(len);
            let mask = u32::MAX.checked_shl(32 - u32::from(shorter)).unwrap_or(0);
            u32::from(prefix) & mask == u32::from(net) & mask
        };
        // The default route (and other short prefixes) may cover these
        // ranges: the router still never forwards into them.
        for (net, len, name) in [
            (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast 224.0.0.0/4"),
            (Ipv4Addr::new(0, 0, 0, 0), 8, "\"this network\" 0.0.0.0/8"),
            (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback 127.0.0.0/8"),
            (Ipv4Addr::new(240, 0, 0, 0), 4, "reserved 240.0.0.0/4"),
        ] {
            if prefix_len >= len && overlaps(net, len) {
                return Err(self.error(
                    line,
                    format!(
                        "{what}: lies in {name}, which is never forwarded (RFC 1812); \
                         remove the route"
                    ),
                ));
            }
        }
        if prefix_len == 32 {
            for p in ports {
                if prefix == p.address || (p.prefix_len <= 30 && prefix == p.broadcast()) {
                    return Err(self.error(
                        line,
                        format!(
                            "{what}: is {} of {} (line {}); it is delivered locally or \
                             not at all, and a route cannot change that",
                            if prefix == p.address {
                                "our own address"
                            } else {
                                "the subnet broadcast"
                            },
                            label(&p.device),
                            p.line
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// `via`: a host address inside a connected subnet, not one of ours.
    fn route_via(
        &self,
        ports: &[PortSpec],
        via: &Spanned<String>,
    ) -> Result<NextHopSpec, ConfigError> {
        let err = |m: String| self.field_error("route", "via", via, m);
        let gateway = plain_address(via.get_ref(), "10.0.1.2").map_err(err)?;
        let port = self
            .neighbour_port(
                ports,
                gateway,
                "next hop",
                "a next hop must be directly reachable",
            )
            .map_err(err)?;
        Ok(NextHopSpec::Via { gateway, port })
    }

    /// Index of the port whose subnet holds the neighbour or next hop `a`;
    /// `a` must be a usable host address that is not ours.
    fn neighbour_port(
        &self,
        ports: &[PortSpec],
        a: Ipv4Addr,
        what: &str,
        why: &str,
    ) -> Result<usize, String> {
        if let Some(p) = ports.iter().find(|p| p.address == a) {
            return Err(format!(
                "{what} {a} is our own address on {} (line {}); expected another host in its subnet",
                label(&p.device),
                p.line
            ));
        }
        let Some(i) = ports.iter().position(|p| p.contains(a)) else {
            return Err(format!(
                "{what} {a} is not in any connected subnet ({}); {why}",
                connected_subnets(ports)
            ));
        };
        let p = &ports[i];
        if p.is_network_or_broadcast(a) {
            let kind = if a == p.broadcast() {
                "broadcast"
            } else {
                "network"
            };
            return Err(format!(
                "{what} {a} is the {kind} address of {} on {}; expected a host address",
                p.subnet(),
                label(&p.device)
            ));
        }
        Ok(i)
    }

    /// The index of the configured port named by a `device` field.
    fn port_of_device(
        &self,
        ports: &[PortSpec],
        section: &str,
        raw: &Spanned<RawDevice>,
    ) -> Result<usize, ConfigError> {
        let device = self.device(section, raw)?;
        ports
            .iter()
            .position(|p| p.device == device)
            .ok_or_else(|| {
                self.field_error(
                    section,
                    "device",
                    raw,
                    format!(
                        "{} is not a configured port; expected the device of a [[port]]: {}",
                        describe_device(&device),
                        ports
                            .iter()
                            .map(|p| device_literal(&p.device))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })
    }

    /// A route for exactly a connected subnet must be a `device` route out of
    /// that subnet's port.
    fn check_connected_subnet_route(
        &self,
        ports: &[PortSpec],
        prefix: Ipv4Addr,
        prefix_len: u8,
        next_hop: NextHopSpec,
        line: usize,
    ) -> Result<(), ConfigError> {
        // An on-link route inside another port's connected subnet: its
        // neighbours answer ARP on that other port, not on this one.
        if let NextHopSpec::Connected { port } = next_hop {
            let inside = ports
                .iter()
                .enumerate()
                .find(|(j, p)| *j != port && p.prefix_len < prefix_len && p.contains(prefix));
            if let Some((_, p)) = inside {
                return Err(self.error(
                    line,
                    format!(
                        "[[route]] {prefix}/{prefix_len}: lies inside the connected subnet \
                         {} of {} (line {}), so its hosts are on that port; an on-link \
                         route must use `device = {}` or leave the subnet to its port",
                        p.subnet(),
                        label(&p.device),
                        p.line,
                        device_literal(&p.device)
                    ),
                ));
            }
        }
        let Some(i) = ports
            .iter()
            .position(|p| p.prefix_len == prefix_len && p.network() == u32::from(prefix))
        else {
            return Ok(());
        };
        if next_hop == (NextHopSpec::Connected { port: i }) {
            return Ok(());
        }
        let p = &ports[i];
        Err(self.error(
            line,
            format!(
                "[[route]] {prefix}/{prefix_len}: this is the connected subnet of {} (line {}); \
                 a route for it must be `device = {}`",
                label(&p.device),
                p.line,
                device_literal(&p.device)
            ),
        ))
    }

    // ----- neighbours ------------------------------------------------------

    /// Checks every static neighbour and that no address is given twice.
    fn neighbours(
        &self,
        ports: &[PortSpec],
        raw: &[&Spanned<RawNeighbour>],
    ) -> Result<Vec<NeighbourSpec>, ConfigError> {
        let mut out: Vec<NeighbourSpec> = Vec::with_capacity(raw.len());
        for n in raw {
            let spec = self.neighbour(ports, n)?;
            if let Some(prev) = out.iter().find(|p| p.address == spec.address) {
                return Err(self.field_error(
                    "neighbour",
                    "address",
                    &n.get_ref().address,
                    format!(
                        "neighbour {} is already defined by the [[neighbour]] at line {} \
                         (this one is at line {}); expected each address once",
                        spec.address, prev.line, spec.line
                    ),
                ));
            }
            out.push(spec);
        }
        Ok(out)
    }

    fn neighbour(
        &self,
        ports: &[PortSpec],
        raw: &Spanned<RawNeighbour>,
    ) -> Result<NeighbourSpec, ConfigError> {
        let r = raw.get_ref();
        let err = |m: String| self.field_error("neighbour", "address", &r.address, m);
        let address = plain_address(r.address.get_ref(), "10.0.1.2").map_err(err)?;
        let port = self
            .neighbour_port(
                ports,
                address,
                "neighbour",
                "a neighbour must be directly reachable",
            )
            .map_err(err)?;
        let mac = unicast_mac(r.mac.get_ref())
            .map_err(|m| self.field_error("neighbour", "mac", &r.mac, m))?;
        Ok(NeighbourSpec {
            address,
            mac,
            port,
            line: self.line_of(&raw.span()),
        })
    }

    // ----- lcores ----------------------------------------------------------

    /// Checks every `[[lcore]]`: unique ids, each rx queue polled by exactly
    /// one lcore, and (when any is given) every rx queue of every port polled.
    fn lcores(
        &self,
        ports: &[PortSpec],
        raw: &[Spanned<RawLcore>],
    ) -> Result<Vec<LcoreSpec>, ConfigError> {
        let mut lcores: Vec<LcoreSpec> = Vec::with_capacity(raw.len());
        // (port, queue) -> (lcore id, line of the entry)
        let mut polled: HashMap<(usize, u16), (u32, usize)> = HashMap::new();
        for l in raw {
            let r = l.get_ref();
            let line = self.line_of(&l.span());
            let id: u32 = self.ranged("lcore", "id", &r.id, 0, MAX_LCORE_ID)?;
            if let Some(prev) = lcores.iter().find(|p| p.id == id) {
                return Err(self.field_error(
                    "lcore",
                    "id",
                    &r.id,
                    format!(
                        "lcore {id} is already defined by the [[lcore]] at line {} (this one is at line {line}); \
                         expected each lcore id once (list all its queues in one [[lcore]])",
                        prev.line
                    ),
                ));
            }
            if r.queues.get_ref().is_empty() {
                return Err(self.field_error(
                    "lcore",
                    "queues",
                    &r.queues,
                    format!(
                        "lcore {id} polls no queues; expected at least one \"<device>:<rx queue>\", \
                         e.g. \"{}:0\", or remove this [[lcore]]",
                        ports[0].device
                    ),
                ));
            }
            let mut queues = Vec::with_capacity(r.queues.get_ref().len());
            for entry in r.queues.get_ref() {
                let q = lcore_queue(ports, entry.get_ref())
                    .map_err(|m| self.field_error("lcore", "queues", entry, m))?;
                let entry_line = self.line_of(&entry.span());
                if let Some((prev_id, prev_line)) = polled.insert(q, (id, entry_line)) {
                    let by = if prev_id == id {
                        "this lcore already".to_owned()
                    } else {
                        format!("lcore {prev_id}")
                    };
                    return Err(self.field_error(
                        "lcore",
                        "queues",
                        entry,
                        format!(
                            "rx queue {}:{} is already polled by {by} (line {prev_line}); \
                             expected each rx queue polled by one lcore",
                            ports[q.0].device, q.1
                        ),
                    ));
                }
                queues.push(q);
            }
            lcores.push(LcoreSpec { id, queues, line });
        }
        self.check_all_queues_polled(ports, &lcores, &polled)?;
        Ok(lcores)
    }

    /// With explicit `[[lcore]]`s, every rx queue of every port must be polled.
    fn check_all_queues_polled(
        &self,
        ports: &[PortSpec],
        lcores: &[LcoreSpec],
        polled: &HashMap<(usize, u16), (u32, usize)>,
    ) -> Result<(), ConfigError> {
        let Some(first) = lcores.first() else {
            return Ok(());
        };
        for (i, p) in ports.iter().enumerate() {
            for q in 0..p.rx_queues {
                if !polled.contains_key(&(i, q)) {
                    return Err(self.error(
                        first.line,
                        format!(
                            "[[lcore]] field `queues`: rx queue {dev}:{q} ([[port]] at line {pl}) \
                             is not polled by any lcore; add \"{dev}:{q}\" to the queues of an [[lcore]], \
                             or remove every [[lcore]] to use the default placement",
                            dev = p.device,
                            pl = p.line
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Field parsers (pure: return the message, the caller adds file/line/field)
// ---------------------------------------------------------------------------

/// Splits `a.b.c.d/len`; `example` is a valid value to quote in messages.
fn split_prefix(s: &str, example: &str) -> Result<(Ipv4Addr, u8), String> {
    let expected = format!("expected an IPv4 address with a prefix, e.g. \"{example}\"");
    let Some((addr, len)) = s.split_once('/') else {
        return Err(format!("{s:?} has no prefix length; {expected}"));
    };
    let addr: Ipv4Addr = addr.trim().parse().map_err(|_| {
        format!(
            "{s:?}: {:?} is not an IPv4 address; {expected}",
            addr.trim()
        )
    })?;
    let len = len.trim();
    let len: u8 = match len.parse::<u8>() {
        Ok(n) if len.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => {
            return Err(format!(
                "{s:?}: prefix length {len:?} is not a number; {expected}"
            ))
        }
    };
    if len > 32 {
        return Err(format!(
            "{s:?}: prefix length {len} is out of range; expected 0 to 32"
        ));
    }
    Ok((addr, len))
}

/// A port `address`: a unicast host address with its subnet's prefix (1..=32).
/// The never-routed range `a` is in, if any (RFC 1812 5.3.7).
fn martian_range(a: Ipv4Addr) -> Option<&'static str> {
    match a.octets()[0] {
        0 => Some("\"this network\" 0.0.0.0/8"),
        127 => Some("loopback 127.0.0.0/8"),
        240..=254 => Some("reserved 240.0.0.0/4"),
        _ => None,
    }
}

fn port_address(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let example = "10.0.1.1/24";
    let (addr, len) = split_prefix(s, example)?;
    if len == 0 {
        return Err(format!(
            "{s:?}: prefix length 0 is out of range for a port; expected 1 to 32, e.g. \"{example}\""
        ));
    }
    let unicast = format!("expected a unicast host address, e.g. \"{example}\"");
    if addr.is_unspecified() {
        return Err(format!("{s:?}: 0.0.0.0 is not a host address; {unicast}"));
    }
    if addr.is_multicast() {
        return Err(format!("{s:?}: {addr} is a multicast address; {unicast}"));
    }
    if let Some(range) = martian_range(addr) {
        return Err(format!(
            "{s:?}: {addr} is in {range}, which is never routed (RFC 1812); {unicast}"
        ));
    }
    if addr.is_broadcast() {
        return Err(format!(
            "{s:?}: {addr} is the limited broadcast address; {unicast}"
        ));
    }
    let port = PortSpec {
        device: DeviceRef::Id(0),
        address: addr,
        prefix_len: len,
        mac: None,
        rx_queues: DEFAULT_RX_QUEUES,
        mtu: DEFAULT_MTU,
        line: 0,
    };
    if port.is_network_or_broadcast(addr) {
        let kind = if addr == port.broadcast() {
            "broadcast"
        } else {
            "network"
        };
        let host = Ipv4Addr::from(port.network() + 1);
        return Err(format!(
            "{s:?}: {addr} is the {kind} address of {}; expected a host address inside the subnet, \
             e.g. \"{host}/{len}\"",
            port.subnet()
        ));
    }
    Ok((addr, len))
}

/// A route `prefix`: 0..=32 long, no host bits set.
/// A route's `prefix`, e.g. "192.0.2.0/24" (no host bits set).
pub fn route_prefix(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let (addr, len) = split_prefix(s, "192.0.2.0/24")?;
    let masked = Ipv4Addr::from(u32::from(addr) & prefix_mask(len));
    if masked != addr {
        return Err(format!(
            "{s:?} has host bits set after the first {len} bits; did you mean \"{masked}/{len}\"?"
        ));
    }
    Ok((addr, len))
}

/// A plain IPv4 address (no prefix length).
fn plain_address(s: &str, example: &str) -> Result<Ipv4Addr, String> {
    let expected = format!("expected a plain IPv4 address, e.g. \"{example}\"");
    if s.contains('/') {
        return Err(format!("{s:?} has a prefix length; {expected}"));
    }
    s.trim()
        .parse()
        .map_err(|_| format!("{s:?} is not an IPv4 address; {expected}"))
}

/// A MAC address usable as a port's or neighbour's address.
fn unicast_mac(s: &str) -> Result<[u8; 6], String> {
    let expected = "expected a unicast MAC address, e.g. \"02:00:00:00:01:01\"";
    let mac = parse_mac(s).ok_or_else(|| format!("{s:?} is not a MAC address; {expected}"))?;
    if mac[0] & 1 != 0 {
        return Err(format!(
            "{s:?} is a multicast MAC address (low bit of the first byte set); {expected}"
        ));
    }
    if mac == [0; 6] {
        return Err(format!("{s:?} is the all-zero MAC address; {expected}"));
    }
    Ok(mac)
}

/// An `[[lcore]] queues` entry, `"<device>:<rx queue>"` -> (port index, queue).
fn lcore_queue(ports: &[PortSpec], s: &str) -> Result<(usize, u16), String> {
    let example = format!("\"{}:0\"", ports[0].device);
    let expected = format!("expected \"<device>:<rx queue>\", e.g. {example}");
    let Some((device, queue)) = s.rsplit_once(':') else {
        return Err(format!("{s:?} has no queue number; {expected}"));
    };
    let Some(port) = ports.iter().position(|p| p.device.to_string() == device) else {
        return Err(format!(
            "{s:?}: {device:?} is not a configured port; expected the device of a [[port]] as written there: {}",
            port_devices(ports)
        ));
    };
    let queue: u16 = match queue.parse() {
        Ok(q) if queue.bytes().all(|b| b.is_ascii_digit()) => q,
        _ => {
            return Err(format!(
                "{s:?}: {queue:?} is not a queue number; {expected}"
            ))
        }
    };
    let p = &ports[port];
    if queue >= p.rx_queues {
        return Err(format!(
            "{s:?}: rx queue {queue} does not exist; {} has rx_queues = {} (queues 0 to {}, [[port]] at line {})",
            label(&p.device),
            p.rx_queues,
            p.rx_queues - 1,
            p.line
        ));
    }
    Ok((port, queue))
}

// ---------------------------------------------------------------------------
// Message helpers
// ---------------------------------------------------------------------------

/// `10.0.1.0/24 on net_af_packet0, 10.0.2.0/24 on port id 1`.
fn connected_subnets(ports: &[PortSpec]) -> String {
    ports
        .iter()
        .map(|p| format!("{} on {}", p.subnet(), label(&p.device)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `net_af_packet0, 1`: devices as written in `[[lcore]] queues`.
fn port_devices(ports: &[PortSpec]) -> String {
    ports
        .iter()
        .map(|p| p.device.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A device in prose: `net_af_packet0` or `port id 3`.
fn label(d: &DeviceRef) -> String {
    match d {
        DeviceRef::Name(n) => n.clone(),
        DeviceRef::Id(id) => format!("port id {id}"),
    }
}

/// `device "x"` or `port id 3`, for "... is not a configured port".
fn describe_device(d: &DeviceRef) -> String {
    match d {
        DeviceRef::Name(n) => format!("device {n:?}"),
        DeviceRef::Id(id) => format!("port id {id}"),
    }
}

/// How the device is written in TOML: `"name"` or `3`.
fn device_literal(d: &DeviceRef) -> String {
    match d {
        DeviceRef::Name(n) => format!("{n:?}"),
        DeviceRef::Id(id) => id.to_string(),
    }
}

/// `[[port]]` / `[table]` when `line` is a table header.
fn table_header(line: &str) -> Option<&str> {
    let code = line.split('#').next().unwrap_or("").trim();
    let inner = code.strip_prefix('[')?.strip_suffix(']')?;
    let inner = inner
        .strip_prefix('[')
        .and_then(|i| i.strip_suffix(']'))
        .unwrap_or(inner);
    let bare = |c: char| c.is_ascii_alphanumeric() || "_-. ".contains(c);
    (!inner.trim().is_empty() && inner.chars().all(bare)).then_some(code)
}

/// A TOML error about a section header itself.
fn header_error(header: &str, message: &str) -> String {
    let name = header.trim_matches(|c| c == '[' || c == ']').trim();
    let hint = if message.contains("expected a sequence") {
        format!("; write each item as an array of tables: [[{name}]]")
    } else {
        String::new()
    };
    format!("section {header}: {message}{hint}")
}

/// The key of a `key = value` line.
fn key_on_line(line: &str) -> Option<&str> {
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    let bare = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    (!key.is_empty() && key.chars().all(bare)).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `text` as `router.toml`.
    fn parse(text: &str) -> Result<RouterConfig, ConfigError> {
        RouterConfig::parse(Path::new("router.toml"), text)
    }

    /// The error `text` must produce.
    fn err(text: &str) -> ConfigError {
        match parse(text) {
            Ok(c) => panic!("expected an error, parsed {c:#?}"),
            Err(e) => e,
        }
    }

    /// Asserts the error's line and that its message holds every word.
    fn assert_err(text: &str, line: usize, words: &[&str]) -> ConfigError {
        let e = err(text);
        assert_eq!(e.line, Some(line), "wrong line in: {e}");
        for w in words {
            assert!(e.message.contains(w), "{w:?} missing from: {e}");
        }
        e
    }

    /// Two ports: net_af_packet0 10.0.1.1/24 (line 1), net_af_packet1 10.0.2.1/24 (line 5).
    const PORTS: &str = "\
[[port]]
device = \"net_af_packet0\"
address = \"10.0.1.1/24\"

[[port]]
device = \"net_af_packet1\"
address = \"10.0.2.1/24\"
";

    /// `PORTS` followed by `rest` (which thus starts at line 8).
    fn with_ports(rest: &str) -> String {
        format!("{PORTS}{rest}")
    }

    const GOOD: &str = r#"# fastpath test router
[[port]]
device = "net_af_packet0"
address = "10.0.1.1/24"
mac = "02:00:00:00:01:01"

[[port]]
device = 1                       # a DPDK port id
address = "10.0.2.1/24"
rx_queues = 2
mtu = 2000

[[port]]
device = "0000:01:00.0"
address = "192.168.7.9/30"

[[route]]
prefix = "0.0.0.0/0"
via = "10.0.1.2"

[[route]]
prefix = "192.0.2.0/24"
device = 1

[[route]]
prefix = "10.0.2.0/24"
device = 1

[[route]]
prefix = "172.16.0.0/12"
via = "192.168.7.10"

[[neighbour]]
address = "10.0.1.2"
mac = "02:00:00:00:01:02"

[[neighbor]]
address = "10.0.2.7"
mac = "0A-BB-CC-DD-EE-FF"

[[lcore]]
id = 1
queues = ["net_af_packet0:0", "1:0"]

[[lcore]]
id = 2
queues = [
  "1:1",
  "0000:01:00.0:0",
]
"#;

    #[test]
    fn good_config_parses_to_expected_structs() {
        let c = parse(GOOD).expect("good config");
        let want = RouterConfig {
            path: PathBuf::from("router.toml"),
            ports: vec![
                PortSpec {
                    device: DeviceRef::Name("net_af_packet0".into()),
                    address: Ipv4Addr::new(10, 0, 1, 1),
                    prefix_len: 24,
                    mac: Some([2, 0, 0, 0, 1, 1]),
                    rx_queues: 1,
                    mtu: 1500,
                    line: 2,
                },
                PortSpec {
                    device: DeviceRef::Id(1),
                    address: Ipv4Addr::new(10, 0, 2, 1),
                    prefix_len: 24,
                    mac: None,
                    rx_queues: 2,
                    mtu: 2000,
                    line: 7,
                },
                PortSpec {
                    device: DeviceRef::Name("0000:01:00.0".into()),
                    address: Ipv4Addr::new(192, 168, 7, 9),
                    prefix_len: 30,
                    mac: None,
                    rx_queues: 1,
                    mtu: 1500,
                    line: 13,
                },
            ],
            routes: vec![
                RouteSpec {
                    prefix: Ipv4Addr::UNSPECIFIED,
                    prefix_len: 0,
                    next_hop: NextHopSpec::Via {
                        gateway: Ipv4Addr::new(10, 0, 1, 2),
                        port: 0,
                    },
                    multipath: vec![],
                    line: 17,
                },
                RouteSpec {
                    prefix: Ipv4Addr::new(192, 0, 2, 0),
                    prefix_len: 24,
                    next_hop: NextHopSpec::Connected { port: 1 },
                    multipath: vec![],
                    line: 21,
                },
                RouteSpec {
                    prefix: Ipv4Addr::new(10, 0, 2, 0),
                    prefix_len: 24,
                    next_hop: NextHopSpec::Connected { port: 1 },
                    multipath: vec![],
                    line: 25,
                },
                RouteSpec {
                    prefix: Ipv4Addr::new(172, 16, 0, 0),
                    prefix_len: 12,
                    next_hop: NextHopSpec::Via {
                        gateway: Ipv4Addr::new(192, 168, 7, 10),
                        port: 2,
                    },
                    multipath: vec![],
                    line: 29,
                },
            ],
            neighbours: vec![
                NeighbourSpec {
                    address: Ipv4Addr::new(10, 0, 1, 2),
                    mac: [2, 0, 0, 0, 1, 2],
                    port: 0,
                    line: 33,
                },
                NeighbourSpec {
                    address: Ipv4Addr::new(10, 0, 2, 7),
                    mac: [0x0a, 0xbb, 0xcc, 0xdd, 0xee, 0xff],
                    port: 1,
                    line: 37,
                },
            ],
            lcores: vec![
                LcoreSpec {
                    id: 1,
                    queues: vec![(0, 0), (1, 0)],
                    line: 41,
                },
                LcoreSpec {
                    id: 2,
                    queues: vec![(1, 1), (2, 0)],
                    line: 45,
                },
            ],
            hooks: Vec::new(),
            text: String::new(),
        };
        assert_eq!(c, want);
        assert!(c.hooks.is_empty());
    }

    #[test]
    fn minimal_config_uses_defaults() {
        let c = parse(PORTS).expect("ports only");
        assert_eq!(c.ports.len(), 2);
        assert!(c
            .ports
            .iter()
            .all(|p| p.rx_queues == 1 && p.mtu == 1500 && p.mac.is_none()));
        assert!(c.routes.is_empty() && c.neighbours.is_empty() && c.lcores.is_empty());
        assert_eq!(c.ports[1].line, 5);
    }

    #[test]
    fn port_helpers() {
        let c = parse(GOOD).expect("good config");
        let p = &c.ports[0];
        assert_eq!(p.network(), u32::from(Ipv4Addr::new(10, 0, 1, 0)));
        assert_eq!(p.broadcast(), Ipv4Addr::new(10, 0, 1, 255));
        assert!(p.contains(Ipv4Addr::new(10, 0, 1, 200)));
        assert!(!p.contains(Ipv4Addr::new(10, 0, 2, 1)));
        assert_eq!(c.ports[2].broadcast(), Ipv4Addr::new(192, 168, 7, 11));
        assert_eq!(c.port_index(&DeviceRef::Id(1)), Some(1));
        assert_eq!(
            c.port_index(&DeviceRef::Name("0000:01:00.0".into())),
            Some(2)
        );
        assert_eq!(c.port_index(&DeviceRef::Name("1".into())), None);
        assert_eq!(DeviceRef::Id(7).to_string(), "7");
        assert_eq!(DeviceRef::Name("net_tap0".into()).to_string(), "net_tap0");
        let host = PortSpec {
            prefix_len: 32,
            ..p.clone()
        };
        assert_eq!(host.broadcast(), p.address);
        assert!(host.contains(p.address));
    }

    #[test]
    fn error_display_and_error_at() {
        let c = parse(GOOD).expect("good config");
        let e = c.error_at(8, "DPDK has no port 1");
        assert_eq!(e.to_string(), "router.toml:8: DPDK has no port 1");
        let e = ConfigError {
            path: "r.toml".into(),
            line: None,
            message: "boom".into(),
        };
        assert_eq!(e.to_string(), "r.toml: boom");
    }

    #[test]
    fn load_reads_file_and_reports_missing_file() {
        let mut f = tempfile::NamedTempFile::new().expect("temp file");
        std::io::Write::write_all(&mut f, PORTS.as_bytes()).expect("write");
        let c = RouterConfig::load(f.path()).expect("load");
        assert_eq!(c.path, f.path());
        assert_eq!(c.ports.len(), 2);

        let missing = Path::new("/nonexistent/router.toml");
        let e = RouterConfig::load(missing).expect_err("missing file");
        assert_eq!(e.line, None);
        assert!(
            e.to_string()
                .starts_with("/nonexistent/router.toml: cannot read"),
            "{e}"
        );
    }

    #[test]
    fn mac_parse_and_format() {
        assert_eq!(parse_mac("02:00:00:00:01:0a"), Some([2, 0, 0, 0, 1, 10]));
        assert_eq!(
            parse_mac("AA-bb-CC-dd-EE-ff"),
            Some([0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff])
        );
        for bad in [
            "",
            "02:00:00:00:01",
            "02:00:00:00:01:02:03",
            "2:0:0:0:1:2",
            "02:00-00:00:01:02",
            "0g:00:00:00:01:02",
            "+2:00:00:00:01:02",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
        assert_eq!(
            format_mac(&[0xaa, 0xbb, 0xcc, 0, 1, 0x0f]),
            "aa:bb:cc:00:01:0f"
        );
    }

    // ----- TOML level errors ----------------------------------------------

    #[test]
    fn toml_syntax_error_has_line() {
        let e = assert_err(
            &with_ports("[[route]]\nprefix = \"0.0.0.0/0\nvia = \"10.0.1.2\"\n"),
            9,
            &[],
        );
        assert!(!e.message.contains('\n'), "{e}");
    }

    #[test]
    fn unknown_field_names_section_and_field() {
        assert_err(
            &with_ports("\n[[port]]\ndevice = \"x\"\naddress = \"10.0.3.1/24\"\nspeed = 10\n"),
            12,
            &["[[port]]", "unknown field `speed`"],
        );
    }

    #[test]
    fn unknown_section_is_an_error() {
        assert_err(
            &with_ports("\n[[ports]]\ndevice = \"x\"\n"),
            9,
            &["section [[ports]]", "unknown field `ports`", "`port`"],
        );
    }

    #[test]
    fn missing_field_is_an_error() {
        assert_err(
            &with_ports("\n[[route]]\nvia = \"10.0.1.2\"\n"),
            9,
            &["[[route]]", "missing field `prefix`"],
        );
    }

    #[test]
    fn wrong_type_names_field() {
        assert_err(
            "[[port]]\ndevice = \"p\"\naddress = \"10.0.1.1/24\"\nmtu = \"big\"\n",
            4,
            &["[[port]] field `mtu`", "expected an integer"],
        );
        assert_err(
            "[[port]]\ndevice = true\naddress = \"10.0.1.1/24\"\n",
            2,
            &["field `device`", "DPDK port id"],
        );
    }

    #[test]
    fn single_bracket_table_hints_double() {
        assert_err(
            "[port]\ndevice = \"p\"\naddress = \"10.0.1.1/24\"\n",
            1,
            &[
                "section [port]",
                "expected a sequence",
                "array of tables: [[port]]",
            ],
        );
    }

    // ----- 1. ports present ---------------------------------------------------

    #[test]
    fn no_port_is_an_error() {
        let e = err("# nothing\n[[route]]\nprefix = \"0.0.0.0/0\"\nvia = \"10.0.1.2\"\n");
        assert_eq!(e.line, None);
        assert!(
            e.message.contains("no [[port]]") && e.message.contains("at least one"),
            "{e}"
        );
        let e = err("");
        assert!(e.message.contains("no [[port]]"), "{e}");
    }

    // ----- 2. port address ----------------------------------------------------

    fn port_with_address(a: &str) -> String {
        format!("[[port]]\ndevice = \"p\"\naddress = \"{a}\"\n")
    }

    #[test]
    fn port_address_without_prefix() {
        let e = assert_err(
            &port_with_address("10.0.1.1"),
            3,
            &[
                "[[port]] field `address`",
                "\"10.0.1.1\" has no prefix length",
                "e.g. \"10.0.1.1/24\"",
            ],
        );
        assert_eq!(
            e.to_string(),
            "router.toml:3: [[port]] field `address`: \"10.0.1.1\" has no prefix length; \
             expected an IPv4 address with a prefix, e.g. \"10.0.1.1/24\""
        );
    }

    #[test]
    fn port_address_bad_values() {
        let cases: &[(&str, &[&str])] = &[
            ("10.0.1/24", &["not an IPv4 address"]),
            ("10.0.1.1/0", &["prefix length 0", "1 to 32"]),
            ("10.0.1.1/33", &["prefix length 33", "out of range"]),
            ("10.0.1.1/x", &["not a number"]),
            ("0.0.0.0/8", &["0.0.0.0", "unicast"]),
            ("224.0.0.5/24", &["multicast"]),
            ("127.0.0.2/8", &["loopback", "RFC 1812"]),
            ("240.1.2.3/24", &["reserved 240.0.0.0/4"]),
            (
                "10.0.1.0/24",
                &["network address of 10.0.1.0/24", "10.0.1.1/24"],
            ),
            ("10.0.1.255/24", &["broadcast address of 10.0.1.0/24"]),
            ("10.0.1.3/30", &["broadcast address of 10.0.1.0/30"]),
        ];
        for (a, words) in cases {
            let mut w = vec!["[[port]] field `address`"];
            w.extend_from_slice(words);
            assert_err(&port_with_address(a), 3, &w);
        }
        // /31 and /32 have no network or broadcast address
        assert!(parse(&port_with_address("10.0.1.0/31")).is_ok());
        assert!(parse(&port_with_address("10.0.1.7/32")).is_ok());
    }

    // ----- 3. mac ---------------------------------------------------------------

    #[test]
    fn port_mac_checks() {
        let port = |m: &str| {
            format!("[[port]]\ndevice = \"p\"\naddress = \"10.0.1.1/24\"\nmac = \"{m}\"\n")
        };
        assert_err(
            &port("02:00:00:00:01"),
            4,
            &["[[port]] field `mac`", "not a MAC address"],
        );
        assert_err(
            &port("01:00:5e:00:00:01"),
            4,
            &["[[port]] field `mac`", "multicast"],
        );
        assert_err(
            &port("00:00:00:00:00:00"),
            4,
            &["[[port]] field `mac`", "all-zero"],
        );
        assert!(parse(&port("02:00:00:00:01:01")).is_ok());
    }

    // ----- 4. port conflicts ------------------------------------------------------

    #[test]
    fn duplicate_port_device() {
        assert_err(
            &with_ports("\n[[port]]\ndevice = \"net_af_packet0\"\naddress = \"10.0.3.1/24\"\n"),
            10,
            &[
                "[[port]] field `device`",
                "net_af_packet0",
                "already configured",
                "line 1",
                "line 9",
            ],
        );
    }

    #[test]
    fn duplicate_port_id() {
        assert_err(
            "[[port]]\ndevice = 3\naddress = \"10.0.1.1/24\"\n[[port]]\ndevice = 3\naddress = \"10.0.2.1/24\"\n",
            5,
            &["port id 3 is already configured", "line 1", "line 4"],
        );
    }

    #[test]
    fn overlapping_port_subnets() {
        assert_err(
            &with_ports("\n[[port]]\ndevice = \"net_af_packet2\"\naddress = \"10.0.0.1/16\"\n"),
            11,
            &[
                "[[port]] field `address`",
                "overlapping port addresses",
                "net_af_packet2 (line 9)",
                "net_af_packet0 (line 1)",
            ],
        );
        // integer ids read as "port id N" in prose
        assert_err(
            "[[port]]\ndevice = 0\naddress = \"10.0.1.1/24\"\n[[port]]\ndevice = 1\naddress = \"10.0.1.9/32\"\n",
            6,
            &["overlapping port addresses", "10.0.1.9/32 on port id 1 (line 4)", "10.0.1.1/24 on port id 0 (line 1)"],
        );
    }

    #[test]
    fn duplicate_device_reported_before_overlap() {
        assert_err(
            &with_ports("\n[[port]]\ndevice = \"net_af_packet1\"\naddress = \"10.0.1.9/24\"\n"),
            10,
            &[
                "device \"net_af_packet1\" is already configured",
                "line 5",
                "line 9",
            ],
        );
    }

    // ----- 5. routes ----------------------------------------------------------------

    fn route(body: &str) -> String {
        with_ports(&format!("\n[[route]]\n{body}"))
    }

    #[test]
    fn route_prefix_invalid() {
        assert_err(
            &route("prefix = \"10.0.0.0\"\nvia = \"10.0.1.2\"\n"),
            10,
            &["[[route]] field `prefix`", "no prefix length"],
        );
        assert_err(
            &route("prefix = \"10.0.0.0/40\"\nvia = \"10.0.1.2\"\n"),
            10,
            &["[[route]] field `prefix`", "out of range"],
        );
        assert_err(
            &route("prefix = \"10.0.0.256/8\"\nvia = \"10.0.1.2\"\n"),
            10,
            &["not an IPv4 address"],
        );
    }

    #[test]
    fn route_prefix_host_bits() {
        assert_err(
            &route("prefix = \"10.0.1.7/24\"\nvia = \"10.0.2.2\"\n"),
            10,
            &[
                "[[route]] field `prefix`",
                "host bits",
                "did you mean \"10.0.1.0/24\"?",
            ],
        );
    }

    #[test]
    fn route_needs_exactly_one_of_via_device() {
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\nvia = \"10.0.1.2\"\ndevice = \"net_af_packet0\"\n"),
            9,
            &[
                "[[route]] 10.9.0.0/16",
                "both `via` and `device`",
                "exactly one",
            ],
        );
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\n"),
            9,
            &[
                "[[route]] 10.9.0.0/16",
                "neither `via` nor `device`",
                "exactly one",
            ],
        );
    }

    #[test]
    fn route_via_not_connected() {
        let e = assert_err(
            &route("prefix = \"10.9.0.0/16\"\nvia = \"10.9.9.9\"\n"),
            11,
            &[
                "[[route]] field `via`",
                "next hop 10.9.9.9 is not in any connected subnet (10.0.1.0/24 on net_af_packet0, 10.0.2.0/24 on net_af_packet1); a next hop must be directly reachable",
            ],
        );
        assert!(e.to_string().starts_with("router.toml:11: "), "{e}");
    }

    #[test]
    fn route_via_own_address_or_broadcast() {
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\nvia = \"10.0.2.1\"\n"),
            11,
            &["[[route]] field `via`", "our own address", "net_af_packet1"],
        );
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\nvia = \"10.0.2.255\"\n"),
            11,
            &["[[route]] field `via`", "broadcast address"],
        );
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\nvia = \"10.0.2.0/24\"\n"),
            11,
            &["[[route]] field `via`", "plain IPv4 address"],
        );
    }

    #[test]
    fn routes_into_reserved_space_or_onto_our_addresses() {
        for (prefix, words) in [
            ("224.1.0.0/16", "multicast 224.0.0.0/4"),
            ("127.1.0.0/16", "loopback 127.0.0.0/8"),
            ("0.1.0.0/16", "0.0.0.0/8"),
            ("240.0.0.0/8", "reserved 240.0.0.0/4"),
        ] {
            assert_err(
                &route(&format!("prefix = \"{prefix}\"\nvia = \"10.0.1.2\"\n")),
                9,
                &[prefix, words, "never forwarded"],
            );
        }
        assert_err(
            &route("prefix = \"10.0.2.1/32\"\nvia = \"10.0.1.2\"\n"),
            9,
            &["our own address of net_af_packet1 (line 5)"],
        );
        assert_err(
            &route("prefix = \"10.0.2.255/32\"\nvia = \"10.0.1.2\"\n"),
            9,
            &["the subnet broadcast of net_af_packet1"],
        );
        // A default route is fine: it covers those ranges, the router still
        // never forwards into them.
        assert!(RouterConfig::parse(
            Path::new("router.toml"),
            &route("prefix = \"0.0.0.0/0\"\nvia = \"10.0.1.2\"\n"),
        )
        .is_ok());
    }

    #[test]
    fn on_link_route_inside_another_ports_subnet() {
        assert_err(
            &route("prefix = \"10.0.1.128/25\"\ndevice = \"net_af_packet1\"\n"),
            9,
            &[
                "10.0.1.128/25",
                "inside the connected subnet 10.0.1.0/24 of net_af_packet0 (line 1)",
                "device = \"net_af_packet0\"",
            ],
        );
        // The same route on its own port's side is fine.
        assert!(RouterConfig::parse(
            Path::new("router.toml"),
            &route("prefix = \"10.0.1.128/25\"\ndevice = \"net_af_packet0\"\n"),
        )
        .is_ok());
    }

    #[test]
    fn route_device_unknown() {
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\ndevice = \"net_af_packet7\"\n"),
            11,
            &[
                "[[route]] field `device`",
                "\"net_af_packet7\" is not a configured port",
                "\"net_af_packet0\", \"net_af_packet1\"",
            ],
        );
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\ndevice = 0\n"),
            11,
            &[
                "[[route]] field `device`",
                "port id 0 is not a configured port",
            ],
        );
    }

    #[test]
    fn duplicate_route_prefix() {
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\nvia = \"10.0.1.2\"\n\n[[route]]\nprefix = \"10.9.0.0/16\"\ndevice = \"net_af_packet1\"\n"),
            14,
            &["[[route]] field `prefix`", "10.9.0.0/16 is already routed", "line 9", "line 13"],
        );
        // same prefix, other length: fine
        assert!(parse(&route("prefix = \"10.9.0.0/16\"\nvia = \"10.0.1.2\"\n\n[[route]]\nprefix = \"10.9.0.0/24\"\nvia = \"10.0.1.2\"\n")).is_ok());
    }

    #[test]
    fn route_for_connected_subnet() {
        assert_err(
            &route("prefix = \"10.0.1.0/24\"\nvia = \"10.0.2.2\"\n"),
            9,
            &[
                "[[route]] 10.0.1.0/24",
                "connected subnet of net_af_packet0 (line 1)",
                "device = \"net_af_packet0\"",
            ],
        );
        assert_err(
            &route("prefix = \"10.0.1.0/24\"\ndevice = \"net_af_packet1\"\n"),
            9,
            &["connected subnet of net_af_packet0"],
        );
        let c = parse(&route(
            "prefix = \"10.0.1.0/24\"\ndevice = \"net_af_packet0\"\n",
        ))
        .expect("own subnet");
        assert_eq!(c.routes[0].next_hop, NextHopSpec::Connected { port: 0 });
    }

    // ----- 6. neighbours ------------------------------------------------------------

    fn neighbour(address: &str, mac: &str) -> String {
        with_ports(&format!(
            "\n[[neighbour]]\naddress = \"{address}\"\nmac = \"{mac}\"\n"
        ))
    }

    #[test]
    fn neighbour_address_checks() {
        let mac = "02:00:00:00:09:09";
        assert_err(
            &neighbour("10.7.0.1", mac),
            10,
            &[
                "[[neighbour]] field `address`",
                "not in any connected subnet",
                "10.0.1.0/24 on net_af_packet0",
                "directly reachable",
            ],
        );
        assert_err(
            &neighbour("10.0.1.1", mac),
            10,
            &["[[neighbour]] field `address`", "our own address"],
        );
        assert_err(
            &neighbour("10.0.1.255", mac),
            10,
            &[
                "[[neighbour]] field `address`",
                "broadcast address of 10.0.1.0/24",
            ],
        );
        assert_err(
            &neighbour("10.0.1", mac),
            10,
            &["[[neighbour]] field `address`", "not an IPv4 address"],
        );
        let c = parse(&neighbour("10.0.2.9", mac)).expect("good neighbour");
        assert_eq!(c.neighbours[0].port, 1);
        assert_eq!(c.neighbours[0].line, 9);
    }

    #[test]
    fn neighbour_mac_checks() {
        assert_err(
            &neighbour("10.0.1.2", "zz:00:00:00:00:01"),
            11,
            &["[[neighbour]] field `mac`", "not a MAC address"],
        );
        assert_err(
            &neighbour("10.0.1.2", "ff:ff:ff:ff:ff:ff"),
            11,
            &["[[neighbour]] field `mac`", "multicast"],
        );
        assert_err(
            &neighbour("10.0.1.2", "00-00-00-00-00-00"),
            11,
            &["[[neighbour]] field `mac`", "all-zero"],
        );
    }

    #[test]
    fn duplicate_neighbour_across_spellings() {
        let text = with_ports(
            "\n[[neighbour]]\naddress = \"10.0.1.2\"\nmac = \"02:00:00:00:00:01\"\n\
             \n[[neighbor]]\naddress = \"10.0.1.2\"\nmac = \"02:00:00:00:00:02\"\n",
        );
        assert_err(
            &text,
            14,
            &[
                "[[neighbour]] field `address`",
                "10.0.1.2 is already defined",
                "line 9",
                "line 13",
            ],
        );
    }

    #[test]
    fn neighbour_spellings_keep_file_order() {
        let text = with_ports(
            "\n[[neighbor]]\naddress = \"10.0.1.2\"\nmac = \"02:00:00:00:00:01\"\n\
             \n[[neighbour]]\naddress = \"10.0.2.2\"\nmac = \"02:00:00:00:00:02\"\n\
             \n[[neighbor]]\naddress = \"10.0.1.3\"\nmac = \"02:00:00:00:00:03\"\n",
        );
        let c = parse(&text).expect("mixed spellings");
        let lines: Vec<usize> = c.neighbours.iter().map(|n| n.line).collect();
        assert_eq!(lines, [9, 13, 17]);
    }

    // ----- 7. lcores ------------------------------------------------------------------

    /// Ports with 2 queues on net_af_packet0 (line 1) and 1 on port id 5 (line 6),
    /// then `rest` from line 10.
    fn lcores(rest: &str) -> String {
        format!(
            "[[port]]\ndevice = \"net_af_packet0\"\naddress = \"10.0.1.1/24\"\nrx_queues = 2\n\n\
             [[port]]\ndevice = 5\naddress = \"10.0.2.1/24\"\n\n{rest}"
        )
    }

    #[test]
    fn lcore_queue_entries_must_parse() {
        let one = |q: &str| lcores(&format!("[[lcore]]\nid = 1\nqueues = [\"{q}\"]\n"));
        assert_err(
            &one("net_af_packet0"),
            12,
            &[
                "[[lcore]] field `queues`",
                "no queue number",
                "<device>:<rx queue>",
            ],
        );
        assert_err(
            &one("net_af_packet9:0"),
            12,
            &[
                "[[lcore]] field `queues`",
                "\"net_af_packet9\" is not a configured port",
                "net_af_packet0, 5",
            ],
        );
        assert_err(
            &one("net_af_packet0:x"),
            12,
            &["[[lcore]] field `queues`", "not a queue number"],
        );
        assert_err(
            &one("net_af_packet0:2"),
            12,
            &[
                "[[lcore]] field `queues`",
                "rx queue 2 does not exist",
                "rx_queues = 2",
            ],
        );
        assert_err(
            &one("5:1"),
            12,
            &["rx queue 1 does not exist", "port id 5 has rx_queues = 1"],
        );
    }

    #[test]
    fn lcore_queue_entry_line_in_multiline_array() {
        assert_err(
            &lcores("[[lcore]]\nid = 1\nqueues = [\n  \"net_af_packet0:0\",\n  \"bogus:0\",\n]\n"),
            14,
            &["\"bogus\" is not a configured port"],
        );
    }

    #[test]
    fn lcore_queue_polled_twice() {
        assert_err(
            &lcores(
                "[[lcore]]\nid = 1\nqueues = [\"net_af_packet0:0\", \"5:0\"]\n\n\
                 [[lcore]]\nid = 2\nqueues = [\"net_af_packet0:1\", \"5:0\"]\n",
            ),
            16,
            &[
                "[[lcore]] field `queues`",
                "rx queue 5:0 is already polled by lcore 1 (line 12)",
            ],
        );
        assert_err(
            &lcores("[[lcore]]\nid = 1\nqueues = [\"5:0\", \"net_af_packet0:0\", \"5:0\", \"net_af_packet0:1\"]\n"),
            12,
            &["rx queue 5:0 is already polled by this lcore"],
        );
    }

    #[test]
    fn lcore_must_cover_every_queue() {
        let e = assert_err(
            &lcores("[[lcore]]\nid = 1\nqueues = [\"net_af_packet0:0\", \"5:0\"]\n"),
            10,
            &[
                "net_af_packet0:1",
                "not polled by any lcore",
                "add \"net_af_packet0:1\"",
                "remove every [[lcore]]",
            ],
        );
        assert!(e.message.starts_with("[[lcore]]"), "{e}");
        let c = parse(&lcores(
            "[[lcore]]\nid = 3\nqueues = [\"net_af_packet0:1\", \"5:0\", \"net_af_packet0:0\"]\n",
        ))
        .expect("all queues");
        assert_eq!(c.lcores[0].queues, [(0, 1), (1, 0), (0, 0)]);
    }

    #[test]
    fn duplicate_lcore_id() {
        assert_err(
            &lcores(
                "[[lcore]]\nid = 1\nqueues = [\"net_af_packet0:0\", \"5:0\"]\n\n\
                 [[lcore]]\nid = 1\nqueues = [\"net_af_packet0:1\"]\n",
            ),
            15,
            &[
                "[[lcore]] field `id`",
                "lcore 1 is already defined",
                "line 10",
                "line 14",
            ],
        );
    }

    #[test]
    fn lcore_id_range_and_empty_queues() {
        let all = "queues = [\"net_af_packet0:0\", \"net_af_packet0:1\", \"5:0\"]\n";
        assert_err(
            &lcores(&format!("[[lcore]]\nid = 1024\n{all}")),
            11,
            &["[[lcore]] field `id`", "1024 is out of range", "0 to 1023"],
        );
        assert_err(
            &lcores(&format!("[[lcore]]\nid = -1\n{all}")),
            11,
            &["[[lcore]] field `id`", "out of range"],
        );
        assert!(parse(&lcores(&format!("[[lcore]]\nid = 1023\n{all}"))).is_ok());
        assert_err(
            &lcores("[[lcore]]\nid = 2\nqueues = []\n"),
            12,
            &["[[lcore]] field `queues`", "polls no queues"],
        );
    }

    // ----- 8. device ----------------------------------------------------------------

    #[test]
    fn device_checks() {
        let port = |d: &str| format!("[[port]]\naddress = \"10.0.1.1/24\"\ndevice = {d}\n");
        assert_err(&port("\"\""), 3, &["[[port]] field `device`", "empty"]);
        assert_err(&port("\" p0\""), 3, &["[[port]] field `device`", "spaces"]);
        assert_err(
            &port("1024"),
            3,
            &[
                "[[port]] field `device`",
                "port id 1024 is out of range",
                "0 to 1023",
            ],
        );
        assert_err(&port("-1"), 3, &["[[port]] field `device`", "out of range"]);
        assert_eq!(
            parse(&port("1023")).expect("id 1023").ports[0].device,
            DeviceRef::Id(1023)
        );
    }

    // ----- ranges -----------------------------------------------------------------------

    #[test]
    fn rx_queues_and_mtu_ranges() {
        let port =
            |extra: &str| format!("[[port]]\ndevice = \"p\"\naddress = \"10.0.1.1/24\"\n{extra}\n");
        assert_err(
            &port("rx_queues = 0"),
            4,
            &["[[port]] field `rx_queues`", "0 is out of range", "1 to 64"],
        );
        assert_err(
            &port("rx_queues = 65"),
            4,
            &["[[port]] field `rx_queues`", "1 to 64"],
        );
        assert_err(
            &port("mtu = 67"),
            4,
            &["[[port]] field `mtu`", "68 to 2034"],
        );
        assert_err(
            &port("mtu = 9001"),
            4,
            &["[[port]] field `mtu`", "68 to 2034"],
        );
        assert_err(&port("mtu = 99999999999999999999"), 4, &[]);
        let c = parse(&port("rx_queues = 64\nmtu = 68")).expect("bounds");
        assert_eq!((c.ports[0].rx_queues, c.ports[0].mtu), (64, 68));
    }
}
