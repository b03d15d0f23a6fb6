//! The modules of `app/src/` use one another one way only (docs/code-layout.md):
//! no module uses one that, directly or through others, uses it. Read from the
//! source text: a module "uses" another when its code (comments and strings
//! aside) names `crate::other` (or `fastpath::other`), names it in a group
//! (`use crate::{other, ..}`), or reaches it through `super::`. No DPDK needed.
//!
//! Also the control plane's layout (router/control/): one concept a file,
//! each file and function within a line budget; and the datapath's
//! (datapath/): one stage a file keeping the stage contract, no function
//! over its budget, no `stage/` folder, no re-export of it by the router.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules of `src/` (a file `x.rs` or a folder `x/`) and the
/// files of each.
fn modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(src).expect("read src") {
        let path = entry.expect("entry").path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            let mut files = Vec::new();
            rust_files(&path, &mut files);
            out.entry(name).or_default().extend(files);
        } else if path.extension().is_some_and(|e| e == "rs") && name != "lib" {
            out.entry(name).or_default().push(path);
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `text` with comments, string literals and char literals blanked out
/// (newlines kept), so that only code is left to read.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, s: &[char]| {
        out.extend(s.iter().map(|&ch| if ch == '\n' { '\n' } else { ' ' }));
    };
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied().unwrap_or('\0');
        let prev_ident = i > 0 && ident(c[i - 1]);
        let end = if at(0) == '/' && at(1) == '/' {
            // To the end of the line.
            (i..c.len()).find(|&k| c[k] == '\n').unwrap_or(c.len())
        } else if at(0) == '/' && at(1) == '*' {
            // Block comments nest.
            let (mut k, mut depth) = (i + 2, 1);
            while k < c.len() && depth > 0 {
                if c[k] == '/' && c.get(k + 1) == Some(&'*') {
                    depth += 1;
                    k += 1;
                } else if c[k] == '*' && c.get(k + 1) == Some(&'/') {
                    depth -= 1;
                    k += 1;
                }
                k += 1;
            }
            k
        } else if !prev_ident && (at(0) == 'r' || (at(0) == 'b' && at(1) == 'r')) && {
            let k = i + if at(0) == 'b' { 2 } else { 1 };
            let hashes = c[k.min(c.len())..]
                .iter()
                .take_while(|&&h| h == '#')
                .count();
            c.get(k + hashes) == Some(&'"')
        } {
            // A raw string: r"..", r#".."#, br#".."#.
            let k = i + if at(0) == 'b' { 2 } else { 1 };
            let hashes = c[k..].iter().take_while(|&&h| h == '#').count();
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let body = k + hashes + 1;
            (body..c.len())
                .find(|&e| c[e..].starts_with(&close))
                .map_or(c.len(), |e| e + close.len())
        } else if at(0) == '"' {
            let mut k = i + 1;
            while k < c.len() && c[k] != '"' {
                k += if c[k] == '\\' { 2 } else { 1 };
            }
            k + 1
        } else if at(0) == '\'' && (at(1) == '\\' || (at(2) == '\'' && at(1) != '\'')) {
            // A char literal ('x', '\n', '\u{7b}'), not a lifetime ('a).
            let mut k = i + 1;
            while k < c.len() && c[k] != '\'' {
                k += if c[k] == '\\' { 2 } else { 1 };
            }
            k + 1
        } else {
            out.push(c[i]);
            i += 1;
            continue;
        };
        let end = end.min(c.len());
        blank(&mut out, &c[i..end]);
        i = end;
    }
    out
}

/// The tokens of code: identifiers, `::`, and single punctuation characters.
fn tokens(code: &str) -> Vec<String> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if c[i].is_alphanumeric() || c[i] == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(c[start..i].iter().collect());
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            out.push("::".to_string());
            i += 2;
        } else {
            if !c[i].is_whitespace() {
                out.push(c[i].to_string());
            }
            i += 1;
        }
    }
    out
}

