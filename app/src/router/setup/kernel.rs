//! Step: the ports' kernel interfaces (`[kernel] interfaces = true`), after
//! the ports started (their MACs are known) and before the workers do: one
//! TAP per port with the port's MAC, MTU and addresses, up. One line per
//! port says which.

use super::Setup;
use crate::dpdk::Port;
use crate::kernel::{Representor, RepresentorSpec};
use crate::lifecycle::RunError;
use crate::router::control::parts::PortAddr;
use std::net::IpAddr;

/// The ports' kernel interfaces by port id (empty without).
pub(super) fn create(s: &Setup, addrs: &[PortAddr]) -> Result<Vec<Option<Representor>>, RunError> {
    if !s.cfg.kernel.interfaces {
        return Ok(Vec::new());
    }
    let mut by_id: Vec<Option<Representor>> = (0..s.max_port()).map(|_| None).collect();
    for (spec, a) in s.cfg.ports.iter().zip(addrs) {
        let Some(name) = spec.kernel_interface.as_deref() else {
            continue;
        };
        let mut ips = vec![(IpAddr::V4(a.addr), a.prefix_len)];
        if s.cfg.has_ipv6() {
            ips.push((IpAddr::V6(spec.link_local.address(a.mac)), 64));
            ips.extend(
                spec.ipv6
                    .iter()
                    .map(|i| (IpAddr::V6(i.address), i.prefix_len)),
            );
        }
        let rep = Representor::create(&RepresentorSpec {
            name,
            mac: a.mac,
            mtu: a.mtu,
            addrs: &ips,
        })
        .map_err(|e| RunError::Usage(format!("port {}: {e}", a.id)))?;
        eprintln!(
            "fastpath: port {}: kernel interface {name} (index {}): {}",
            a.id,
            rep.index(),
            ips.iter()
                .map(|(ip, len)| format!("{ip}/{len}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        by_id[usize::from(a.id)] = Some(rep);
    }
    Ok(by_id)
}

/// With kernel interfaces, every port receives all multicast: the groups
/// the kernel's daemons join on the interfaces (OSPF's, VRRP's, ...) are
/// not known to fastpath, which gives the link's own to the kernel. One
/// line per port; a device that cannot is said, not fatal.
pub(super) fn all_multicast(s: &Setup, ports: &mut [Port]) {
    if !s.cfg.kernel.interfaces {
        return;
    }
    for port in ports {
        let how = match port.enable_all_multicast() {
            Ok(()) => "all-multicast on, for the kernel interface's groups".to_string(),
            Err(e) => format!(
                "no all-multicast ({}): only the groups' frames its device delivers reach the \
                 kernel interface",
                e.reason
            ),
        };
        eprintln!("fastpath: port {} ({}): {how}", port.id(), port.name());
    }
}
