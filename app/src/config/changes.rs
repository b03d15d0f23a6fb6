//! A route or neighbour given at run time (`fastpath ctl`), checked by the
//! file's own rules against a running config's ports.

use super::device::DeviceRef;
use super::position::Source;
use super::schema::RawConfig;
use super::spec::{NeighbourSpec, RouteSpec, RouterConfig};
use super::spec6::{Neighbour6Spec, Route6Spec};

/// A route or neighbour given at run time, to check against a running
/// config's ports exactly as a `[[route]]` or `[[neighbour]]` of its file.
pub enum RuntimeItem<'a> {
    /// `route add PREFIX via IP[,IP...]` (`device`: None) or `dev PORT`.
    Route {
        prefix: &'a str,
        via: &'a [String],
        device: Option<&'a DeviceRef>,
    },
    /// `neigh add IP MAC [dev PORT]` (`dev`: the port of a link-local
    /// IPv6 neighbour).
    Neighbour {
        address: &'a str,
        mac: &'a str,
        device: Option<&'a DeviceRef>,
    },
}

impl RouterConfig {
    /// Check a route given at run time; the error says what is wrong and why,
    /// in the words of the file's checks (without the section and line).
    pub fn check_route(
        &self,
        prefix: &str,
        via: &[String],
        device: Option<&DeviceRef>,
    ) -> Result<RouteSpec, String> {
        let raw = self.runtime_raw(RuntimeItem::Route {
            prefix,
            via,
            device,
        })?;
        let src = Source {
            path: &self.path,
            text: &raw.1,
        };
        let r = raw.0.route.first().ok_or("no route given")?;
        src.route(&self.ports, r)
            .map_err(|e| runtime_message(&e.message))
    }

    /// Check a static neighbour given at run time (see [`Self::check_route`]).
    pub fn check_neighbour(&self, address: &str, mac: &str) -> Result<NeighbourSpec, String> {
        let raw = self.runtime_raw(RuntimeItem::Neighbour {
            address,
            mac,
            device: None,
        })?;
        let src = Source {
            path: &self.path,
            text: &raw.1,
        };
        let n = raw.0.neighbour.first().ok_or("no neighbour given")?;
        src.neighbour(&self.ports, n)
            .map_err(|e| runtime_message(&e.message))
    }

    /// Check an IPv6 route given at run time: `via` one gateway (with
    /// `device` when it is link-local) or `device` alone (on-link), by the
    /// file's own IPv6 route checks.
    pub fn check_route6(
        &self,
        prefix: &str,
        via: &[String],
        device: Option<&DeviceRef>,
    ) -> Result<Route6Spec, String> {
        let raw = self.runtime_raw(RuntimeItem::Route {
            prefix,
            via,
            device,
        })?;
        let src = Source {
            path: &self.path,
            text: &raw.1,
        };
        let r = raw.0.route.first().ok_or("no route given")?;
        src.route6(&self.ports, r)
            .map_err(|e| runtime_message(&e.message))
    }

    /// Check an IPv6 static neighbour given at run time (`device`: its port,
    /// required when it is link-local).
    pub fn check_neighbour6(
        &self,
        address: &str,
        mac: &str,
        device: Option<&DeviceRef>,
    ) -> Result<Neighbour6Spec, String> {
        let raw = self.runtime_raw(RuntimeItem::Neighbour {
            address,
            mac,
            device,
        })?;
        let src = Source {
            path: &self.path,
            text: &raw.1,
        };
        let n = raw.0.neighbour.first().ok_or("no neighbour given")?;
        src.neighbour6(&self.ports, n)
            .map_err(|e| runtime_message(&e.message))
    }

    /// The item as the one section of a file (so that the file's parser and
    /// its spans serve), parsed.
    fn runtime_raw(&self, item: RuntimeItem<'_>) -> Result<(RawConfig, String), String> {
        let mut t = toml::Table::new();
        let section = match item {
            RuntimeItem::Route {
                prefix,
                via,
                device,
            } => {
                t.insert("prefix".into(), prefix.into());
                match (via, device) {
                    ([one], None) => {
                        t.insert("via".into(), one.as_str().into());
                    }
                    (_, None) => {
                        let list = via.iter().map(|v| toml::Value::from(v.as_str()));
                        t.insert("via".into(), toml::Value::Array(list.collect()));
                    }
                    ([one], Some(d)) => {
                        // An IPv6 link-local gateway and its port.
                        t.insert("via".into(), one.as_str().into());
                        insert_device(&mut t, d);
                    }
                    (_, Some(d)) => insert_device(&mut t, d),
                }
                "route"
            }
            RuntimeItem::Neighbour {
                address,
                mac,
                device,
            } => {
                t.insert("address".into(), address.into());
                t.insert("mac".into(), mac.into());
                if let Some(d) = device {
                    insert_device(&mut t, d);
                }
                "neighbour"
            }
        };
        let mut doc = toml::Table::new();
        doc.insert(
            section.into(),
            toml::Value::Array(vec![toml::Value::Table(t)]),
        );
        let text = toml::to_string(&doc).map_err(|e| e.to_string())?;
        let raw: RawConfig = toml::from_str(&text).map_err(|e| e.message().to_string())?;
        Ok((raw, text))
    }
}

/// `device = ` as the file writes it: a name or a port id.
fn insert_device(t: &mut toml::Table, d: &DeviceRef) {
    let v = match d {
        DeviceRef::Name(n) => toml::Value::from(n.as_str()),
        DeviceRef::Id(id) => toml::Value::from(i64::from(*id)),
    };
    t.insert("device".into(), v);
}

/// A check's message without its `[[section]] field `name`: ` or
/// `[[section]] ` lead: the command names what it is about.
fn runtime_message(m: &str) -> String {
    for lead in ["[[route]] ", "[[neighbour]] "] {
        if let Some(rest) = m.strip_prefix(lead) {
            return match rest
                .strip_prefix("field `")
                .and_then(|r| r.split_once("`: "))
            {
                Some((field, msg)) => format!("{field}: {msg}"),
                // "{prefix}/{len}: ..." (the command names the prefix).
                None => rest.split_once(": ").map_or(rest, |(_, m)| m).to_string(),
            };
        }
    }
    m.to_string()
}