/// The top-level modules among `known` that `text`, the source of the module
/// at path `at` (e.g. `["config", "validate"]` for `src/config/validate.rs`),
/// names: `crate::m` (or `fastpath::m`), each name of a group `crate::{m, n}`,
/// and `super::` paths, resolved through the file's place and the inline
/// modules (`mod tests { .. }`) around them. Comments and strings left out.
fn used(text: &str, at: &[&str], known: &BTreeSet<String>) -> BTreeSet<String> {
    let t = tokens(&code_only(text));
    let is_ident = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
    };
    let mut out = BTreeSet::new();
    // Inline modules open around the position: (name, brace depth inside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut note = |base: &[String], name: &str| {
        let top = base.first().map_or(name, String::as_str);
        if known.contains(top) {
            out.insert(top.to_string());
        }
    };
    for i in 0..t.len() {
        match t[i].as_str() {
            "{" => {
                depth += 1;
                if i >= 2 && t[i - 2] == "mod" && is_ident(&t[i - 1]) {
                    inline.push((t[i - 1].clone(), depth));
                }
                continue;
            }
            "}" => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                continue;
            }
            _ => {}
        }
        let lead = t[i].as_str();
        if !matches!(lead, "crate" | "fastpath" | "super")
            || t.get(i + 1).map(String::as_str) != Some("::")
            || (i > 0 && t[i - 1] == "::")
        {
            continue;
        }
        // The module the path starts from.
        let mut j = i;
        let base: Vec<String> = if lead == "super" {
            let here: Vec<String> = at
                .iter()
                .map(|s| s.to_string())
                .chain(inline.iter().map(|(n, _)| n.clone()))
                .collect();
            let mut ups = 0;
            while t.get(j).map(String::as_str) == Some("super")
                && t.get(j + 1).map(String::as_str) == Some("::")
            {
                ups += 1;
                j += 2;
            }
            let Some(keep) = here.len().checked_sub(ups) else {
                continue;
            };
            here[..keep].to_vec()
        } else {
            j += 2;
            Vec::new()
        };
        match t.get(j).map(String::as_str) {
            Some("{") => {
                // A group: the first name of each of its items.
                let mut nest = 0;
                let mut head = true;
                for tok in &t[j..] {
                    match tok.as_str() {
                        "{" => {
                            nest += 1;
                            head = nest == 1;
                            continue;
                        }
                        "}" => {
                            nest -= 1;
                            if nest == 0 {
                                break;
                            }
                        }
                        "," if nest == 1 => {
                            head = true;
                            continue;
                        }
                        name if head && nest == 1 && is_ident(name) => {
                            if name == "self" {
                                if let Some(m) = base.first() {
                                    note(&[], m);
                                }
                            } else {
                                note(&base, name);
                            }
                        }
                        _ => {}
                    }
                    head = false;
                }
            }
            Some(name) if is_ident(name) => note(&base, name),
            _ => {
                if let Some(m) = base.first() {
                    note(&[], m);
                }
            }
        }
    }
    out
}

/// The module path of the file `f` under `src`: `config/validate.rs` is
/// `["config", "validate"]`, `config/mod.rs` is `["config"]`.
fn module_path(src: &Path, f: &Path) -> Vec<String> {
    let rel = f.strip_prefix(src).expect("a file under src");
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Module -> the modules it uses.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mods = modules(&src);
    let known: BTreeSet<String> = mods.keys().cloned().collect();
    mods.iter()
        .map(|(name, files)| {
            let mut uses = BTreeSet::new();
            for f in files {
                let text = std::fs::read_to_string(f).expect("read source");
                let at = module_path(&src, f);
                let at: Vec<&str> = at.iter().map(String::as_str).collect();
                uses.extend(used(&text, &at, &known));
            }
            uses.remove(name);
            (name.clone(), uses)
        })
        .collect()
}

