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
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Eal {
    /// Initialise EAL from `args` (the program name first, then EAL options only:
    /// the part of the command line before `--`). EAL may run once per process.
    pub fn init<S: AsRef<str>>(args: &[S]) -> Result<Eal, DpdkError> {
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
        // EAL may permute and keep pointers into argv, so both the strings and
        // the pointer array are leaked deliberately: they live as long as EAL.
        let owned: &'static [CString] = Box::leak(owned.into_boxed_slice());
        let mut argv: Vec<*mut c_char> = owned.iter().map(|c| c.as_ptr() as *mut c_char).collect();
        argv.push(std::ptr::null_mut());
        let argv: &'static mut [*mut c_char] = Box::leak(argv.into_boxed_slice());
        let argc = (argv.len() - 1) as i32;
        // SAFETY: argv is a NULL-terminated array of NUL-terminated strings that
        // outlive the process's use of them (leaked above); called once per process.
        let ret = unsafe { sys::rte_eal_init(argc, argv.as_mut_ptr()) };
        if ret < 0 {
            return Err(DpdkError::from_rte_errno("rte_eal_init"));
        }
        Ok(Eal {
            _not_send: std::marker::PhantomData,
        })
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

    /// Socket (NUMA node) of the calling lcore.
    pub fn socket_id(&self) -> i32 {
        // SAFETY: reads the calling thread's per-lcore socket id.
        unsafe { sys::rte_socket_id() as i32 }
    }
}

impl Drop for Eal {
    fn drop(&mut self) {
        // SAFETY: every DPDK object of this process was released before the Eal
        // (the owner drops it last); EAL is not used afterwards.
        unsafe {
            sys::rte_eal_cleanup();
        }
    }
}
