//! The Environment Abstraction Layer: initialised once per process.

use super::DpdkError;
use dpdk_sys as sys;
use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::sync::atomic::{AtomicBool, Ordering};

static EAL_STARTED: AtomicBool = AtomicBool::new(false);

/// A running EAL. Dropping it calls `rte_eal_cleanup`; drop it last, after every
/// port, pool and lcore it served is gone.
#[derive(Debug)]
pub struct Eal {
    /// `rte_pdump_init` succeeded (dpdk-dumpcap may attach): uninit at drop.
    pdump: bool,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Eal {
    /// Initialise EAL from the process arguments (`args[0]` is the program
    /// name). EAL consumes its options up to `--` and the rest is returned:
    /// the program name followed by what came after `--` (the app's options).
    /// EAL may run once per process.
    pub fn init<S: AsRef<str>>(args: &[S]) -> Result<(Eal, Vec<String>), DpdkError> {
        if EAL_STARTED.swap(true, Ordering::SeqCst) {
            return Err(DpdkError {
                what: "rte_eal_init".into(),
                code: libc::EALREADY,
                reason: "EAL was already initialised in this process (it runs once per process)"
                    .into(),
            });
        }
        let owned: Vec<CString> = args
            .iter()
            .map(|a| CString::new(a.as_ref()).unwrap_or_else(|_| CString::from(c"?")))
            .collect();
        // EAL permutes argv and keeps pointers into it, so both the strings and
        // the pointer array are leaked deliberately: they live as long as EAL.
        let owned: &'static [CString] = Box::leak(owned.into_boxed_slice());
        let mut argv: Vec<*mut c_char> = owned.iter().map(|c| c.as_ptr() as *mut c_char).collect();
        argv.push(std::ptr::null_mut());
        let argv: &'static mut [*mut c_char] = Box::leak(argv.into_boxed_slice());
        let argc = argv.len() - 1;
        // SAFETY: argv is a NULL-terminated array of NUL-terminated strings that
        // outlive the process's use of them (leaked above); called once per process.
        let ret = unsafe { sys::rte_eal_init(argc as i32, argv.as_mut_ptr()) };
        if ret < 0 {
            return Err(DpdkError::from_rte_errno("rte_eal_init"));
        }
        // EAL parsed `ret` arguments and put the program name in argv[ret]
        // (where `--` was, if there was one): the app's arguments start there.
        let parsed = (ret as usize).min(argc);
        let rest = argv[parsed..argc]
            .iter()
            .map(|&p| {
                // SAFETY: every non-null entry below argc points into `owned`
                // (EAL only permutes the pointers), a NUL-terminated string.
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            })
            .collect::<Vec<_>>();
        let mut rest = rest;
        if parsed == argc || rest.is_empty() {
            rest = vec![args
                .first()
                .map(|a| a.as_ref().to_string())
                .unwrap_or_default()];
        }
        // dpdk-dumpcap attaches through pdump; without it fastpath still runs.
        let pdump = match super::pdump::init() {
            Ok(()) => true,
            Err(e) => {
                eprintln!("fastpath: dpdk-dumpcap cannot attach: {e}");
                false
            }
        };
        Ok((
            Eal {
                pdump,
                _not_send: std::marker::PhantomData,
            },
            rest,
        ))
    }

    /// Number of Ethernet ports DPDK probed (PCI devices and `--vdev`s).
    pub fn port_count(&self) -> u16 {
        // SAFETY: a read of ethdev's port table, valid after EAL init.
        unsafe { sys::rte_eth_dev_count_avail() }
    }

    /// The DPDK version string of the running library, e.g. `DPDK 22.11.11`.
    pub fn version(&self) -> String {
        // SAFETY: rte_version returns a pointer to a static string.
        unsafe { CStr::from_ptr(sys::rte_version()) }
            .to_string_lossy()
            .into_owned()
    }

    /// EAL's runtime folder of this process (`/var/run/dpdk/<file prefix>`
    /// for root): where its sockets live.
    pub fn runtime_dir(&self) -> std::path::PathBuf {
        // SAFETY: returns a pointer to EAL's static, NUL-terminated path,
        // set during init.
        let dir = unsafe { CStr::from_ptr(sys::rte_eal_get_runtime_dir()) };
        std::path::PathBuf::from(dir.to_string_lossy().into_owned())
    }

    /// Socket (NUMA node) of the calling lcore.
    pub fn socket_id(&self) -> i32 {
        // SAFETY: reads the calling thread's per-lcore socket id.
        unsafe { sys::rte_socket_id() as i32 }
    }
}

impl Drop for Eal {
    fn drop(&mut self) {
        if self.pdump {
            super::pdump::uninit();
        }
        // SAFETY: reads the process type EAL set at init.
        let primary = unsafe { sys::rte_eal_process_type() } == sys::RTE_PROC_PRIMARY;
        let dir = self.runtime_dir();
        // A primary without a shared config (--in-memory, --no-shconf) owns
        // nothing there: the folder may be another primary's of that prefix.
        let owned = primary && holds_config_lock(&dir);
        // SAFETY: every DPDK object of this process was released before the Eal
        // (the owner drops it last); EAL is not used afterwards.
        unsafe {
            sys::rte_eal_cleanup();
        }
        if owned {
            remove_runtime_dir(&dir);
        }
    }
}

/// Whether this process holds the lock on `dir/config`, as the primary that
/// created the folder's shared config does while it runs (`/proc/locks`:
/// `ID: POSIX ADVISORY WRITE PID MAJOR:MINOR:INODE START END`).
fn holds_config_lock(dir: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(config) = std::fs::metadata(dir.join("config")) else {
        return false;
    };
    let me = std::process::id().to_string();
    let Ok(locks) = std::fs::read_to_string("/proc/locks") else {
        return false;
    };
    locks.lines().any(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        w.windows(2).any(|p| {
            p[0] == me
                && p[1].rsplit(':').next().and_then(|i| i.parse::<u64>().ok()) == Some(config.ino())
        })
    })
}

