//! The flow-spec options shared by `frames`, `run`, `search` and `compare`.

use crate::traffic::{parse_mac, Field, FrameSizes, TrafficSpec};
use std::net::Ipv4Addr;

/// Traffic options; every field has the default of [`TrafficSpec`].
#[derive(clap::Args, Clone, Debug)]
pub struct SpecArgs {
    /// Frame size in bytes with FCS (64, 128, 512, 1518 or any of 64..=1518),
    /// or `imix` (7 x 64, 4 x 594, 1 x 1518).
    #[arg(long, default_value = "64")]
    pub size: FrameSizes,
    /// Number of flows.
    #[arg(long, default_value_t = 1)]
    pub flows: u32,
    /// Fields that flow i sets to base + i, comma separated (src-ip, dst-ip,
    /// src-port, dst-port).
    #[arg(long, value_delimiter = ',', default_value = "src-ip,src-port")]
    pub vary: Vec<Field>,
    /// 802.1Q VLAN id (untagged without it).
    #[arg(long)]
    pub vlan: Option<u16>,
    #[arg(long, default_value = "02:00:00:00:00:01", value_parser = parse_mac)]
    pub src_mac: [u8; 6],
    #[arg(long, default_value = "02:00:00:00:00:02", value_parser = parse_mac)]
    pub dst_mac: [u8; 6],
    #[arg(long, default_value = "198.18.0.1")]
    pub src_ip: Ipv4Addr,
    #[arg(long, default_value = "198.19.0.1")]
    pub dst_ip: Ipv4Addr,
    #[arg(long, default_value_t = 1024)]
    pub src_port: u16,
    #[arg(long, default_value_t = 9)]
    pub dst_port: u16,
}

impl SpecArgs {
    /// The same options as command-line arguments, for a generator run in a
    /// child process; the destination MAC is left to the caller.
    pub fn to_args(&self) -> Vec<String> {
        let mut v = vec![
            "--size".to_string(),
            self.size.to_string(),
            "--flows".into(),
            self.flows.to_string(),
        ];
        let vary: Vec<&str> = self.vary.iter().map(|f| f.name()).collect();
        if !vary.is_empty() {
            v.push("--vary".into());
            v.push(vary.join(","));
        }
        if let Some(id) = self.vlan {
            v.push("--vlan".into());
            v.push(id.to_string());
        }
        v.extend([
            "--src-mac".to_string(),
            crate::traffic::format_mac(&self.src_mac),
            "--src-ip".into(),
            self.src_ip.to_string(),
            "--dst-ip".into(),
            self.dst_ip.to_string(),
            "--src-port".into(),
            self.src_port.to_string(),
            "--dst-port".into(),
            self.dst_port.to_string(),
        ]);
        v
    }

    /// The spec, validated.
    pub fn spec(&self) -> Result<TrafficSpec, String> {
        let mut vary = self.vary.clone();
        vary.dedup();
        let s = TrafficSpec {
            sizes: self.size,
            flows: self.flows,
            vary,
            vlan: self.vlan,
            src_mac: self.src_mac,
            dst_mac: self.dst_mac,
            src_ip: self.src_ip,
            dst_ip: self.dst_ip,
            src_port: self.src_port,
            dst_port: self.dst_port,
        };
        s.validate()?;
        Ok(s)
    }
}

/// An offered rate: `max`, packets per second (`2.5mpps`, `800kpps`, `1e6`),
/// or line rate in bits per second (`10gbps`, `400mbps`: frames of the mean
/// size plus 20 bytes of preamble and gap).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rate {
    Max,
    Pps(f64),
    Bps(f64),
}

impl Rate {
    /// Packets per second for frames of `mean_bytes` (None: as fast as possible).
    pub fn pps(self, mean_bytes: f64) -> Option<f64> {
        match self {
            Rate::Max => None,
            Rate::Pps(p) => Some(p),
            Rate::Bps(b) => Some(crate::report::line_rate_pps(b / 1e9, mean_bytes)),
        }
    }
}

impl std::str::FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> Result<Rate, String> {
        let l = s.trim().to_ascii_lowercase();
        if l == "max" {
            return Ok(Rate::Max);
        }
        let units: [(&str, f64, bool); 8] = [
            ("gpps", 1e9, false),
            ("mpps", 1e6, false),
            ("kpps", 1e3, false),
            ("pps", 1.0, false),
            ("gbps", 1e9, true),
            ("mbps", 1e6, true),
            ("kbps", 1e3, true),
            ("bps", 1.0, true),
        ];
        let (num, scale, bits) = units
            .iter()
            .find_map(|&(u, m, b)| l.strip_suffix(u).map(|n| (n, m, b)))
            .unwrap_or((l.as_str(), 1.0, false));
        let v: f64 = num.trim().parse().map_err(|_| {
            format!("rate '{s}': expected max, packets/s (2.5mpps, 800kpps, 1e6) or bits/s on the wire (10gbps)")
        })?;
        if !(v > 0.0 && v.is_finite()) {
            return Err(format!("rate '{s}' must be above zero"));
        }
        Ok(if bits {
            Rate::Bps(v * scale)
        } else {
            Rate::Pps(v * scale)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_in_packets_and_bits() {
        assert_eq!("max".parse::<Rate>().unwrap(), Rate::Max);
        assert_eq!("2.5Mpps".parse::<Rate>().unwrap(), Rate::Pps(2.5e6));
        assert_eq!("1e6".parse::<Rate>().unwrap(), Rate::Pps(1e6));
        let r = "10gbps".parse::<Rate>().unwrap();
        assert!((r.pps(64.0).unwrap() - 14_880_952.4).abs() < 1.0);
        assert!("fast".parse::<Rate>().unwrap_err().contains("expected max"));
        assert!("-1mpps".parse::<Rate>().is_err());
    }
}
