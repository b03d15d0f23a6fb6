//! A route or neighbour given at run time (`fastpath ctl`), checked by the
//! file's own rules against a running config's ports.

use super::device::DeviceRef;
use super::position::Source;
use super::schema::RawConfig;
use super::spec::{NeighbourSpec, RouteSpec, RouterConfig};

/// A route or neighbour given at run time, to check against a running
/// config's ports exactly as a `[[route]]` or `[[neighbour]]` of its file.
pub enum RuntimeItem<'a> {
    /// `route add PREFIX via IP[,IP...]` (`device`: None) or `dev PORT`.
    Route {
        prefix: &'a str,
        via: &'a [String],
        device: Option<&'a DeviceRef>,
    },
    /// `neigh add IP MAC`.
    Neighbour { address: &'a str, mac: &'a str },
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
        let raw = self.runtime_raw(RuntimeItem::Neighbour { address, mac })?;
        let src = Source {
            path: &self.path,
            text: &raw.1,
        };
        let n = raw.0.neighbour.first().ok_or("no neighbour given")?;
        src.neighbour(&self.ports, n)
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
                    (_, Some(DeviceRef::Name(n))) => {
                        t.insert("device".into(), n.as_str().into());
                    }
                    (_, Some(DeviceRef::Id(id))) => {
                        t.insert("device".into(), i64::from(*id).into());
                    }
                }
                "route"
            }
            RuntimeItem::Neighbour { address, mac } => {
                t.insert("address".into(), address.into());
                t.insert("mac".into(), mac.into());
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
