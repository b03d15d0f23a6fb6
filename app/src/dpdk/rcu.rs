//! DPDK's quiescent-state-based reclamation (`rte_rcu_qsbr`): the workers'
//! one reclamation domain, the grace periods after which memory the workers
//! may still read is reused.
//!
//! Each worker has a [`QsbrReader`] and reports a quiescent state once per
//! poll loop, between bursts, where it holds nothing it looked up. Every
//! writer shares the one variable: the FIB's writer (next hops and ECMP
//! member lists, and the reuse of the LPM's tbl8 groups, see
//! `LpmWriter::add`), the neighbour table's (reclaimed slots) and the
//! hook publisher (replaced hook sets, through
//! [`hooks::grace::GracePeriods`]). A writer takes a [`Qsbr::start`] token
//! after it unpublished something and reuses it once [`Qsbr::passed`] says
//! every online reader reported since. The report also tells the worker
//! whether a grace period started since its last one: only then can a new
//! hook set have been published.

use super::DpdkError;
use dpdk_sys as sys;
use std::ptr::NonNull;
use std::sync::Arc;

/// A QSBR variable for up to `threads` readers, in DPDK memory.
#[derive(Debug)]
pub struct Qsbr {
    raw: NonNull<sys::rte_rcu_qsbr>,
    threads: u32,
}

// SAFETY: the variable is made for concurrent use: readers write only their
// own counters, the writer's calls use atomics (rte_rcu_qsbr.h).
unsafe impl Send for Qsbr {}
// SAFETY: as above.
unsafe impl Sync for Qsbr {}

impl Qsbr {
    /// A variable for reader ids `0..threads` (at least 1).
    pub fn new(threads: u32) -> Result<Arc<Qsbr>, DpdkError> {
        let threads = threads.max(1);
        // SAFETY: a size computation, no memory touched.
        let size = unsafe { sys::rte_rcu_qsbr_get_memsize(threads) };
        if size == 0 {
            return Err(DpdkError::from_rte_errno(format!(
                "sizing an RCU QSBR variable for {threads} readers"
            )));
        }
        // SAFETY: a plain allocation; the result is checked for null.
        let mem = unsafe { sys::rte_zmalloc(c"worker_qsbr".as_ptr(), size, 64) };
        let raw = NonNull::new(mem.cast::<sys::rte_rcu_qsbr>())
            .ok_or_else(|| DpdkError::from_rte_errno("allocating an RCU QSBR variable"))?;
        // SAFETY: raw points to `size` zeroed bytes, what init expects.
        let ret = unsafe { sys::rte_rcu_qsbr_init(raw.as_ptr(), threads) };
        if ret != 0 {
            // SAFETY: allocated above, not shared yet.
            unsafe { sys::rte_free(mem) };
            return Err(DpdkError::from_rte_errno(
                "initialising an RCU QSBR variable",
            ));
        }
        Ok(Arc::new(Qsbr { raw, threads }))
    }

    /// Register reader `id` (below `threads`) and put it online: from now on
    /// grace periods wait for its reports, until it is dropped.
    pub fn reader(self: &Arc<Self>, id: u32) -> Result<QsbrReader, DpdkError> {
        if id >= self.threads {
            return Err(DpdkError {
                what: format!("RCU QSBR reader {id}"),
                code: libc::EINVAL,
                reason: format!("the variable holds {} readers", self.threads),
            });
        }
        // SAFETY: id is in range; the variable is initialised.
        let ret = unsafe { sys::rte_rcu_qsbr_thread_register(self.raw.as_ptr(), id) };
        if ret != 0 {
            return Err(DpdkError::from_rte_errno(format!(
                "registering RCU QSBR reader {id}"
            )));
        }
        // SAFETY: registered just above.
        unsafe { sys::rte_rcu_qsbr_thread_online(self.raw.as_ptr(), id) };
        Ok(QsbrReader {
            qsbr: self.clone(),
            id,
        })
    }

    /// Start a grace period: what was unpublished before this call is no
    /// longer seen by any reader once [`passed`](Self::passed) says so.
    pub fn start(&self) -> u64 {
        // SAFETY: the variable is initialised; start only increments its token.
        unsafe { sys::rte_rcu_qsbr_start(self.raw.as_ptr()) }
    }

    /// Whether every online reader reported a quiescent state since `token`
    /// was started. Never waits.
    pub fn passed(&self, token: u64) -> bool {
        // SAFETY: non-blocking check (wait = false) of an initialised variable.
        unsafe { sys::rte_rcu_qsbr_check(self.raw.as_ptr(), token, false) == 1 }
    }
}

/// The hooks crate's view of the domain (it knows no DPDK): the hook
/// publisher starts a grace period with each new hook set, the neighbour
/// table reuses a reclaimed slot once one passed.
impl hooks::grace::GracePeriods for Qsbr {
    fn start(&self) -> u64 {
        Qsbr::start(self)
    }

    fn passed(&self, token: u64) -> bool {
        Qsbr::passed(self, token)
    }
}

impl Drop for Qsbr {
    fn drop(&mut self) {
        // SAFETY: the last reference: no reader and no LPM table uses it any more.
        unsafe { sys::rte_free(self.raw.as_ptr().cast()) }
    }
}

/// One reader of a [`Qsbr`]: a worker. Offline and unregistered when dropped,
/// so a stopped worker never holds a grace period up.
#[derive(Debug)]
pub struct QsbrReader {
    qsbr: Arc<Qsbr>,
    id: u32,
}

impl QsbrReader {
    /// Report a quiescent state: this reader holds nothing it looked up
    /// before. Returns whether a grace period started since this reader's
    /// last report (or since it came online): only then can a writer have
    /// published something the worker must take anew (a hook set). Two
    /// loads when nothing started; call once per poll loop.
    #[inline(always)]
    pub fn quiescent(&self) -> bool {
        // SAFETY: the reader is registered and online (see Qsbr::reader);
        // the helper is rte_rcu_qsbr_quiescent with its result.
        unsafe { sys::fastpath_rcu_qsbr_quiescent(self.qsbr.raw.as_ptr(), self.id) != 0 }
    }
}

impl Drop for QsbrReader {
    fn drop(&mut self) {
        let v = self.qsbr.raw.as_ptr();
        // SAFETY: registered and online since Qsbr::reader; each call once.
        unsafe {
            sys::rte_rcu_qsbr_thread_offline(v, self.id);
            sys::rte_rcu_qsbr_thread_unregister(v, self.id);
        }
    }
}
