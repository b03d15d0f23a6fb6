//! `[[lcore]]`: which worker lcore polls which RX queues; each queue by one
//! lcore, and with any `[[lcore]]` every queue by some lcore.

use crate::config::fields::lcore_queue;
use crate::config::position::{ConfigError, Source};
use crate::config::schema::{RawLcore, MAX_LCORE_ID};
use crate::config::spec::{LcoreSpec, PortSpec};
use std::collections::HashMap;
use toml::Spanned;

impl Source<'_> {
    /// Checks every `[[lcore]]`: unique ids, each rx queue polled by exactly
    /// one lcore, and (when any is given) every rx queue of every port polled.
    pub(crate) fn lcores(
        &self,
        ports: &[PortSpec],
        raw: &[Spanned<RawLcore>],
    ) -> Result<Vec<LcoreSpec>, ConfigError> {
        let mut lcores: Vec<LcoreSpec> = Vec::with_capacity(raw.len());
        // (port, queue) -> (lcore id, line of the entry)
        let mut polled: HashMap<(usize, u16), (u32, usize)> = HashMap::new();
        for l in raw {
            let r = l.get_ref();
            let line = self.line_of(&l.span());
            let id: u32 = self.ranged("lcore", "id", &r.id, 0, MAX_LCORE_ID)?;
            if let Some(prev) = lcores.iter().find(|p| p.id == id) {
                return Err(self.field_error(
                    "lcore",
                    "id",
                    &r.id,
                    format!(
                        "lcore {id} is already defined by the [[lcore]] at line {} (this one is at line {line}); \
                         expected each lcore id once (list all its queues in one [[lcore]])",
                        prev.line
                    ),
                ));
            }
            if r.queues.get_ref().is_empty() {
                return Err(self.field_error(
                    "lcore",
                    "queues",
                    &r.queues,
                    format!(
                        "lcore {id} polls no queues; expected at least one \"<device>:<rx queue>\", \
                         e.g. \"{}:0\", or remove this [[lcore]]",
                        ports[0].device
                    ),
                ));
            }
            let mut queues = Vec::with_capacity(r.queues.get_ref().len());
            for entry in r.queues.get_ref() {
                let q = lcore_queue(ports, entry.get_ref())
                    .map_err(|m| self.field_error("lcore", "queues", entry, m))?;
                let entry_line = self.line_of(&entry.span());
                if let Some((prev_id, prev_line)) = polled.insert(q, (id, entry_line)) {
                    let by = if prev_id == id {
                        "this lcore already".to_owned()
                    } else {
                        format!("lcore {prev_id}")
                    };
                    return Err(self.field_error(
                        "lcore",
                        "queues",
                        entry,
                        format!(
                            "rx queue {}:{} is already polled by {by} (line {prev_line}); \
                             expected each rx queue polled by one lcore",
                            ports[q.0].device, q.1
                        ),
                    ));
                }
                queues.push(q);
            }
            lcores.push(LcoreSpec { id, queues, line });
        }
        self.check_all_queues_polled(ports, &lcores, &polled)?;
        Ok(lcores)
    }

    /// With explicit `[[lcore]]`s, every rx queue of every port must be polled.
    pub(crate) fn check_all_queues_polled(
        &self,
        ports: &[PortSpec],
        lcores: &[LcoreSpec],
        polled: &HashMap<(usize, u16), (u32, usize)>,
    ) -> Result<(), ConfigError> {
        let Some(first) = lcores.first() else {
            return Ok(());
        };
        for (i, p) in ports.iter().enumerate() {
            for q in 0..p.rx_queues {
                if !polled.contains_key(&(i, q)) {
                    return Err(self.error(
                        first.line,
                        format!(
                            "[[lcore]] field `queues`: rx queue {dev}:{q} ([[port]] at line {pl}) \
                             is not polled by any lcore; add \"{dev}:{q}\" to the queues of an [[lcore]], \
                             or remove every [[lcore]] to use the default placement",
                            dev = p.device,
                            pl = p.line
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::testing::{assert_err, parse};

    // ----- lcores ------------------------------------------------------------------

    /// Ports with 2 queues on net_af_packet0 (line 1) and 1 on port id 5 (line 6),
    /// then `rest` from line 10.
    fn lcores(rest: &str) -> String {
        format!(
            "[[port]]\ndevice = \"net_af_packet0\"\naddress = \"10.0.1.1/24\"\nrx_queues = 2\n\n\
             [[port]]\ndevice = 5\naddress = \"10.0.2.1/24\"\n\n{rest}"
        )
    }

    #[test]
    fn lcore_queue_entries_must_parse() {
        let one = |q: &str| lcores(&format!("[[lcore]]\nid = 1\nqueues = [\"{q}\"]\n"));
        assert_err(
            &one("net_af_packet0"),
            12,
            &[
                "[[lcore]] field `queues`",
                "no queue number",
                "<device>:<rx queue>",
            ],
        );
        assert_err(
            &one("net_af_packet9:0"),
            12,
            &[
                "[[lcore]] field `queues`",
                "\"net_af_packet9\" is not a configured port",
                "net_af_packet0, 5",
            ],
        );
        assert_err(
            &one("net_af_packet0:x"),
            12,
            &["[[lcore]] field `queues`", "not a queue number"],
        );
        assert_err(
            &one("net_af_packet0:2"),
            12,
            &[
                "[[lcore]] field `queues`",
                "rx queue 2 does not exist",
                "rx_queues = 2",
            ],
        );
        assert_err(
            &one("5:1"),
            12,
            &["rx queue 1 does not exist", "port id 5 has rx_queues = 1"],
        );
    }

    #[test]
    fn lcore_queue_entry_line_in_multiline_array() {
        assert_err(
            &lcores("[[lcore]]\nid = 1\nqueues = [\n  \"net_af_packet0:0\",\n  \"bogus:0\",\n]\n"),
            14,
            &["\"bogus\" is not a configured port"],
        );
    }

    #[test]
    fn lcore_queue_polled_twice() {
        assert_err(
            &lcores(
                "[[lcore]]\nid = 1\nqueues = [\"net_af_packet0:0\", \"5:0\"]\n\n\
                 [[lcore]]\nid = 2\nqueues = [\"net_af_packet0:1\", \"5:0\"]\n",
            ),
            16,
            &[
                "[[lcore]] field `queues`",
                "rx queue 5:0 is already polled by lcore 1 (line 12)",
            ],
        );
        assert_err(
            &lcores("[[lcore]]\nid = 1\nqueues = [\"5:0\", \"net_af_packet0:0\", \"5:0\", \"net_af_packet0:1\"]\n"),
            12,
            &["rx queue 5:0 is already polled by this lcore"],
        );
    }

    #[test]
    fn lcore_must_cover_every_queue() {
        let e = assert_err(
            &lcores("[[lcore]]\nid = 1\nqueues = [\"net_af_packet0:0\", \"5:0\"]\n"),
            10,
            &[
                "net_af_packet0:1",
                "not polled by any lcore",
                "add \"net_af_packet0:1\"",
                "remove every [[lcore]]",
            ],
        );
        assert!(e.message.starts_with("[[lcore]]"), "{e}");
        let c = parse(&lcores(
            "[[lcore]]\nid = 3\nqueues = [\"net_af_packet0:1\", \"5:0\", \"net_af_packet0:0\"]\n",
        ))
        .expect("all queues");
        assert_eq!(c.lcores[0].queues, [(0, 1), (1, 0), (0, 0)]);
    }

    #[test]
    fn duplicate_lcore_id() {
        assert_err(
            &lcores(
                "[[lcore]]\nid = 1\nqueues = [\"net_af_packet0:0\", \"5:0\"]\n\n\
                 [[lcore]]\nid = 1\nqueues = [\"net_af_packet0:1\"]\n",
            ),
            15,
            &[
                "[[lcore]] field `id`",
                "lcore 1 is already defined",
                "line 10",
                "line 14",
            ],
        );
    }

    #[test]
    fn lcore_id_range_and_empty_queues() {
        let all = "queues = [\"net_af_packet0:0\", \"net_af_packet0:1\", \"5:0\"]\n";
        assert_err(
            &lcores(&format!("[[lcore]]\nid = 1024\n{all}")),
            11,
            &["[[lcore]] field `id`", "1024 is out of range", "0 to 1023"],
        );
        assert_err(
            &lcores(&format!("[[lcore]]\nid = -1\n{all}")),
            11,
            &["[[lcore]] field `id`", "out of range"],
        );
        assert!(parse(&lcores(&format!("[[lcore]]\nid = 1023\n{all}"))).is_ok());
        assert_err(
            &lcores("[[lcore]]\nid = 2\nqueues = []\n"),
            12,
            &["[[lcore]] field `queues`", "polls no queues"],
        );
    }
}
