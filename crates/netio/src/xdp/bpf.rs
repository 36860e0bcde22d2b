//! The `bpf(2)` commands the tester uses, with raw `syscall(SYS_bpf, …)`:
//! array maps (create, lookup, update, `mmap`), program load (the verifier's
//! log comes back in the error), XDP links and `BPF_PROG_TEST_RUN`
//! (Documentation/bpf/bpf_prog_run.rst). Every fd is an [`OwnedFd`], closed
//! on drop; closing a link fd detaches its program.
//!
//! The attribute structs below are prefixes of the kernel's `union bpf_attr`
//! (include/uapi/linux/bpf.h) with the same offsets; the kernel accepts a
//! shorter attribute and treats the rest as zero.

use std::ffi::c_void;
use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;

use super::asm::Insn;

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_TEST_RUN: libc::c_long = 10;
const BPF_LINK_CREATE: libc::c_long = 28;

const BPF_MAP_TYPE_ARRAY: u32 = 2;
const BPF_PROG_TYPE_XDP: u32 = 6;
/// `enum bpf_attach_type`'s `BPF_XDP`.
const BPF_XDP: u32 = 37;
/// An array map that can be `mmap`ed (kernel ≥ 5.5).
pub(crate) const BPF_F_MMAPABLE: u32 = 1 << 10;
/// `BPF_PROG_TEST_RUN` flag: XDP frames really go out (kernel ≥ 5.18).
pub(crate) const BPF_F_TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;

/// Helper function numbers (`enum bpf_func_id`).
pub(crate) const HELPER_MAP_LOOKUP_ELEM: i32 = 1;
pub(crate) const HELPER_KTIME_GET_NS: i32 = 5;
pub(crate) const HELPER_GET_PRANDOM_U32: i32 = 7;

/// XDP verdicts (`enum xdp_action`).
pub(crate) const XDP_DROP: i32 = 1;
pub(crate) const XDP_PASS: i32 = 2;
pub(crate) const XDP_TX: i32 = 3;

/// `bpf(cmd, attr, sizeof attr)`, returning the non-negative result.
fn sys_bpf<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a valid, writable `#[repr(C)]` prefix of `union
    // bpf_attr` for the whole call, and its size is passed with it; every
    // pointer inside it was set by the callers to live buffers.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut T as *mut c_void,
            size_of::<T>() as libc::c_uint,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn fd_of(r: libc::c_long) -> OwnedFd {
    // SAFETY: the command returned a new descriptor that nothing else owns.
    unsafe { OwnedFd::from_raw_fd(r as i32) }
}

fn name16(name: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (d, s) in out.iter_mut().zip(name.bytes().take(15)) {
        *d = s;
    }
    out
}

#[repr(C)]
#[derive(Default)]
struct MapCreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

#[repr(C)]
struct MapElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// A `BPF_MAP_TYPE_ARRAY` with `u32` keys.
#[derive(Debug)]
pub(crate) struct ArrayMap {
    fd: OwnedFd,
    value_size: usize,
    max_entries: u32,
}

impl ArrayMap {
    /// A new map, every value zero.
    pub(crate) fn create(
        name: &str,
        value_size: u32,
        max_entries: u32,
        flags: u32,
    ) -> io::Result<ArrayMap> {
        let mut attr = MapCreateAttr {
            map_type: BPF_MAP_TYPE_ARRAY,
            key_size: 4,
            value_size,
            max_entries,
            map_flags: flags,
            map_name: name16(name),
            ..Default::default()
        };
        let r = sys_bpf(BPF_MAP_CREATE, &mut attr)
            .map_err(|e| annotate(e, &format!("BPF_MAP_CREATE {name}")))?;
        Ok(ArrayMap {
            fd: fd_of(r),
            value_size: value_size as usize,
            max_entries,
        })
    }

    /// The fd, for `BPF_PSEUDO_MAP_FD` loads in programs.
    pub(crate) fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Reads entry `key` into `value` (exactly `value_size` bytes).
    pub(crate) fn lookup(&self, key: u32, value: &mut [u8]) -> io::Result<()> {
        assert_eq!(value.len(), self.value_size, "value size");
        let mut attr = MapElemAttr {
            map_fd: self.fd.as_raw_fd() as u32,
            _pad: 0,
            key: &key as *const u32 as u64,
            value: value.as_mut_ptr() as u64,
            flags: 0,
        };
        sys_bpf(BPF_MAP_LOOKUP_ELEM, &mut attr).map(drop)
    }