/// A cycle through `from`, if any, as the path of modules.
fn cycle_from(g: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut stack = vec![(from.to_string(), vec![from.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in g.get(&at).into_iter().flatten() {
            if next == from {
                let mut p = path.clone();
                p.push(next.clone());
                return Some(p);
            }
            if seen.insert(next.clone()) {
                let mut p = path.clone();
                p.push(next.clone());
                stack.push((next.clone(), p));
            }
        }
    }
    None
}

#[test]
fn no_module_uses_one_that_uses_it() {
    let g = graph();
    assert!(g.len() > 10, "too few modules found: {:?}", g.keys());
    let cycles: Vec<String> = g
        .keys()
        .filter_map(|m| cycle_from(&g, m))
        .map(|p| p.join(" -> "))
        .collect();
    assert!(cycles.is_empty(), "module cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_router_and_the_lifecycle_never_see_the_command_line() {
    let g = graph();
    for m in ["router", "lifecycle", "config"] {
        let uses = &g[m];
        for forbidden in ["cli", "runtime"] {
            assert!(!uses.contains(forbidden), "{m} uses {forbidden}: {uses:?}");
        }
    }
    assert!(!g["lifecycle"].contains("router"), "{:?}", g["lifecycle"]);
    assert!(!g["config"].contains("hook_config"), "{:?}", g["config"]);
}

/// Lines of the control plane's files a reader reads (unit tests aside),
/// and of any one function in them, at most.
const CONTROL_FILE_LINES: usize = 350;
const CONTROL_FN_LINES: usize = 60;

/// `text` up to its unit tests (`#[cfg(test)]`).
fn before_tests(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |at| &text[..at])
}

/// The functions of `text` longer than `max` lines, as "name: n lines".
/// A function runs from its `fn` line to the first line that closes it at
/// the same indent (rustfmt's layout).
fn long_functions(text: &str, max: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let Some(name) = ["fn ", "pub fn ", "pub(super) fn ", "pub(crate) fn "]
            .iter()
            .find_map(|p| body.strip_prefix(p))
        else {
            continue;
        };
        let close = format!("{indent}}}");
        let Some(end) = lines[i..].iter().position(|l| *l == close) else {
            continue;
        };
        if end + 1 > max {
            let name = name.split(['(', '<']).next().unwrap_or(name);
            out.push(format!("{name}: {} lines", end + 1));
        }
    }
    out
}

#[test]
fn the_control_plane_keeps_one_concept_a_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/router/control");
    // The files router/control/mod.rs names, one concept each.
    for f in [
        "mod", "parts", "arp", "icmp", "resolve", "aging", "views", "stats", "changes", "frames",
        "policy", "limiter",
    ] {
        let path = dir.join(format!("{f}.rs"));
        assert!(path.is_file(), "{} is missing", path.display());
    }
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let mut over = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read source");
        let code = before_tests(&text);
        let n = code.lines().count();
        if n > CONTROL_FILE_LINES {
            over.push(format!("{}: {n} lines", f.display()));
        }
        for long in long_functions(code, CONTROL_FN_LINES) {
            over.push(format!("{}: fn {long}", f.display()));
        }
    }
    assert!(
        over.is_empty(),
        "over {CONTROL_FILE_LINES} lines a file or {CONTROL_FN_LINES} a function \
         (split by concept, as router/control/mod.rs says):\n{}",
        over.join("\n")
    );
}

#[test]
fn the_length_reader_finds_long_functions() {
    let text = "impl X {\n    pub(super) fn a(&self) {\n        1;\n        2;\n    }\n\n    fn b() {}\n}\nfn c<T>() {\n    1;\n}\n";
    assert_eq!(long_functions(text, 3), vec!["a: 4 lines".to_string()]);
    assert_eq!(long_functions(text, 2), vec!["a: 4 lines", "c: 3 lines"]);
    assert_eq!(before_tests("a\n#[cfg(test)]\nmod tests {}"), "a\n");
}

