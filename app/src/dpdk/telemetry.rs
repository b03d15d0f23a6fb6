//! The server side of DPDK telemetry: commands of our own (`/fastpath/...`)
//! on EAL's telemetry socket, answered on DPDK's telemetry thread, so that
//! the stock `dpdk-telemetry.py` and `fastpath health` can ask them.
//!
//! A command is a plain Rust function from its parameter to a [`Tel`] value;
//! the one C callback registered for every command finds that function by
//! the command's name and turns its value into DPDK's `rte_tel_data`.
//! DPDK 22.11 has no way to remove a command: registration is once per
//! process, and a handler answers from whatever state is current.

use super::DpdkError;
use dpdk_sys as sys;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::{OnceLock, RwLock};

/// A reply, shaped as DPDK 22.11's telemetry library can carry it: a dict
/// or a list at the top; inside, scalars and one more level of dicts or
/// lists of scalars (deeper containers are not rendered by 22.11). Strings
/// and names are cut to 127 bytes; a dict holds at most 256 entries, a list
/// 512 (more are left off); a whole reply is at most 16 KiB of JSON.
#[derive(Clone, Debug, PartialEq)]
pub enum Tel {
    U64(u64),
    Str(String),
    Dict(Vec<(String, Tel)>),
    ListU64(Vec<u64>),
    ListStr(Vec<String>),
    /// A list of dicts of scalars (only at the top of a reply).
    ListDict(Vec<Vec<(String, Tel)>>),
}

impl Tel {
    /// An empty dict.
    pub fn dict() -> Tel {
        Tel::Dict(Vec::new())
    }

    /// Add `key: value` to a dict (ignored for other kinds).
    pub fn put(&mut self, key: impl Into<String>, value: Tel) -> &mut Self {
        if let Tel::Dict(v) = self {
            v.push((key.into(), value));
        }
        self
    }

    /// Add `key: n`.
    pub fn put_u64(&mut self, key: impl Into<String>, n: u64) -> &mut Self {
        self.put(key, Tel::U64(n))
    }

    /// Add `key: "s"`.
    pub fn put_str(&mut self, key: impl Into<String>, s: impl Into<String>) -> &mut Self {
        self.put(key, Tel::Str(s.into()))
    }
}

/// A command's answer from its parameter (the text after the first `,`).
pub type Handler = fn(&str) -> Tel;

/// Most bytes DPDK 22.11 keeps of a name or string value (with its NUL).
const MAX_STRING: usize = sys::RTE_TEL_MAX_STRING_LEN as usize;

fn handlers() -> &'static RwLock<BTreeMap<String, Handler>> {
    static HANDLERS: OnceLock<RwLock<BTreeMap<String, Handler>>> = OnceLock::new();
    HANDLERS.get_or_init(|| RwLock::new(BTreeMap::new()))
}

/// Register `cmd` (e.g. `/fastpath/stats`) with its one-line `help`, to be
/// answered by `handler`. Registering a command again replaces its handler
/// (DPDK keeps the first registration, which dispatches by name).
pub fn register(cmd: &str, help: &str, handler: Handler) -> Result<(), DpdkError> {
    let mut map = handlers().write().unwrap_or_else(|p| p.into_inner());
    if map.insert(cmd.to_string(), handler).is_some() {
        return Ok(());
    }
    let bad = |reason: &str| DpdkError {
        what: format!("registering telemetry command {cmd}"),
        code: libc::EINVAL,
        reason: reason.to_string(),
    };
    let c_cmd = CString::new(cmd).map_err(|_| bad("a NUL in the name"))?;
    let c_help = CString::new(help).map_err(|_| bad("a NUL in the help"))?;
    // SAFETY: both strings are NUL-terminated and live across the call
    // (DPDK copies them into its own table); `dispatch` is an `extern "C"`
    // function of the callback's signature that lives for the process.
    let ret =
        unsafe { sys::rte_telemetry_register_cmd(c_cmd.as_ptr(), Some(dispatch), c_help.as_ptr()) };
    if ret != 0 {
        map.remove(cmd);
        return Err(DpdkError::from_ret(
            format!("rte_telemetry_register_cmd({cmd})"),
            ret,
        ));
    }
    Ok(())
}

/// The callback DPDK calls, on its telemetry thread, for every command of
/// ours: find the handler by `cmd`, run it, and fill `data`.
extern "C" fn dispatch(
    cmd: *const c_char,
    params: *const c_char,
    data: *mut sys::rte_tel_data,
) -> c_int {
    if cmd.is_null() || data.is_null() {
        return -libc::EINVAL;
    }
    // SAFETY: DPDK passes the command as a NUL-terminated string that lives
    // for the call.
    let cmd = unsafe { CStr::from_ptr(cmd) }
        .to_string_lossy()
        .into_owned();
    let params = if params.is_null() {
        String::new()
    } else {
        // SAFETY: as `cmd`: NUL-terminated, alive for the call.
        unsafe { CStr::from_ptr(params) }
            .to_string_lossy()
            .into_owned()
    };
    let handler = handlers()
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(&cmd)
        .copied();
    let Some(handler) = handler else {
        return -libc::EINVAL;
    };
    // A panic must not unwind into C.
    let Ok(value) = std::panic::catch_unwind(|| handler(&params)) else {
        return -libc::EIO;
    };
    let mut out = TelData(data);
    out.fill_top(&value);
    0
}