    /// Writes entry `key` (`BPF_ANY`).
    pub(crate) fn update(&self, key: u32, value: &[u8]) -> io::Result<()> {
        assert_eq!(value.len(), self.value_size, "value size");
        let mut attr = MapElemAttr {
            map_fd: self.fd.as_raw_fd() as u32,
            _pad: 0,
            key: &key as *const u32 as u64,
            value: value.as_ptr() as u64,
            flags: 0,
        };
        sys_bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(drop)
    }

    /// Maps a `BPF_F_MMAPABLE` map's values into memory, shared with the
    /// kernel (writes are seen by the programs at once).
    pub(crate) fn mmap(&self) -> io::Result<MapMem> {
        let len = self.value_size * self.max_entries as usize;
        // SAFETY: a fresh shared mapping of the map fd; the kernel checks
        // that the map is mmapable and `len` fits it. Nothing aliases it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                self.fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(annotate(io::Error::last_os_error(), "mmap of a BPF map"));
        }
        Ok(MapMem {
            ptr: NonNull::new(p.cast::<u64>()).expect("mmap never returns NULL here"),
            words: len / 8,
        })
    }
}

/// An `mmap`ed array map of `u64` values; unmapped on drop.
#[derive(Debug)]
pub(crate) struct MapMem {
    ptr: NonNull<u64>,
    words: usize,
}

// SAFETY: the mapping is plain shared memory owned by this value; all
// accesses are volatile word reads/writes through `&self` (the kernel
// writes it concurrently anyway, so no Rust reference to it is ever made).
unsafe impl Send for MapMem {}
// SAFETY: as above.
unsafe impl Sync for MapMem {}

impl MapMem {
    /// Value `i` (a racy snapshot while a program runs).
    pub(crate) fn get(&self, i: usize) -> u64 {
        assert!(i < self.words);
        // SAFETY: `i` is in bounds of the live mapping; volatile because the
        // kernel side writes it behind our back.
        unsafe { self.ptr.as_ptr().add(i).read_volatile() }
    }

    /// Sets value `i`.
    pub(crate) fn set(&self, i: usize, v: u64) {
        assert!(i < self.words);
        // SAFETY: as in `get`.
        unsafe { self.ptr.as_ptr().add(i).write_volatile(v) }
    }
}

impl Drop for MapMem {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `ArrayMap::mmap`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.words * 8) };
    }
}

#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

/// A loaded XDP program.
#[derive(Debug)]
pub(crate) struct Prog {
    fd: OwnedFd,
}

impl Prog {
    /// Loads `insns` as an XDP program (`expected_attach_type` `BPF_XDP`).
    /// A verifier refusal is `InvalidInput` carrying the verifier's log.
    pub(crate) fn load_xdp(name: &str, insns: &[Insn]) -> io::Result<Prog> {
        let code: Vec<[u8; 8]> = insns.iter().map(|i| i.to_bytes()).collect();
        let license = b"GPL\0";
        let mut log = vec![0u8; 1 << 20];
        let mut attr = ProgLoadAttr {
            prog_type: BPF_PROG_TYPE_XDP,
            insn_cnt: code.len() as u32,
            insns: code.as_ptr() as u64,
            license: license.as_ptr() as u64,
            prog_name: name16(name),
            expected_attach_type: BPF_XDP,
            ..Default::default()
        };
        match sys_bpf(BPF_PROG_LOAD, &mut attr) {
            Ok(r) => Ok(Prog { fd: fd_of(r) }),
            Err(e)
                if e.raw_os_error() == Some(libc::EACCES)
                    || e.raw_os_error() == Some(libc::EINVAL) =>
            {
                // Load again with the log on, to say why.
                attr.log_level = 1;
                attr.log_size = log.len() as u32;
                attr.log_buf = log.as_mut_ptr() as u64;
                let again = sys_bpf(BPF_PROG_LOAD, &mut attr);
                if let Ok(r) = again {
                    return Ok(Prog { fd: fd_of(r) });
                }
                let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
                let text = String::from_utf8_lossy(&log[..end]);
                let tail: String = text
                    .lines()
                    .rev()
                    .take(40)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join("\n");
                Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("BPF_PROG_LOAD {name}: {e}; verifier log (end):\n{tail}"),
                ))
            }
            Err(e) => Err(annotate(e, &format!("BPF_PROG_LOAD {name}"))),
        }
    }

    pub(crate) fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }
}

#[repr(C)]
#[derive(Default)]
struct LinkCreateAttr {
    prog_fd: u32,
    target_ifindex: u32,
    attach_type: u32,
    flags: u32,
}

/// An XDP program attached to an interface; detached when dropped.
#[derive(Debug)]
pub(crate) struct Link {
    _fd: OwnedFd,
}