/// What a primary process's EAL leaves in its runtime folder after
/// `rte_eal_cleanup`: the shared config, the memory segment and memzone
/// arrays, the hugepage sizes, and the telemetry sockets (unlinked only by
/// an `atexit` handler, after this). The multi-process socket and
/// fastpath's control socket are gone by then.
fn left_by_primary(name: &str) -> bool {
    matches!(
        name,
        "config" | "hugepage_info" | "dpdk_telemetry.v2" | "telemetry"
    ) || name.starts_with("fbarray_")
}

/// Remove the runtime folder of a primary process that has cleaned up, so
/// that a run leaves nothing in `/var/run/dpdk`.
///
/// Safe because what is removed only serves processes attached to this
/// primary: EAL keeps these files so that secondaries (dpdk-dumpcap,
/// dpdk-proc-info) can attach, and each works only through the primary's
/// multi-process channel, closed by now; a secondary still attached keeps
/// its mappings and descriptors (unlinking a file does not unmap it). It
/// runs only when this process holds the lock on `config`
/// ([`holds_config_lock`]; EAL releases it only at exit), and `config` goes
/// last, so no other primary can own the folder meanwhile: one starting
/// under the same prefix fails on the lock until then.
/// The telemetry sockets go early too: a client that connected between now
/// and the exit would be answered from a torn-down EAL.
/// Only the files listed in [`left_by_primary`] are removed, then the folder
/// if it is empty: a secondary's socket keeps it, and so does a bind mount
/// of it (a container's runtime folder, shared with the host).
fn remove_runtime_dir(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut names: Vec<std::ffi::OsString> = entries
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .filter(|n| n.to_str().is_some_and(left_by_primary))
        .collect();
    names.sort_by_key(|n| n == "config");
    for name in names {
        let path = dir.join(&name);
        if let Err(e) = std::fs::remove_file(&path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                eprintln!("fastpath: cannot remove {}: {e}", path.display());
            }
        }
    }
    // Not empty (a secondary's socket) or a mount point: it stays.
    let _ = std::fs::remove_dir(dir);
}
