//! One line of the doctor's report: a severity, what was found, and its fix.

use serde::Serialize;
use std::fmt::Write;

/// How much a finding matters for a start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Fine as it is.
    Ok,
    /// fastpath starts, but slower or less safe than it could.
    Warn,
    /// fastpath will not start (or not with this port) until it is fixed.
    Fail,
}

impl Severity {
    pub fn label(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Warn => "warn",
            Severity::Fail => "fail",
        }
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    /// What it is about: `eal`, `config`, `hugepages`, `iommu`, `pci`, `lcores`, `drivers`.
    pub topic: &'static str,
    /// What was found, in one sentence.
    pub what: String,
    /// How to fix it: a command or a config change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Finding {
    pub fn ok(topic: &'static str, what: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Ok,
            topic,
            what: what.into(),
            fix: None,
        }
    }

    pub fn warn(topic: &'static str, what: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Warn,
            topic,
            what: what.into(),
            fix: Some(fix.into()),
        }
    }

    pub fn fail(topic: &'static str, what: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Fail,
            topic,
            what: what.into(),
            fix: Some(fix.into()),
        }
    }
}

/// The worst severity of `findings` (`Ok` when there are none).
pub fn worst(findings: &[Finding]) -> Severity {
    findings
        .iter()
        .map(|f| f.severity)
        .max()
        .unwrap_or(Severity::Ok)
}

/// The report for people: one line per finding, its fix indented below, a summary last.
pub fn to_text(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let _ = writeln!(out, "{:<5} {:<10} {}", f.severity.label(), f.topic, f.what);
        if let Some(fix) = &f.fix {
            let _ = writeln!(out, "{:16} fix: {fix}", "");
        }
    }
    let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    let verdict = if worst(findings) == Severity::Fail {
        "fastpath will not start until each fail is fixed"
    } else {
        "nothing blocks a start"
    };
    let _ = writeln!(
        out,
        "{} fail, {} warn, {} ok: {verdict}",
        count(Severity::Fail),
        count(Severity::Warn),
        count(Severity::Ok)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_has_fixes_and_a_verdict() {
        let f = vec![
            Finding::ok("eal", "fine"),
            Finding::fail(
                "pci",
                "0000:01:00.0 is bound to ixgbe",
                "dpdk-devbind.py ...",
            ),
        ];
        let text = to_text(&f);
        assert!(
            text.contains("fail  pci        0000:01:00.0 is bound to ixgbe\n"),
            "{text}"
        );
        assert!(text.contains("fix: dpdk-devbind.py ..."), "{text}");
        assert!(text
            .ends_with("1 fail, 0 warn, 1 ok: fastpath will not start until each fail is fixed\n"));
        assert_eq!(worst(&f), Severity::Fail);
        assert_eq!(worst(&f[..1]), Severity::Ok);
    }
}
