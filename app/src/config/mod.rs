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
//! ipv6 = ["2001:db8:1::1/64"]      # optional: IPv6 addresses and their subnets
//! link_local = "fe80::1"           # optional; default: from the MAC (modified EUI-64)
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
//! [[route]]
//! prefix = "::/0"                  # IPv6: a next hop of the same family;
//! via = "fe80::1"                  # a link-local one names its port
//! device = "net_af_packet0"
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
//! Parsing is two steps: serde + `toml` into the private `Raw*` structs of
//! `schema` that keep the byte span of every item and field
//! ([`toml::Spanned`]), then `validate` into the public `*Spec` structs of
//! `spec`, which hold checked values and line numbers. `position` turns a
//! span or a TOML error into the file, line, section and field of the
//! message; `fields` parses single values (addresses, MACs, prefixes),
//! `fields6` the IPv6 ones; the IPv6 items are in `spec6`, beside the IPv4
//! ones, and checked by `validate/*6.rs`;
//! `hooks` reads the `[[hook]]` sections; `changes` checks a route or
//! neighbour given at run time by the same rules.

mod changes;
mod device;
mod fields;
mod fields6;
mod hooks;
mod position;
mod schema;
mod spec;
mod spec6;
#[cfg(test)]
pub(crate) mod testing;
mod validate;

pub use changes::RuntimeItem;
pub(crate) use device::label;
pub use device::DeviceRef;
pub use fields::{format_mac, parse_mac, route_prefix};
pub(crate) use fields6::{is_ipv6_text, route_prefix6};
pub use hooks::HookSpec;
pub use position::ConfigError;
pub use schema::{
    DEFAULT_MTU, DEFAULT_RX_QUEUES, MAX_LCORE_ID, MAX_MTU, MAX_NEXT_HOPS, MAX_PORT_ID,
    MAX_RX_QUEUES, MIN_MTU,
};
pub use spec::{LcoreSpec, NeighbourSpec, NextHopSpec, PortSpec, RouteSpec, RouterConfig};
pub use spec6::{Ipv6Interface, LinkLocal, Neighbour6Spec, NextHop6Spec, Route6Spec};

use position::Source;
use schema::RawConfig;
use std::path::Path;

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
        let src = Source { path, text };
        let raw: RawConfig = toml::from_str(text).map_err(|e| src.toml_error(&e))?;
        src.validate(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::testing::PORTS;
    use super::*;

    #[test]
    fn example_configs_parse() {
        for (name, text) in [
            (
                "demo-router.toml",
                include_str!("../../../examples/demo-router.toml"),
            ),
            (
                "two-10g-ports.toml",
                include_str!("../../../examples/two-10g-ports.toml"),
            ),
            (
                "dual-stack.toml",
                include_str!("../../../examples/dual-stack.toml"),
            ),
        ] {
            let c = RouterConfig::parse(Path::new(name), text).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(c.has_ipv6(), name != "two-10g-ports.toml", "{name}");
        }
        let c = RouterConfig::parse(
            Path::new("dual-stack.toml"),
            include_str!("../../../examples/dual-stack.toml"),
        )
        .expect("dual stack");
        assert_eq!(
            (c.routes.len(), c.routes6.len(), c.neighbours6.len()),
            (1, 3, 2)
        );
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
}
