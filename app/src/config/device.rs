//! How the file names a port: a device name or a DPDK port id, and how
//! messages write one.

use std::fmt;

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

/// A device in prose: `net_af_packet0` or `port id 3`.
pub(crate) fn label(d: &DeviceRef) -> String {
    match d {
        DeviceRef::Name(n) => n.clone(),
        DeviceRef::Id(id) => format!("port id {id}"),
    }
}

/// `device "x"` or `port id 3`, for "... is not a configured port".
pub(crate) fn describe_device(d: &DeviceRef) -> String {
    match d {
        DeviceRef::Name(n) => format!("device {n:?}"),
        DeviceRef::Id(id) => format!("port id {id}"),
    }
}

/// How the device is written in TOML: `"name"` or `3`.
pub(crate) fn device_literal(d: &DeviceRef) -> String {
    match d {
        DeviceRef::Name(n) => format!("{n:?}"),
        DeviceRef::Id(id) => id.to_string(),
    }
}
