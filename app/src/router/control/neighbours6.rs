//! IPv6 static neighbours changed on the running control plane (`fastpath
//! ctl neigh add/del`, reload): checked by the config file's own IPv6 rules,
//! installed in the one neighbour table under their scoped address (a
//! link-local one with its port, `neigh::scope`), and shown as JSON.

use super::changes::Running;
use super::ControlPlane;
use crate::config::Neighbour6Spec;
use crate::ctl::Reply;
use crate::neigh::{display6, is_link_local6, scope6, unscope6, EthHeader, ETHERTYPE_IPV6};
use serde_json::json;
use std::net::Ipv6Addr;

impl ControlPlane<'_> {
    /// `neigh add IP MAC [dev PORT]`, IPv6.
    pub fn neigh_add6(
        &mut self,
        run: Running<'_>,
        address: &str,
        mac: &str,
        dev: Option<&str>,
    ) -> Result<Reply, String> {
        let device = dev.map(|d| run.device(d));
        let spec = run
            .cfg
            .check_neighbour6(address, mac, device.as_ref())
            .map_err(|e| format!("neigh add {address}: {e}"))?;
        let text = self.install_neighbour6(run, &spec)?;
        let scoped = scope6(spec.address, run.port_ids[spec.port]);
        Ok(Reply::done(text, self.neighbour6_json(scoped)))
    }

    /// Install a checked IPv6 static neighbour (replacing a learned entry);
    /// packets waiting for its resolution leave.
    pub fn install_neighbour6(
        &mut self,
        run: Running<'_>,
        spec: &Neighbour6Spec,
    ) -> Result<String, String> {
        let port = run.port_ids[spec.port];
        let src = self.port(port).map(|p| p.mac).unwrap_or_default();
        let hdr = EthHeader {
            dst: spec.mac,
            src,
            ethertype: ETHERTYPE_IPV6,
        };
        // The table's key: a link-local address with its port.
        let a = scope6(spec.address, port);
        let i = self
            .neigh
            .insert_static6(a, &hdr)
            .map_err(|e| format!("neigh add {}: {e}", spec.address))?;
        self.failed_at6.remove(&a);
        if let Some(res) = self.end_resolution6(a) {
            self.flush_queue6(i, res);
        }
        Ok(format!(
            "neighbour {} {} static on port {port}",
            spec.address,
            crate::config::format_mac(&spec.mac)
        ))
    }

    /// `neigh del IP`, IPv6: a link-local address as `fe80::1%PORT` (the
    /// port as `show neighbours` gives it), or alone when one port has it.
    pub fn neigh_del6(&mut self, address: &str) -> Result<Reply, String> {
        let text = address.trim();
        let (addr, zone) = match text.split_once('%') {
            Some((a, z)) => (a, Some(z)),
            None => (text, None),
        };
        let a: Ipv6Addr = addr.parse().map_err(|_| {
            format!("neigh del: {address:?} is not an IPv6 address; expected e.g. 2001:db8:1::2")
        })?;
        let scoped = match zone {
            Some(z) => {
                let port: u16 = z.parse().map_err(|_| {
                    format!("neigh del {address}: {z:?} is not a port number; expected e.g. {a}%1")
                })?;
                scope6(a, port)
            }
            None if is_link_local6(a) => self.link_local_neighbour(a)?,
            None => a,
        };
        self.neigh_del_scoped6(scoped)
    }

    /// The one port's entry of link-local `a`; refused when none or
    /// several ports have one.
    fn link_local_neighbour(&self, a: Ipv6Addr) -> Result<Ipv6Addr, String> {
        let table = self.neigh.table();
        let on: Vec<Ipv6Addr> = table
            .iter6()
            .map(|(_, e)| e.addr6())
            .filter(|&s| unscope6(s).0 == a)
            .collect();
        match on[..] {
            [one] => Ok(one),
            [] => Err(format!("neigh del {a}: no neighbour {a} on any port")),
            _ => Err(format!(
                "neigh del {a}: a link-local address is one neighbour per link, and {} ports \
                 have one; name it with its port: {}",
                on.len(),
                on.iter()
                    .map(|&s| display6(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// Remove the static IPv6 neighbour the table keys as `scoped`.
    pub(super) fn neigh_del_scoped6(&mut self, scoped: Ipv6Addr) -> Result<Reply, String> {
        let shown = display6(scoped);
        // The table's errors name the address as it keys it.
        let said = |e: crate::neigh::NeighError| {
            let e = e.to_string().replace(&scoped.to_string(), &shown);
            format!("neigh del {shown}: {e}")
        };
        self.neigh.remove_static6(scoped).map_err(said)?;
        let (address, port) = unscope6(scoped);
        Ok(Reply::done(
            format!("neighbour {shown}: no longer static"),
            json!({ "address": address.to_string(), "port": port }),
        ))
    }

    /// One IPv6 neighbour (as the table keys it: `scoped`) as JSON, the
    /// shape of IPv4's; a link-local one also names its port.
    pub(super) fn neighbour6_json(&self, scoped: Ipv6Addr) -> serde_json::Value {
        let Some(e) = self.neigh.table().get6(scoped) else {
            return serde_json::Value::Null;
        };
        let (a, port) = unscope6(scoped);
        json!({
            "address": a.to_string(),
            "port": port,
            "mac": crate::config::format_mac(&e.hh().header().dst),
            "state": format!("{:?}", e.state()).to_lowercase(),
            "static": e.is_static(),
            "gateway": e.is_gateway(),
        })
    }
}