fn names(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_reader_finds_uses_and_skips_comments() {
    let known = names(&["cli", "router"]);
    let text = "use crate::cli::AppArgs;\n// crate::router is named here only\nlet x = mycrate::router::y;";
    assert_eq!(used(text, &["ops"], &known), names(&["cli"]));
    let text = "/* crate::cli /* nested */ crate::router */ let s = \"crate::cli\";\n\
                let r = r#\"crate::router \"# ; let c = '\"'; let l: &'static str = \"\";";
    assert_eq!(used(text, &["ops"], &known), names(&[]));
}

#[test]
fn the_reader_finds_groups() {
    let known = names(&["cli", "config", "router", "runtime"]);
    let text = "use crate::{cli, router::Router};";
    assert_eq!(used(text, &["ops"], &known), names(&["cli", "router"]));
    let text =
        "use crate::{\n    config::{a, b::{c, d}},\n    runtime as rt,\n};\nuse fastpath::{self};";
    assert_eq!(used(text, &["ops"], &known), names(&["config", "runtime"]));
}

#[test]
fn the_reader_resolves_super() {
    let known = names(&["cli", "ops", "router"]);
    // From src/ops/http.rs, two levels up is the crate root.
    let text = "use super::super::cli::AppArgs;\nuse super::metrics;";
    assert_eq!(used(text, &["ops", "http"], &known), names(&["cli", "ops"]));
    let text = "use super::super::{cli, router};";
    assert_eq!(
        used(text, &["ops", "http"], &known),
        names(&["cli", "router"])
    );
    // Inside `mod tests`, one more `super` stays in ops; a '}' literal
    // does not close the module early.
    let text = "fn f() {}\n#[cfg(test)]\nmod tests {\n    const C: char = '}';\n    use super::super::router;\n}\n";
    assert_eq!(used(text, &["ops", "http"], &known), names(&["ops"]));
    // After it closes, the same path reaches the crate root again.
    let text = "mod tests { use super::*; }\nuse super::super::router;";
    assert_eq!(
        used(text, &["ops", "http"], &known),
        names(&["ops", "router"])
    );
    // More `super`s than the file is deep: not a module of ours.
    assert_eq!(used("use super::super::cli;", &["ops"], &known), names(&[]));
}

/// The stage files of the datapath (under `src/datapath/`), one a stage.
const STAGE_FILES: [&str; 7] = [
    "l2_input/mod.rs",
    "ingress_hook.rs",
    "ip_input/mod.rs",
    "egress_hook.rs",
    "neigh_output.rs",
    "local.rs",
    "tx.rs",
];

/// Lines of any one datapath function, at most (unit tests aside).
const DATAPATH_FN_LINES: usize = 60;

/// Datapath files the function budget leaves out: test support only.
const DATAPATH_BUDGET_EXEMPT: [&str; 2] = ["testing.rs", "fast_checks.rs"];

/// What breaks the datapath's layout (docs/datapath.md) in the source tree
/// `src`: a `stage/` folder beside `datapath/`; a stage file without the
/// contract's `SPEC` and `run`; a function over the budget; the router
/// re-exporting the datapath.
fn datapath_layout_breaks(src: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if src.join("stage").exists() {
        out.push("src/stage/ exists: stages live in src/datapath/".to_string());
    }
    let dir = src.join("datapath");
    for f in STAGE_FILES {
        let path = dir.join(f);
        let Ok(text) = std::fs::read_to_string(&path) else {
            out.push(format!("{}: missing stage file", path.display()));
            continue;
        };
        let code = code_only(before_tests(&text));
        let has_line = |want: &str| code.lines().any(|l| l.trim_start().starts_with(want));
        if !has_line("pub const SPEC: StageSpec") {
            out.push(format!(
                "{}: no `pub const SPEC: StageSpec`",
                path.display()
            ));
        }
        if !has_line("pub fn run(cx: &mut Cx<'_>)") {
            out.push(format!(
                "{}: no `pub fn run(cx: &mut Cx<'_>)`",
                path.display()
            ));
        }
    }
    let mut files = Vec::new();
    if dir.is_dir() {
        rust_files(&dir, &mut files);
    }
    files.sort();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy();
        if DATAPATH_BUDGET_EXEMPT.contains(&name.as_ref()) {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("read source");
        for long in long_functions(before_tests(&text), DATAPATH_FN_LINES) {
            out.push(format!("{}: fn {long}", f.display()));
        }
    }
    let router = src.join("router/mod.rs");
    let text = std::fs::read_to_string(&router).expect("read router/mod.rs");
    let code = code_only(&text);
    for line in code.lines() {
        let t: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if t.contains("pub use crate::datapath") || t.contains("pub use crate::{datapath") {
            out.push(format!(
                "{}: re-exports the datapath: {}",
                router.display(),
                t
            ));
        }
    }
    out
}

#[test]
fn the_datapath_keeps_the_stage_contract() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let breaks = datapath_layout_breaks(&src);
    assert!(
        breaks.is_empty(),
        "the datapath's layout is broken (docs/datapath.md: one stage a file, \
         each with its SPEC and run, functions within {DATAPATH_FN_LINES} lines):\n{}",
        breaks.join("\n")
    );
}

/// The check above finds each kind of break, in a copy of the files it
/// reads with one break of each kind made.
#[test]
fn the_datapath_check_finds_breaks() {
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let tmp = tempfile::tempdir().expect("temp dir");
    let src = tmp.path();
    for f in STAGE_FILES {
        let to = src.join("datapath").join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(real.join("datapath").join(f), &to).unwrap();
    }
    std::fs::create_dir_all(src.join("router")).unwrap();
    std::fs::copy(real.join("router/mod.rs"), src.join("router/mod.rs")).unwrap();
    assert_eq!(datapath_layout_breaks(src), Vec::<String>::new());

    let edit = |rel: &str, from: &str, to: &str| {
        let p = src.join(rel);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains(from), "{rel} has no {from:?}");
        std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
    };
    std::fs::create_dir_all(src.join("stage")).unwrap();
    edit(
        "datapath/tx.rs",
        "pub const SPEC: StageSpec",
        "pub const SPEC2: StageSpec",
    );
    edit(
        "datapath/local.rs",
        "pub fn run(cx: &mut Cx<'_>)",
        "pub fn run(cx: &mut Cx)",
    );
    let long = format!("\npub fn long() {{\n{}}}\n", "    let _ = 1;\n".repeat(60));
    let p = src.join("datapath/egress_hook.rs");
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, format!("{long}{text}")).unwrap();
    let p = src.join("router/mod.rs");
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, format!("{text}\npub use crate::datapath::Pipeline;\n")).unwrap();

    let breaks = datapath_layout_breaks(src).join("\n");
    for want in [
        "src/stage/ exists",
        "tx.rs: no `pub const SPEC: StageSpec`",
        "local.rs: no `pub fn run(cx: &mut Cx<'_>)`",
        "egress_hook.rs: fn long: 62 lines",
        "re-exports the datapath: pub use crate::datapath::Pipeline;",
    ] {
        assert!(breaks.contains(want), "{want:?} not found in:\n{breaks}");
    }
}