/// An `rte_tel_data` being filled: the reply DPDK handed us, or a container
/// we allocated and hand over to it.
struct TelData(*mut sys::rte_tel_data);

/// A NUL-terminated copy of `s`, cut to what DPDK keeps, at a char boundary.
fn c_string(s: &str) -> CString {
    let mut end = s.len().min(MAX_STRING - 1);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    CString::new(s[..end].replace('\0', " ")).unwrap_or_default()
}

impl TelData {
    /// Fill the reply itself: a dict or a list of any kind.
    fn fill_top(&mut self, v: &Tel) {
        match v {
            Tel::ListDict(items) => {
                // SAFETY: `self.0` is the valid, empty reply DPDK gave us.
                unsafe { sys::rte_tel_data_start_array(self.0, sys::RTE_TEL_CONTAINER) };
                for d in items {
                    let Some(child) = TelData::alloc() else {
                        return;
                    };
                    child.fill_dict(d);
                    // SAFETY: both are valid; keep = 0 hands `child` over:
                    // DPDK frees it with the reply once it took it.
                    let ret = unsafe { sys::rte_tel_data_add_array_container(self.0, child.0, 0) };
                    if ret != 0 {
                        child.free();
                    }
                }
            }
            Tel::Dict(d) => self.fill_dict(d),
            Tel::ListU64(_) | Tel::ListStr(_) => self.fill_list(v),
            Tel::U64(_) | Tel::Str(_) => {
                let mut d = Tel::dict();
                d.put("value", v.clone());
                self.fill_top(&d);
            }
        }
    }

    /// A fresh container, or `None` when DPDK has no memory for one.
    fn alloc() -> Option<TelData> {
        // SAFETY: a plain allocation; null on failure.
        let p = unsafe { sys::rte_tel_data_alloc() };
        (!p.is_null()).then_some(TelData(p))
    }

    /// Free a container DPDK refused (a full parent, too deep a nesting).
    fn free(self) {
        // SAFETY: `self.0` came from rte_tel_data_alloc and nothing else
        // owns it: the parent refused it.
        unsafe { sys::rte_tel_data_free(self.0) };
    }

    fn fill_list(&mut self, v: &Tel) {
        match v {
            Tel::ListU64(xs) => {
                // SAFETY: `self.0` is a valid, unstarted rte_tel_data.
                unsafe { sys::rte_tel_data_start_array(self.0, sys::RTE_TEL_U64_VAL) };
                for x in xs {
                    // SAFETY: a started u64 array; DPDK refuses past its limit.
                    unsafe { sys::rte_tel_data_add_array_u64(self.0, *x) };
                }
            }
            Tel::ListStr(xs) => {
                // SAFETY: as above.
                unsafe { sys::rte_tel_data_start_array(self.0, sys::RTE_TEL_STRING_VAL) };
                for x in xs {
                    let s = c_string(x);
                    // SAFETY: a started string array; `s` is NUL-terminated
                    // and DPDK copies it.
                    unsafe { sys::rte_tel_data_add_array_string(self.0, s.as_ptr()) };
                }
            }
            _ => {}
        }
    }

    fn fill_dict(&self, entries: &[(String, Tel)]) {
        // SAFETY: `self.0` is a valid, unstarted rte_tel_data.
        unsafe { sys::rte_tel_data_start_dict(self.0) };
        for (k, v) in entries {
            let name = c_string(k);
            match v {
                Tel::U64(n) => {
                    // SAFETY: a started dict; `name` is NUL-terminated and
                    // copied by DPDK, which refuses entries past its limit.
                    unsafe { sys::rte_tel_data_add_dict_u64(self.0, name.as_ptr(), *n) };
                }
                Tel::Str(s) => {
                    let s = c_string(s);
                    // SAFETY: as above; `s` is NUL-terminated and copied.
                    unsafe { sys::rte_tel_data_add_dict_string(self.0, name.as_ptr(), s.as_ptr()) };
                }
                Tel::Dict(_) | Tel::ListU64(_) | Tel::ListStr(_) => {
                    let Some(mut child) = TelData::alloc() else {
                        return;
                    };
                    match v {
                        Tel::Dict(d) => child.fill_dict(d),
                        _ => child.fill_list(v),
                    }
                    // SAFETY: both valid; keep = 0 hands `child` to DPDK,
                    // which frees it with the reply once it took it.
                    let ret = unsafe {
                        sys::rte_tel_data_add_dict_container(self.0, name.as_ptr(), child.0, 0)
                    };
                    if ret != 0 {
                        child.free();
                    }
                }
                Tel::ListDict(_) => {
                    let Some(mut child) = TelData::alloc() else {
                        return;
                    };
                    child.fill_top(v);
                    // SAFETY: as above.
                    let ret = unsafe {
                        sys::rte_tel_data_add_dict_container(self.0, name.as_ptr(), child.0, 0)
                    };
                    if ret != 0 {
                        child.free();
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_cut_at_a_char_boundary() {
        let s = "é".repeat(100);
        let c = c_string(&s);
        assert!(c.as_bytes().len() < MAX_STRING);
        assert!(std::str::from_utf8(c.as_bytes()).is_ok());
    }

    #[test]
    fn dict_builder_keeps_order() {
        let mut d = Tel::dict();
        d.put_u64("b", 2).put_str("a", "x");
        assert_eq!(
            d,
            Tel::Dict(vec![
                ("b".into(), Tel::U64(2)),
                ("a".into(), Tel::Str("x".into()))
            ])
        );
    }
}
