//! The modules of `app/src/` use one another one way only (docs/code-layout.md):
//! no module uses one that, directly or through others, uses it. Read from the
//! source text: a module "uses" another when its code (comments aside) names
//! `crate::other` (or `fastpath::other`). No DPDK needed.

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

/// The modules among `known` that `text` names as `crate::m` or `fastpath::m`,
/// comments left out.
fn used(text: &str, known: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for lead in ["crate::", "fastpath::"] {
            for (i, _) in code.match_indices(lead) {
                let before = code[..i].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                let name: String = code[i + lead.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if known.contains(&name) {
                    out.insert(name);
                }
            }
        }
    }
    out
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
                uses.extend(used(&text, &known));
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

#[test]
fn the_reader_finds_uses_and_skips_comments() {
    let known: BTreeSet<String> = ["cli", "router"].iter().map(|s| s.to_string()).collect();
    let text = "use crate::cli::AppArgs;\n// crate::router is named here only\nlet x = mycrate::router::y;";
    assert_eq!(used(text, &known), BTreeSet::from(["cli".to_string()]));
}