impl Link {
    /// `BPF_LINK_CREATE` with `BPF_XDP` on `ifindex` of the calling thread's
    /// namespace (native mode where the driver has it, as veth does).
    pub(crate) fn xdp(prog: &Prog, ifindex: u32) -> io::Result<Link> {
        let mut attr = LinkCreateAttr {
            prog_fd: prog.raw_fd() as u32,
            target_ifindex: ifindex,
            attach_type: BPF_XDP,
            flags: 0,
        };
        let r = sys_bpf(BPF_LINK_CREATE, &mut attr)
            .map_err(|e| annotate(e, &format!("BPF_LINK_CREATE (XDP) on ifindex {ifindex}")))?;
        Ok(Link { _fd: fd_of(r) })
    }
}

#[repr(C)]
#[derive(Default)]
struct TestRunAttr {
    prog_fd: u32,
    retval: u32,
    data_size_in: u32,
    data_size_out: u32,
    data_in: u64,
    data_out: u64,
    repeat: u32,
    duration: u32,
    ctx_size_in: u32,
    ctx_size_out: u32,
    ctx_in: u64,
    ctx_out: u64,
    flags: u32,
    cpu: u32,
    batch_size: u32,
    _pad: u32,
}

/// `struct xdp_md` as `BPF_PROG_TEST_RUN` takes it for its context.
#[repr(C)]
#[derive(Default)]
struct XdpMd {
    data: u32,
    data_end: u32,
    data_meta: u32,
    ingress_ifindex: u32,
    rx_queue_index: u32,
    egress_ifindex: u32,
}

/// One `BPF_PROG_TEST_RUN` of an XDP program.
pub(crate) struct TestRun<'a> {
    pub(crate) data: &'a [u8],
    /// Where the (possibly rewritten) frame goes; `None` in live mode.
    pub(crate) data_out: Option<&'a mut [u8]>,
    pub(crate) ingress_ifindex: u32,
    pub(crate) repeat: u32,
    pub(crate) flags: u32,
    pub(crate) batch_size: u32,
}

impl Prog {
    /// Runs the program (Documentation/bpf/bpf_prog_run.rst); returns the
    /// last verdict (meaningless in live mode) and the bytes of `data_out`
    /// written. `EINTR` means a signal ended a live run early.
    pub(crate) fn test_run(&self, run: TestRun<'_>) -> io::Result<(u32, usize)> {
        let mut ctx = XdpMd {
            data_end: run.data.len() as u32,
            ingress_ifindex: run.ingress_ifindex,
            ..Default::default()
        };
        let (out_ptr, out_len) = match run.data_out {
            Some(out) => (out.as_mut_ptr() as u64, out.len() as u32),
            None => (0, 0),
        };
        let mut attr = TestRunAttr {
            prog_fd: self.raw_fd() as u32,
            data_size_in: run.data.len() as u32,
            data_size_out: out_len,
            data_in: run.data.as_ptr() as u64,
            data_out: out_ptr,
            repeat: run.repeat,
            ctx_size_in: size_of::<XdpMd>() as u32,
            ctx_in: &mut ctx as *mut XdpMd as u64,
            flags: run.flags,
            batch_size: run.batch_size,
            ..Default::default()
        };
        sys_bpf(BPF_PROG_TEST_RUN, &mut attr)?;
        Ok((attr.retval, attr.data_size_out as usize))
    }
}

/// Adds what was being done to a kernel error, keeping its kind and errno
/// in the message.
pub(crate) fn annotate(e: io::Error, what: &str) -> io::Error {
    let hint = match e.raw_os_error() {
        Some(libc::EPERM) => " (needs root, or CAP_BPF + CAP_NET_ADMIN)",
        _ => "",
    };
    io::Error::new(e.kind(), format!("{what}: {e}{hint}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_layouts_match_union_bpf_attr() {
        // Offsets of include/uapi/linux/bpf.h's union bpf_attr members.
        assert_eq!(size_of::<MapCreateAttr>(), 44);
        assert_eq!(size_of::<MapElemAttr>(), 32);
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, log_buf), 32);
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, prog_name), 48);
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, expected_attach_type), 68);
        assert_eq!(std::mem::offset_of!(TestRunAttr, repeat), 32);
        assert_eq!(std::mem::offset_of!(TestRunAttr, ctx_in), 48);
        assert_eq!(std::mem::offset_of!(TestRunAttr, flags), 64);
        assert_eq!(std::mem::offset_of!(TestRunAttr, batch_size), 72);
        assert_eq!(size_of::<XdpMd>(), 24);
    }
}
