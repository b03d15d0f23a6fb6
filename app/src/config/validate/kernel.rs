//! `[kernel]` and each port's `kernel_interface`: whether the ports have
//! kernel interfaces, their names, and the routing peers.

use crate::config::position::{ConfigError, Source};
use crate::config::schema::{RawKernel, RawPort};
use crate::config::spec::{KernelSpec, PortSpec};
use crate::kernel::MAX_NAME_LEN;
use std::net::IpAddr;
use toml::Spanned;

impl Source<'_> {
    /// `[kernel]`, and the name of each port's kernel interface when it
    /// has one (set in `ports`).
    pub(crate) fn kernel(
        &self,
        raw: Option<&Spanned<RawKernel>>,
        ports: &mut [PortSpec],
        raw_ports: &[Spanned<RawPort>],
    ) -> Result<KernelSpec, ConfigError> {
        let interfaces = raw
            .and_then(|k| k.get_ref().interfaces.as_ref())
            .is_some_and(|i| *i.get_ref());
        for (n, (port, r)) in ports.iter_mut().zip(raw_ports).enumerate() {
            let Some(name) = &r.get_ref().kernel_interface else {
                port.kernel_interface = interfaces.then(|| format!("fp{n}"));
                continue;
            };
            if !interfaces {
                return Err(self.field_error(
                    "port",
                    "kernel_interface",
                    name,
                    "the ports have no kernel interfaces; add `[kernel]` with \
                     `interfaces = true`, or remove this field",
                ));
            }
            check_name(name.get_ref())
                .map_err(|m| self.field_error("port", "kernel_interface", name, m))?;
            port.kernel_interface = Some(name.get_ref().clone());
        }
        for (j, r) in raw_ports.iter().enumerate() {
            let b = &ports[j];
            if let Some(a) = ports[..j]
                .iter()
                .find(|a| a.kernel_interface.is_some() && a.kernel_interface == b.kernel_interface)
            {
                let name = b.kernel_interface.as_deref().unwrap_or_default();
                let message = format!(
                    "kernel interface {name:?} is already the [[port]]'s at line {}; \
                     expected a name of its own for each port",
                    a.line
                );
                return Err(match &r.get_ref().kernel_interface {
                    Some(v) => self.field_error("port", "kernel_interface", v, message),
                    None => self.error(b.line, format!("[[port]]: {message}")),
                });
            }
        }
        let peers = match raw.and_then(|k| k.get_ref().peers.as_ref()) {
            Some(list) => list
                .get_ref()
                .iter()
                .map(|p| self.peer(p))
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        let ttl_security = match raw.and_then(|k| k.get_ref().ttl_security.as_ref()) {
            Some(t) if *t.get_ref() && peers.is_empty() => {
                return Err(self.error(
                    self.line_of(&t.span()),
                    "[kernel] field `ttl_security`: there are no `peers` for it to guard; \
                     expected `peers = [...]` beside it, or remove it"
                        .to_string(),
                ))
            }
            Some(t) => *t.get_ref(),
            None => false,
        };
        Ok(KernelSpec {
            interfaces,
            peers,
            ttl_security,
        })
    }

    /// One of `peers`: a unicast address of either family.
    fn peer(&self, raw: &Spanned<String>) -> Result<IpAddr, ConfigError> {
        let s = raw.get_ref();
        let bad = |why: &str| {
            self.error(
                self.line_of(&raw.span()),
                format!(
                    "[kernel] field `peers`: {s:?} {why}; expected the unicast address of a \
                     routing peer, e.g. \"10.0.2.2\" or \"2001:db8:2::2\""
                ),
            )
        };
        let a: IpAddr = s.parse().map_err(|_| bad("is not an IP address"))?;
        let unicast = match a {
            IpAddr::V4(v) => !(v.is_unspecified() || v.is_broadcast() || v.is_multicast()),
            IpAddr::V6(v) => !(v.is_unspecified() || v.is_multicast()),
        };
        if !unicast {
            return Err(bad("is not a unicast address"));
        }
        Ok(a)
    }
}

/// A kernel interface name as Linux takes it: 1 to 15 bytes, no `/`, `:`
/// or white space, not `.` or `..`.
fn check_name(name: &str) -> Result<(), String> {
    let expected =
        format!("expected 1 to {MAX_NAME_LEN} letters, digits, '-', '_' or '.', e.g. \"fp-wan\"");
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(format!("{name:?} is {} bytes long; {expected}", name.len()));
    }
    if name == "."
        || name == ".."
        || name
            .chars()
            .any(|c| c == '/' || c == ':' || c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "{name:?} is not a valid interface name; {expected}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::testing::{assert_err, parse, PORTS};

    #[test]
    fn interfaces_take_default_names_or_the_ports_own() {
        let c = parse(PORTS).expect("no [kernel]");
        assert!(!c.kernel.interfaces);
        assert!(c.ports.iter().all(|p| p.kernel_interface.is_none()));
        let text = PORTS.replace(
            "address = \"10.0.2.1/24\"",
            "address = \"10.0.2.1/24\"\nkernel_interface = \"fp-wan\"",
        ) + "\n[kernel]\ninterfaces = true\npeers = [\"10.0.2.2\", \"2001:db8::2\"]\n";
        let c = parse(&text).expect("kernel interfaces");
        assert!(c.kernel.interfaces);
        assert_eq!(c.ports[0].kernel_interface.as_deref(), Some("fp0"));
        assert_eq!(c.ports[1].kernel_interface.as_deref(), Some("fp-wan"));
        assert_eq!(
            c.kernel.peers,
            [
                "10.0.2.2".parse::<std::net::IpAddr>().unwrap(),
                "2001:db8::2".parse().unwrap()
            ]
        );
        assert!(!c.kernel.ttl_security);
        let c = parse(&format!("{text}ttl_security = true\n")).expect("GTSM");
        assert!(c.kernel.ttl_security);
    }

    #[test]
    fn ttl_security_without_peers_is_refused_at_its_line() {
        let text = format!("{PORTS}\n[kernel]\ninterfaces = true\nttl_security = true\n");
        let line = text.lines().count();
        assert_err(
            &text,
            line,
            &["[kernel] field `ttl_security`", "no `peers`"],
        );
    }

    #[test]
    fn bad_names_and_peers_name_their_line_and_field() {
        let named = |name: &str| {
            PORTS.replace(
                "address = \"10.0.2.1/24\"",
                &format!("address = \"10.0.2.1/24\"\nkernel_interface = \"{name}\""),
            )
        };
        assert_err(
            &named("fp-wan"),
            8,
            &["kernel_interface", "`interfaces = true`"],
        );
        let on = "\n[kernel]\ninterfaces = true\n";
        assert_err(
            &(named("a-name-far-too-long") + on),
            8,
            &["kernel_interface", "19 bytes"],
        );
        assert_err(
            &(named("a/b") + on),
            8,
            &["kernel_interface", "not a valid"],
        );
        assert_err(
            &(named("fp0") + on),
            8,
            &["kernel_interface", "\"fp0\"", "line 1"],
        );
        let peers = |p: &str| format!("{PORTS}{on}peers = [\"{p}\"]\n");
        assert_err(
            &peers("10.0.2"),
            11,
            &["[kernel] field `peers`", "not an IP address"],
        );
        assert_err(&peers("224.0.0.5"), 11, &["peers", "not a unicast address"]);
        assert_err(&peers("::"), 11, &["peers", "not a unicast address"]);
    }
}
