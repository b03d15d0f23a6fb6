//! Finds DPDK with pkg-config, generates bindings with bindgen, and compiles the
//! C shim that makes DPDK's `static inline` fast-path functions callable from Rust
//! under their own names.
//!
//! By default it links the system's shared DPDK (`libdpdk.pc`, e.g. Debian's
//! `libdpdk-dev`); EAL then loads the drivers as plugins. With
//! `FASTPATH_DPDK_PREFIX=DIR` (a prefix that `meson-deps/build-dpdk` installed)
//! it links that DPDK statically: `pkg-config --static` output becomes link
//! lines, with the drivers and mempool ops whole-archive so that the
//! constructors that register them are kept.

use std::env;
use std::path::PathBuf;

/// The oldest DPDK we build against: the 22.11 LTS line (any patch release).
const MIN_DPDK: &str = "22.11";

/// Functions we bind. DPDK's fast path is mostly `static inline`; the ones matched
/// here get a C wrapper in the shim (bindgen's `wrap_static_fns`).
const FUNCTIONS: &[&str] = &[
    "rte_eal_.*",
    "rte_exit",
    "rte_strerror",
    "rte_version",
    "rte_lcore_.*",
    "rte_get_.*lcore.*",
    "rte_get_tsc_hz",
    "rte_rdtsc",
    "rte_rdtsc_precise",
    "rte_get_tsc_cycles",
    "rte_delay_us_block",
    "rte_socket_id",
    "rte_pause",
    "rte_prefetch0",
    "rte_prefetch1",
    "rte_malloc.*",
    "rte_zmalloc.*",
    "rte_free",
    "rte_mempool_.*",
    "rte_pktmbuf_.*",
    "rte_mbuf_.*",
    "rte_eth_.*",
    "rte_dev_.*",
    "rte_vdev_.*",
    "rte_ring_.*",
    "rte_rib_get_nxt",
    "rte_lpm6_.*",
    "rte_fib_.*",
    "rte_rcu_qsbr_.*",
    "rte_acl_.*",
    "rte_seqlock_.*",
    "rte_tel_data_.*",
    "rte_telemetry_register_cmd",
    // So that the stock dpdk-dumpcap can attach (librte_pdump).
    "rte_pdump_init",
    "rte_pdump_uninit",
    "fastpath_.*",
];

const TYPES: &[&str] = &["rte_.*", "RTE_.*"];
const VARS: &[&str] = &[
    "RTE_.*",
    "RING_F_.*",
    "rte_eth_fp_ops",
    "rte_mempool_ops_table",
];

/// The prefix of a static DPDK to link instead of the system's shared one.
const PREFIX_VAR: &str = "FASTPATH_DPDK_PREFIX";

