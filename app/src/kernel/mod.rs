//! Kernel interfaces for fastpath's ports (representors): one TAP interface
//! per port, with the port's MAC, MTU and addresses, up while fastpath runs
//! (the interface goes when its file descriptor closes, at exit). What the
//! router does not answer itself and is addressed to it (TCP, UDP, BGP,
//! SSH, ...) reaches the kernel through it; what the kernel sends on it
//! leaves by the port. The control lcore moves the frames both ways
//! (`router::control::kernel`).

mod netlink;

use std::io;
use std::net::IpAddr;
use tun_tap::{Iface, Mode};

/// Longest interface name (IFNAMSIZ less the terminating NUL).
pub const MAX_NAME_LEN: usize = 15;

/// The kernel interface of one port.
pub struct Representor {
    iface: Iface,
    index: u32,
}

/// What a representor is made from.
pub struct RepresentorSpec<'a> {
    pub name: &'a str,
    pub mac: [u8; 6],
    pub mtu: u16,
    /// The port's addresses with their prefix lengths.
    pub addrs: &'a [(IpAddr, u8)],
}

impl Representor {
    /// Create the TAP interface `spec.name`, give it the port's MAC, MTU
    /// and addresses, and bring it up. The error says what failed and how
    /// to fix it.
    pub fn create(spec: &RepresentorSpec) -> Result<Representor, String> {
        let name = spec.name;
        let iface = Iface::without_packet_info(name, Mode::Tap).map_err(|e| {
            let hint = match e.raw_os_error() {
                Some(libc::ENOENT) | Some(libc::ENODEV) => {
                    " (no /dev/net/tun: load the tun module, or in a container pass --device /dev/net/tun)"
                }
                Some(libc::EPERM) => " (needs CAP_NET_ADMIN)",
                Some(libc::EBUSY) | Some(libc::EINVAL) => {
                    " (an interface of that name exists and is not a free TAP: pick another kernel_interface)"
                }
                _ => "",
            };
            format!("kernel interface {name}: cannot create the TAP: {e}{hint}")
        })?;
        iface
            .set_non_blocking()
            .map_err(|e| format!("kernel interface {name}: non-blocking mode: {e}"))?;
        let index = netlink::ifindex(name)
            .map_err(|e| format!("kernel interface {name}: its index: {e}"))?;
        let mut rtnl =
            netlink::Rtnl::open().map_err(|e| format!("kernel interface {name}: netlink: {e}"))?;
        rtnl.set_link(index, spec.mac, spec.mtu)
            .map_err(|e| format!("kernel interface {name}: MAC and MTU: {e}"))?;
        // The port's link-local address is the one fastpath answers for:
        // the kernel makes none of its own (given below with the others).
        let gen_mode = format!("/proc/sys/net/ipv6/conf/{name}/addr_gen_mode");
        if std::path::Path::new(&gen_mode).exists() {
            std::fs::write(&gen_mode, "1")
                .map_err(|e| format!("kernel interface {name}: {gen_mode}: {e}"))?;
        }
        rtnl.set_up(index)
            .map_err(|e| format!("kernel interface {name}: up: {e}"))?;
        for &(addr, len) in spec.addrs {
            match rtnl.add_address(index, addr, len) {
                Ok(()) => {}
                // The kernel may have put the link-local address there itself.
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
                Err(e) => {
                    return Err(format!(
                        "kernel interface {name}: address {addr}/{len}: {e}"
                    ))
                }
            }
        }
        Ok(Representor { iface, index })
    }

    /// The interface's name.
    pub fn name(&self) -> &str {
        self.iface.name()
    }

    /// The interface's index in the kernel.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Set the interface's carrier: on while the port's link is up, so
    /// that the kernel (and zebra) see the port's link state.
    pub fn set_carrier(&self, up: bool) -> io::Result<()> {
        netlink::Rtnl::open()?.set_carrier(self.index, up)
    }

    /// One frame the kernel sent on the interface into `buf`: its length,
    /// `None` when there is none waiting.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match self.iface.recv(buf) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Hand `frame` to the kernel as received on the interface. An error
    /// when the interface's queue is full or it is down.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        self.iface.send(frame).map(|_| ())
    }
}
