//! What the doctor checks the host against: the EAL arguments and, with
//! `--config`, the router configuration's ports and lcores.

use super::eal_args::EalArgs;
use crate::config::{DeviceRef, RouterConfig};
use std::path::Path;

/// A PCI device fastpath is asked to use, and where it was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WantedPci {
    /// Full address, `0000:01:00.0`.
    pub addr: String,
    /// Where it comes from: `-a 01:00.0` or `config line 3`.
    pub from: String,
}

/// Everything a check may look at besides the host.
#[derive(Clone, Debug)]
pub struct Inputs {
    pub eal: EalArgs,
    /// `--fib-routes` and `--fib6-routes` of the command checked.
    pub fib_routes: u32,
    pub fib6_routes: u32,
    /// The loaded configuration, when `--config` was given and loads.
    pub config: Option<RouterConfig>,
    /// The error of a `--config` that does not load.
    pub config_error: Option<String>,
    /// PCI devices from `-a` and from `[[port]] device`, each once.
    pub pci: Vec<WantedPci>,
}

impl Inputs {
    /// Gathers the inputs; a config that does not load is kept as an error.
    pub fn new(eal: EalArgs, config: Option<&Path>) -> Inputs {
        let mut inputs = Inputs {
            eal,
            fib_routes: crate::fib::FIB_ROUTES,
            fib6_routes: crate::fib6::FIB6_ROUTES,
            config: None,
            config_error: None,
            pci: Vec::new(),
        };
        match config.map(RouterConfig::load) {
            Some(Ok(c)) => inputs.config = Some(c),
            Some(Err(e)) => inputs.config_error = Some(e.to_string()),
            None => {}
        }
        inputs.pci = inputs.wanted_pci();
        inputs
    }

    /// The FIB sizes of the command checked (the defaults until given).
    pub fn with_fib_routes(mut self, fib_routes: u32, fib6_routes: u32) -> Inputs {
        self.fib_routes = fib_routes;
        self.fib6_routes = fib6_routes;
        self
    }

    fn wanted_pci(&self) -> Vec<WantedPci> {
        let mut out: Vec<WantedPci> = Vec::new();
        let mut add = |addr: String, from: String| {
            if !out.iter().any(|w| w.addr == addr) {
                out.push(WantedPci { addr, from });
            }
        };
        for a in &self.eal.allow {
            if let Some(addr) = pci_address(a) {
                add(addr, format!("-a {a}"));
            }
        }
        for p in self.config.iter().flat_map(|c| &c.ports) {
            if let DeviceRef::Name(n) = &p.device {
                if let Some(addr) = pci_address(n) {
                    add(addr, format!("config line {}", p.line));
                }
            }
        }
        out
    }

    /// The config's `[[port]]` devices that are names but not PCI addresses
    /// (vdev names), with their lines.
    pub fn config_vdev_ports(&self) -> Vec<(String, usize)> {
        self.config
            .iter()
            .flat_map(|c| &c.ports)
            .filter_map(|p| match &p.device {
                DeviceRef::Name(n) if pci_address(n).is_none() => Some((n.clone(), p.line)),
                _ => None,
            })
            .collect()
    }
}

/// A PCI address in full form (`0000:01:00.0`, lower case), from
/// `[domain:]bus:device.function`; `None` when `s` is not one.
pub fn pci_address(s: &str) -> Option<String> {
    let s = s.trim().to_ascii_lowercase();
    let (rest, function) = s.rsplit_once('.')?;
    let parts: Vec<&str> = rest.split(':').collect();
    let (domain, bus, dev) = match parts.as_slice() {
        [b, d] => ("0000", *b, *d),
        [dom, b, d] => (*dom, *b, *d),
        _ => return None,
    };
    let hex = |t: &str, max: usize| {
        !t.is_empty() && t.len() <= max && t.chars().all(|c| c.is_ascii_hexdigit())
    };
    if !(hex(domain, 8) && hex(bus, 2) && hex(dev, 2) && hex(function, 1)) {
        return None;
    }
    let num = |t: &str| u32::from_str_radix(t, 16).ok();
    Some(format!(
        "{:04x}:{:02x}:{:02x}.{}",
        num(domain)?,
        num(bus)?,
        num(dev)?,
        function
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_addresses() {
        assert_eq!(pci_address("01:00.0").as_deref(), Some("0000:01:00.0"));
        assert_eq!(pci_address("0000:AF:00.1").as_deref(), Some("0000:af:00.1"));
        assert_eq!(pci_address("1:0.0").as_deref(), Some("0000:01:00.0"));
        assert_eq!(pci_address("net_null0"), None);
        assert_eq!(pci_address("net_pcap0.1"), None);
        assert_eq!(pci_address("01:00"), None);
    }

    #[test]
    fn devices_from_args_and_config_once_each() {
        let dir = tempfile::Builder::new()
            .prefix("inputs-cfg")
            .tempdir()
            .unwrap();
        let path = dir.path().join("r.toml");
        let text = "[[port]]\ndevice = \"0000:01:00.0\"\naddress = \"10.0.1.1/24\"\n\n\
                    [[port]]\ndevice = \"net_null0\"\naddress = \"10.0.2.1/24\"\n";
        std::fs::write(&path, text).unwrap();
        let eal = EalArgs {
            allow: vec!["01:00.0".into(), "02:00.0".into()],
            ..EalArgs::default()
        };
        let inputs = Inputs::new(eal, Some(&path));
        assert!(inputs.config_error.is_none(), "{:?}", inputs.config_error);
        let addrs: Vec<&str> = inputs.pci.iter().map(|w| w.addr.as_str()).collect();
        assert_eq!(addrs, ["0000:01:00.0", "0000:02:00.0"]);
        assert_eq!(inputs.config_vdev_ports(), [("net_null0".to_string(), 5)]);
    }
}