fn main() {
    println!("cargo:rerun-if-changed=src/wrapper.h");
    println!("cargo:rerun-if-changed=src/shim.c");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed={PREFIX_VAR}");
    println!("cargo:rustc-check-cfg=cfg(dpdk_static)");

    let static_prefix = static_prefix();
    let dpdk = match pkg_config::Config::new()
        .atleast_version(MIN_DPDK)
        .cargo_metadata(static_prefix.is_none())
        .probe("libdpdk")
    {
        Ok(lib) => lib,
        Err(e) => {
            eprintln!(
                "\nerror: DPDK >= {MIN_DPDK} was not found by pkg-config (libdpdk.pc).\n\
                 Install it with `apt-get install libdpdk-dev dpdk dpdk-dev` (Debian 12), or build \
                 the pinned DPDK under meson-deps/ and point PKG_CONFIG_PATH at its \
                 lib/x86_64-linux-gnu/pkgconfig folder.\npkg-config said: {e}\n"
            );
            std::process::exit(1);
        }
    };
    println!("cargo:version={}", dpdk.version);
    let version = dpdk.version.clone();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    println!("cargo:rustc-env=FASTPATH_DPDK_VERSION={version}");
    println!("cargo:rustc-check-cfg=cfg(dpdk_ge_23_11)");
    if (major, minor) >= (23, 11) {
        println!("cargo:rustc-cfg=dpdk_ge_23_11");
    }

    // The full compiler flags DPDK was built with (include paths, `-include
    // rte_config.h`, `-march=...`): the shim must match DPDK's own ABI choices.
    let cflags = pkg_config_cflags();
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let wrap_c = out.join("static_fns.c");

    let mut builder = bindgen::Builder::default()
        .header("src/wrapper.h")
        .clang_args(cflags.iter())
        .allowlist_recursively(true)
        .derive_default(true)
        .derive_debug(true)
        .layout_tests(true)
        .generate_comments(false)
        .prepend_enum_name(false)
        .default_enum_style(bindgen::EnumVariation::Consts)
        // DPDK marks a few packed structs that contain aligned members; Rust
        // refuses such layouts, so they stay opaque blobs of the right size.
        .opaque_type("rte_arp_hdr")
        .opaque_type("rte_arp_ipv4")
        .opaque_type("rte_l2tpv2_combined_msg_hdr")
        .opaque_type("rte_gtp_psc_generic_hdr")
        .opaque_type("rte_gtp_psc_type0_hdr")
        .opaque_type("rte_gtp_psc_type1_hdr")
        .opaque_type("rte_flow_item_l2tpv2")
        .opaque_type("rte_flow_item_gtp_psc")
        .opaque_type("rte_flow_item_arp_eth_ipv4")
        .blocklist_function("rte_eal_vfio_.*")
        .blocklist_function("rte_mempool_ops_.*")
        .blocklist_function("rte_.*_trace.*")
        .blocklist_function("rte_lcore_dump")
        // The dump functions take a FILE*; rte_pdump_* are not of them.
        .blocklist_function("rte_.*_dump.*")
        .clang_macro_fallback()
        .wrap_static_fns(true)
        .wrap_static_fns_path(&wrap_c)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for f in FUNCTIONS {
        builder = builder.allowlist_function(f);
    }
    for t in TYPES {
        builder = builder.allowlist_type(t);
    }
    for v in VARS {
        builder = builder.allowlist_var(v);
    }
    let bindings = builder.generate().unwrap_or_else(|e| {
        eprintln!("error: bindgen failed on DPDK {version}'s headers: {e}");
        std::process::exit(1);
    });
    bindings
        .write_to_file(out.join("bindings.rs"))
        .expect("write bindings.rs");

    // The shim: bindgen's wrappers of the static inline functions plus our own
    // for macros, compiled with DPDK's flags at -O3 (same -march as DPDK).
    let mut cc = cc::Build::new();
    cc.file(&wrap_c)
        .file("src/shim.c")
        .include(env::current_dir().expect("cwd"))
        .opt_level(3)
        .warnings(false)
        .flag_if_supported("-Wno-deprecated-declarations");
    for flag in &cflags {
        cc.flag(flag);
    }
    // The generated file includes the wrapper header by relative path.
    cc.flag("-include").flag("src/wrapper.h");
    cc.compile("fastpath_dpdk_shim");

    // After the shim, which calls into them: a static archive must come after
    // its users on the link line.
    let mut pmd_info = Vec::new();
    if let Some(prefix) = &static_prefix {
        println!("cargo:rustc-cfg=dpdk_static");
        println!("cargo:static=1");
        pmd_info = emit_static_links(prefix);
    }
    write_static_pmd_info(&out.join("static_pmds.rs"), &pmd_info);
}

/// The `PMD_INFO_STRING` records of the drivers linked in, as a Rust constant:
/// the linker's section GC drops them from the binary itself, so the list of
/// drivers a static build carries is taken here, from the archives.
fn write_static_pmd_info(path: &std::path::Path, records: &[String]) {
    let mut text =
        String::from("/// The drivers' `PMD_INFO_STRING` JSON records (static builds).\n");
    text.push_str("pub const STATIC_PMD_INFO: &[&str] = &[\n");
    for r in records {
        text.push_str(&format!("    {r:?},\n"));
    }
    text.push_str("];\n");
    std::fs::write(path, text).expect("write static_pmds.rs");
}

/// Every `PMD_INFO_STRING= {json}` record in an archive.
fn pmd_records(archive: &std::path::Path) -> Vec<String> {
    const MARKER: &[u8] = b"PMD_INFO_STRING= ";
    let Ok(bytes) = std::fs::read(archive) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = bytes[at..].windows(MARKER.len()).position(|w| w == MARKER) {
        let start = at + i + MARKER.len();
        let len = bytes[start..]
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(bytes.len() - start);
        out.push(String::from_utf8_lossy(&bytes[start..start + len]).into_owned());
        at = start + len;
    }
    out
}

/// `FASTPATH_DPDK_PREFIX`, checked: its pkg-config folder goes first on
/// `PKG_CONFIG_PATH` so that every probe below finds that DPDK.
fn static_prefix() -> Option<PathBuf> {
    let prefix = PathBuf::from(env::var_os(PREFIX_VAR)?);
    let pc_dir = prefix.join("lib/pkgconfig");
    let pc = pc_dir.join("libdpdk.pc");
    if !pc.is_file() {
        eprintln!(
            "\nerror: {PREFIX_VAR}={} has no lib/pkgconfig/libdpdk.pc.\n\
             Build it with `meson-deps/build-dpdk --prefix {}` (or unset {PREFIX_VAR} \
             to link the system's shared DPDK).\n",
            prefix.display(),
            prefix.display()
        );
        std::process::exit(1);
    }
    println!("cargo:rerun-if-changed={}", pc.display());
    let mut path =
        env::split_paths(&env::var_os("PKG_CONFIG_PATH").unwrap_or_default()).collect::<Vec<_>>();
    path.insert(0, pc_dir);
    env::set_var(
        "PKG_CONFIG_PATH",
        env::join_paths(path).expect("PKG_CONFIG_PATH"),
    );
    Some(prefix)
}

