//! Finds DPDK with pkg-config, generates bindings with bindgen, and compiles the
//! C shim that makes DPDK's `static inline` fast-path functions callable from Rust
//! under their own names.

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
    "rte_lpm_.*",
    "rte_acl_.*",
    "rte_seqlock_.*",
    "fastpath_.*",
];

const TYPES: &[&str] = &["rte_.*", "RTE_.*"];
const VARS: &[&str] = &[
    "RTE_.*",
    "RING_F_.*",
    "rte_eth_fp_ops",
    "rte_mempool_ops_table",
];

fn main() {
    println!("cargo:rerun-if-changed=src/wrapper.h");
    println!("cargo:rerun-if-changed=src/shim.c");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");

    let dpdk = match pkg_config::Config::new()
        .atleast_version(MIN_DPDK)
        .cargo_metadata(true)
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
        .blocklist_function("rte_.*dump.*")
        .blocklist_function("rte_lpm_lookupx4")
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
