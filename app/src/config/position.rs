//! Where an error is in the file: the line of a byte span, and the section
//! and field a TOML error is in, so that every message reads
//! `{path}:{line}: [[section]] field `name`: ...`.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// A config error: `{path}:{line}: {message}` (or `{path}: {message}` without a line).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {}", .path.display(), line_suffix(.line), .message)]
pub struct ConfigError {
    pub path: PathBuf,
    /// 1-based line the error is about, when known.
    pub line: Option<usize>,
    pub message: String,
}

/// `:{line}` or nothing.
fn line_suffix(line: &Option<usize>) -> String {
    line.map(|l| format!(":{l}")).unwrap_or_default()
}

/// The file being parsed: turns byte spans into lines and builds errors.
pub(crate) struct Source<'a> {
    pub path: &'a Path,
    pub text: &'a str,
}

impl Source<'_> {
    /// 1-based line of byte `offset`.
    pub(crate) fn line_at(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// 1-based line where `span` starts.
    pub(crate) fn line_of(&self, span: &Range<usize>) -> usize {
        self.line_at(span.start)
    }

    pub(crate) fn error(&self, line: usize, message: String) -> ConfigError {
        ConfigError {
            path: self.path.to_path_buf(),
            line: Some(line),
            message,
        }
    }

    /// `[[section]] field `field`: message`, at the line of `value`.
    pub(crate) fn field_error<T>(
        &self,
        section: &str,
        field: &str,
        value: &Spanned<T>,
        message: impl fmt::Display,
    ) -> ConfigError {
        self.error(
            self.line_of(&value.span()),
            format!("[[{section}]] field `{field}`: {message}"),
        )
    }

    /// A TOML syntax, type, missing-field or unknown-field error, at toml's
    /// line, with the section (and field) it is in when that can be told.
    pub(crate) fn toml_error(&self, e: &toml::de::Error) -> ConfigError {
        let message = e.message().trim().to_owned();
        let Some(span) = e.span() else {
            return ConfigError {
                path: self.path.to_path_buf(),
                line: None,
                message: format!("invalid config: {message}"),
            };
        };
        let line = self.line_at(span.start);
        let text = self.line_text(line);
        if let Some(header) = table_header(text) {
            // about the section itself (unknown section, `[x]` for `[[x]]`);
            // a missing field is reported at its table's header too
            if !message.starts_with("missing field") {
                return self.error(line, header_error(header, &message));
            }
        }
        let place = match (self.section_header_before(line), key_on_line(text)) {
            (Some(section), Some(key)) => format!("{section} field `{key}`: "),
            (Some(section), None) => format!("{section}: "),
            (None, Some(key)) => format!("field `{key}`: "),
            (None, None) => String::new(),
        };
        self.error(line, format!("{place}{message}"))
    }

    /// Text of 1-based line `line`.
    fn line_text(&self, line: usize) -> &str {
        self.text.lines().nth(line.saturating_sub(1)).unwrap_or("")
    }

    /// The `[...]` / `[[...]]` header in force at 1-based line `line`, if any.
    fn section_header_before(&self, line: usize) -> Option<&str> {
        self.text.lines().take(line).filter_map(table_header).last()
    }
}

/// `[[port]]` / `[table]` when `line` is a table header.
fn table_header(line: &str) -> Option<&str> {
    let code = line.split('#').next().unwrap_or("").trim();
    let inner = code.strip_prefix('[')?.strip_suffix(']')?;
    let inner = inner
        .strip_prefix('[')
        .and_then(|i| i.strip_suffix(']'))
        .unwrap_or(inner);
    let bare = |c: char| c.is_ascii_alphanumeric() || "_-. ".contains(c);
    (!inner.trim().is_empty() && inner.chars().all(bare)).then_some(code)
}

/// A TOML error about a section header itself.
fn header_error(header: &str, message: &str) -> String {
    let name = header.trim_matches(|c| c == '[' || c == ']').trim();
    let hint = if message.contains("expected a sequence") {
        format!("; write each item as an array of tables: [[{name}]]")
    } else {
        String::new()
    };
    format!("section {header}: {message}{hint}")
}

/// The key of a `key = value` line.
fn key_on_line(line: &str) -> Option<&str> {
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    let bare = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    (!key.is_empty() && key.chars().all(bare)).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_err, parse, with_ports, GOOD};
    use super::*;

    #[test]
    fn error_display_and_error_at() {
        let c = parse(GOOD).expect("good config");
        let e = c.error_at(8, "DPDK has no port 1");
        assert_eq!(e.to_string(), "router.toml:8: DPDK has no port 1");
        let e = ConfigError {
            path: "r.toml".into(),
            line: None,
            message: "boom".into(),
        };
        assert_eq!(e.to_string(), "r.toml: boom");
    }

    // ----- TOML level errors ----------------------------------------------

    #[test]
    fn toml_syntax_error_has_line() {
        let e = assert_err(
            &with_ports("[[route]]\nprefix = \"0.0.0.0/0\nvia = \"10.0.1.2\"\n"),
            9,
            &[],
        );
        assert!(!e.message.contains('\n'), "{e}");
    }

    #[test]
    fn unknown_field_names_section_and_field() {
        assert_err(
            &with_ports("\n[[port]]\ndevice = \"x\"\naddress = \"10.0.3.1/24\"\nspeed = 10\n"),
            12,
            &["[[port]]", "unknown field `speed`"],
        );
    }

    #[test]
    fn unknown_section_is_an_error() {
        assert_err(
            &with_ports("\n[[ports]]\ndevice = \"x\"\n"),
            9,
            &["section [[ports]]", "unknown field `ports`", "`port`"],
        );
    }

    #[test]
    fn missing_field_is_an_error() {
        assert_err(
            &with_ports("\n[[route]]\nvia = \"10.0.1.2\"\n"),
            9,
            &["[[route]]", "missing field `prefix`"],
        );
    }

    #[test]
    fn wrong_type_names_field() {
        assert_err(
            "[[port]]\ndevice = \"p\"\naddress = \"10.0.1.1/24\"\nmtu = \"big\"\n",
            4,
            &["[[port]] field `mtu`", "expected an integer"],
        );
        assert_err(
            "[[port]]\ndevice = true\naddress = \"10.0.1.1/24\"\n",
            2,
            &["field `device`", "DPDK port id"],
        );
    }

    #[test]
    fn single_bracket_table_hints_double() {
        assert_err(
            "[port]\ndevice = \"p\"\naddress = \"10.0.1.1/24\"\n",
            1,
            &[
                "section [port]",
                "expected a sequence",
                "array of tables: [[port]]",
            ],
        );
    }
}