/// Turn `pkg-config --static --libs libdpdk` into cargo link lines: archives
/// between `--whole-archive` and `--no-whole-archive` (the drivers) keep every
/// object; the other DPDK archives are plain static libraries in the order
/// pkg-config gives (users before what they use); the rest are system libraries.
/// Returns the PMD records of the whole-archive drivers.
fn emit_static_links(prefix: &std::path::Path) -> Vec<String> {
    let out = std::process::Command::new("pkg-config")
        .args(["--static", "--libs", "libdpdk"])
        .output()
        .expect("run pkg-config --static --libs libdpdk");
    assert!(
        out.status.success(),
        "pkg-config --static --libs libdpdk failed"
    );
    let libs = String::from_utf8(out.stdout).expect("utf-8 libs");
    let libdir = prefix.join("lib");
    let (links, whole) = static_link_lines(&libs, &libdir);
    for line in links {
        println!("{line}");
    }
    whole
        .iter()
        .flat_map(|name| pmd_records(&libdir.join(format!("lib{name}.a"))))
        .collect()
}

/// The link lines for one `pkg-config --static --libs` output (see above), and
/// the archives linked whole.
fn static_link_lines(libs: &str, libdir: &std::path::Path) -> (Vec<String>, Vec<String>) {
    let mut search = Vec::new();
    // (name, whole-archive) of our archives, last occurrence wins its place.
    let mut archives: Vec<(String, bool)> = Vec::new();
    let mut system: Vec<String> = Vec::new();
    let mut whole = false;
    for word in libs.split_whitespace() {
        match word {
            "-Wl,--whole-archive" => whole = true,
            "-Wl,--no-whole-archive" => whole = false,
            "-pthread" => push_once(&mut system, "pthread".into()),
            w if w.starts_with("-L") => push_once(&mut search, w[2..].to_string()),
            w if w.starts_with("-l:") => {
                let file = &w[3..];
                let name = file
                    .strip_prefix("lib")
                    .and_then(|f| f.strip_suffix(".a"))
                    .unwrap_or(file)
                    .to_string();
                add_archive(&mut archives, name, whole);
            }
            w if w.starts_with("-l") => {
                let name = w[2..].to_string();
                if libdir.join(format!("lib{name}.a")).is_file() {
                    add_archive(&mut archives, name, whole);
                } else {
                    push_once(&mut system, name);
                }
            }
            // --as-needed, --export-dynamic, ...: not needed for a static link.
            _ => {}
        }
    }
    let mut lines: Vec<String> = search
        .iter()
        .map(|d| format!("cargo:rustc-link-search=native={d}"))
        .collect();
    for (name, whole) in &archives {
        let modifiers = if *whole {
            "+whole-archive,-bundle"
        } else {
            "-bundle"
        };
        lines.push(format!("cargo:rustc-link-lib=static:{modifiers}={name}"));
    }
    for name in system.iter().filter(|n| linker_finds(n)) {
        lines.push(format!("cargo:rustc-link-lib={name}"));
    }
    let whole = archives
        .into_iter()
        .filter(|(_, w)| *w)
        .map(|(n, _)| n)
        .collect();
    (lines, whole)
}

/// Whether the C compiler finds `lib<name>.so` (or `.a`). pkg-config's static
/// list carries the private dependencies of libraries we link shared (libpcap's
/// libsystemd and libdbus, say); those need not be installed, and are left out.
fn linker_finds(name: &str) -> bool {
    if matches!(name, "pthread" | "m" | "dl" | "rt") {
        return true;
    }
    ["so", "a"].iter().any(|ext| {
        let file = format!("lib{name}.{ext}");
        std::process::Command::new("cc")
            .arg(format!("-print-file-name={file}"))
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() != file)
            .unwrap_or(true)
    })
}

fn add_archive(archives: &mut Vec<(String, bool)>, name: String, whole: bool) {
    let was_whole = match archives.iter().position(|(n, _)| *n == name) {
        Some(i) => archives.remove(i).1,
        None => false,
    };
    archives.push((name, whole || was_whole));
}

fn push_once(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

fn pkg_config_cflags() -> Vec<String> {
    let out = std::process::Command::new("pkg-config")
        .args(["--cflags", "libdpdk"])
        .output()
        .expect("run pkg-config --cflags libdpdk");
    assert!(out.status.success(), "pkg-config --cflags libdpdk failed");
    let s = String::from_utf8(out.stdout).expect("utf-8 cflags");
    // `-include rte_config.h` is two words that must stay together.
    let mut flags = Vec::new();
    let mut words = s.split_whitespace();
    while let Some(w) = words.next() {
        if w == "-include" {
            if let Some(next) = words.next() {
                flags.push(format!("-include{next}"));
            }
        } else {
            flags.push(w.to_string());
        }
    }
    flags
}
