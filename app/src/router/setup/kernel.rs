//! Step: the ports' kernel interfaces (`[kernel] interfaces = true`), after
//! the ports started (their MACs are known) and before the workers do: one
//! TAP per port with the port's MAC, MTU and addresses, up. One line per
//! port says which.

use super::Setup;
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
