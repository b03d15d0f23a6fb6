//! `[[port]]`: device, address, MAC, queues and MTU of each port, and no
//! two ports on one device or in overlapping subnets.

use crate::config::device::{describe_device, label};
use crate::config::fields::{port_address, unicast_mac};
use crate::config::position::{ConfigError, Source};
use crate::config::schema::{
    RawPort, DEFAULT_MTU, DEFAULT_RX_QUEUES, MAX_MTU, MAX_RX_QUEUES, MIN_MTU,
};
use crate::config::spec::{prefix_mask, PortSpec};
use toml::Spanned;

impl Source<'_> {
    /// Checks every `[[port]]`, then that no two share a device or a subnet.
    pub(crate) fn ports(&self, raw: &[Spanned<RawPort>]) -> Result<Vec<PortSpec>, ConfigError> {
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
        self.check_port_conflicts6(&ports, raw)?;
        Ok(ports)
    }

    pub(crate) fn port(&self, raw: &Spanned<RawPort>) -> Result<PortSpec, ConfigError> {
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
        let (ipv6, link_local) = self.port_ipv6(r)?;
        Ok(PortSpec {
            device,
            address,
            prefix_len,
            mac,
            rx_queues,
            mtu,
            ipv6,
            link_local,
            // Named by `[kernel]`, which is read after the ports.
            kernel_interface: None,
            line: self.line_of(&raw.span()),
        })
    }

    /// No two ports may name the same device or have overlapping subnets.
    pub(crate) fn check_port_conflicts(
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
}

#[cfg(test)]
mod tests {
    use crate::config::testing::{assert_err, err, parse, with_ports};

    // ----- ports present ---------------------------------------------------

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

    // ----- port address ----------------------------------------------------

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

    // ----- mac ---------------------------------------------------------------

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

    // ----- port conflicts ------------------------------------------------------

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
