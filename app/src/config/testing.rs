//! What the config's tests share: a parser for `router.toml` text, error
//! assertions, and the configs they start from.

use super::position::ConfigError;
use super::spec::RouterConfig;
use std::path::Path;

/// Parses `text` as `router.toml`.
pub(crate) fn parse(text: &str) -> Result<RouterConfig, ConfigError> {
    RouterConfig::parse(Path::new("router.toml"), text)
}

/// The error `text` must produce.
pub(crate) fn err(text: &str) -> ConfigError {
    match parse(text) {
        Ok(c) => panic!("expected an error, parsed {c:#?}"),
        Err(e) => e,
    }
}

/// Asserts the error's line and that its message holds every word.
pub(crate) fn assert_err(text: &str, line: usize, words: &[&str]) -> ConfigError {
    let e = err(text);
    assert_eq!(e.line, Some(line), "wrong line in: {e}");
    for w in words {
        assert!(e.message.contains(w), "{w:?} missing from: {e}");
    }
    e
}

/// Two ports: net_af_packet0 10.0.1.1/24 (line 1), net_af_packet1 10.0.2.1/24 (line 5).
pub(crate) const PORTS: &str = "\
[[port]]
device = \"net_af_packet0\"
address = \"10.0.1.1/24\"

[[port]]
device = \"net_af_packet1\"
address = \"10.0.2.1/24\"
";

/// `PORTS` followed by `rest` (which thus starts at line 8).
pub(crate) fn with_ports(rest: &str) -> String {
    format!("{PORTS}{rest}")
}

pub(crate) const GOOD: &str = r#"# fastpath test router
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

/// Two dual-stack ports: net_af_packet0 10.0.1.1/24 and 2001:db8:1::1/64
/// (line 1), net_af_packet1 10.0.2.1/24, 2001:db8:2::1/64 and link-local
/// fe80::1 (line 6). Ends at line 11.
pub(crate) const PORTS6: &str = "\
[[port]]
device = \"net_af_packet0\"
address = \"10.0.1.1/24\"
ipv6 = [\"2001:db8:1::1/64\"]

[[port]]
device = \"net_af_packet1\"
address = \"10.0.2.1/24\"
ipv6 = [\"2001:db8:2::1/64\"]
link_local = \"fe80::1\"
";

/// `PORTS6` followed by one `[[route]]` or `[[neighbour]]` of `body` (its
/// header at line 13, its first field at line 14).
pub(crate) fn with_ports6(section: &str, body: &str) -> String {
    format!("{PORTS6}\n# one {section}\n[[{section}]]\n{body}")
}
