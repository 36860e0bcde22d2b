//! The sending side: an XDP program run by `BPF_PROG_TEST_RUN` in live-frames
//! mode (`BPF_F_TEST_XDP_LIVE_FRAMES`, kernel ≥ 5.18;
//! Documentation/bpf/bpf_prog_run.rst, "Running XDP programs in 'live frame
//! mode'"): the kernel runs the program `repeat` times over pages holding the
//! frame template and transmits every frame the program returns `XDP_TX` for
//! out of `ctx.ingress_ifindex`.
//!
//! Pacing is done inside the program: each run reads `bpf_ktime_get_ns()`
//! and returns `XDP_DROP` (nothing sent, a few tens of ns) until frame `seq`
//! is due, then writes the tag's `seq`, `tx_ns`, `adjust` (and with RFC 4814
//! §4.5 pseudorandom ports the two port words) and returns `XDP_TX`. The
//! kernel does not re-initialise a page's data when it recycles it, so the
//! program writes every varying field each time.
//!
//! The checksum is never recomputed: `adjust` (tag bytes 4..6) is chosen so
//! the ones'-complement sum of the rewritten words equals the template's
//! (RFC 1071 §2(B), RFC 1624 §3), where `adjust`, `seq`, `tx_ns` are 0. An
//! IPv4 template with UDP checksum 0 (none) stays 0.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;
use std::time::Duration;

use super::asm::{Alu, Asm, Cond, Size, R0, R1, R10, R2, R3, R4, R5, R6, R7, R8, R9};
use super::bpf::{
    ArrayMap, Prog, TestRun, BPF_F_TEST_XDP_LIVE_FRAMES, HELPER_GET_PRANDOM_U32,
    HELPER_KTIME_GET_NS, HELPER_MAP_LOOKUP_ELEM, XDP_DROP, XDP_TX,
};
use super::rx::TAG_LEN;
use super::{Schedule, TxConfig, TxStats};
use crate::clock::mono_ns;

/// Segments a schedule may have.
pub const MAX_SEGMENTS: usize = 16;

const T_SEQ: i16 = 0;
const T_SEG: i16 = 4;
const T_MAX_LATE: i16 = 8;
const T_TOTAL: i16 = 16;
const T_SEGS: i16 = 32;
const SEG_LEN: i32 = 24;
const SEG_FIRST: i16 = T_SEGS;
const SEG_FRAMES: i16 = T_SEGS + 4;
const SEG_INTERVAL_PS: i16 = T_SEGS + 8;
const SEG_BASE_NS: i16 = T_SEGS + 16;
const STATE_VALUE: u32 = T_SEGS as u32 + MAX_SEGMENTS as u32 * SEG_LEN as u32;

/// Frames per batch of the live loop (the kernel's maximum is 256; 64 is
/// its NAPI-like default).
const BATCH: u32 = 64;

/// The TX program for one template (offsets baked in as immediates).
fn program(state: i32, cfg: &TxConfig) -> Asm {
    let tag = cfg.tag_offset as i16;
    let l4 = cfg.l4_offset as i16;
    let mut a = Asm::new();
    a.mov(R6, R1);
    a.st_imm(Size::W, R10, -4, 0);
    a.ld_map_fd(R1, state)
        .mov(R2, R10)
        .alu_imm(Alu::Add, R2, -4);
    a.call(HELPER_MAP_LOOKUP_ELEM);
    a.jmp_imm(Cond::Eq, R0, 0, "drop");
    a.mov(R7, R0);
    a.ldx(Size::W, R8, R7, T_SEQ);
    a.ldx(Size::W, R1, R7, T_TOTAL);
    a.jmp(Cond::Ge, R8, R1, "drop");
    // r9 = &segments[seg & 15] - T_SEGS (bounded variable offset).
    a.ldx(Size::W, R9, R7, T_SEG);
    a.alu_imm(Alu::And, R9, MAX_SEGMENTS as i32 - 1)
        .alu_imm(Alu::Mul, R9, SEG_LEN);
    a.alu(Alu::Add, R9, R7);
    a.ldx(Size::W, R2, R9, SEG_FIRST)
        .ldx(Size::W, R3, R9, SEG_FRAMES);
    a.alu(Alu::Add, R3, R2);
    a.jmp(Cond::Lt, R8, R3, "in_segment");
    a.ldx(Size::W, R1, R7, T_SEG)
        .alu_imm(Alu::Add, R1, 1)
        .stx(Size::W, R7, T_SEG, R1);
    a.ja("drop");

    // due = base_ns + (seq − first) · interval_ps / 1000.
    a.label("in_segment");
    a.call(HELPER_KTIME_GET_NS);
    a.mov(R1, R8)
        .ldx(Size::W, R2, R9, SEG_FIRST)
        .alu(Alu::Sub, R1, R2);
    a.ldx(Size::DW, R3, R9, SEG_INTERVAL_PS)
        .alu(Alu::Mul, R1, R3);
    a.alu_imm(Alu::Div, R1, 1000);
    a.ldx(Size::DW, R3, R9, SEG_BASE_NS).alu(Alu::Add, R1, R3);
    a.mov(R9, R0); // r9 = now
    a.jmp(Cond::Lt, R0, R1, "drop");
    a.alu(Alu::Sub, R0, R1);
    a.ldx(Size::DW, R2, R7, T_MAX_LATE);
    a.jmp(Cond::Le, R0, R2, "late_done");
    a.stx(Size::DW, R7, T_MAX_LATE, R0);
    a.label("late_done");

    let orig_ports = if cfg.rfc4814_ports {
        // RFC 4814 §4.5: source 1024..=65535, destination 1..=49151.
        // One random word a port (wire::testframe::rfc4814_ports).
        a.call(HELPER_GET_PRANDOM_U32);
        a.alu_imm(Alu::Mod, R0, 64512);
        a.alu_imm(Alu::Add, R0, 1024).stx(Size::DW, R10, -16, R0);
        a.call(HELPER_GET_PRANDOM_U32);
        a.alu_imm(Alu::Mod, R0, 49151);
        a.alu_imm(Alu::Add, R0, 1).stx(Size::DW, R10, -24, R0);
        let word = |i: usize| u32::from(u16::from_be_bytes([cfg.frame[i], cfg.frame[i + 1]]));
        fold(word(cfg.l4_offset) + word(cfg.l4_offset + 2))
    } else {
        0
    };

    a.ldx(Size::W, R2, R6, 0).ldx(Size::W, R3, R6, 4);
    a.mov(R4, R2)
        .alu_imm(Alu::Add, R4, i32::from(tag) + TAG_LEN);
    a.jmp(Cond::Gt, R4, R3, "drop");
    restore_headers(&mut a, &cfg.frame[..cfg.tag_offset + 4]);
    // r5 = Σ of the new 16-bit words; write seq and tx_ns big-endian.
    a.mov(R5, R8).alu_imm(Alu::Rsh, R5, 16);
    a.mov(R4, R8)
        .alu_imm(Alu::And, R4, 0xffff)
        .alu(Alu::Add, R5, R4);
    a.mov(R1, R8).bswap_be(R1, 32).stx(Size::W, R2, tag + 6, R1);
    for shift in [0, 16, 32, 48] {
        a.mov(R4, R9)
            .alu_imm(Alu::Rsh, R4, shift)
            .alu_imm(Alu::And, R4, 0xffff);
        a.alu(Alu::Add, R5, R4);
    }
    a.mov(R1, R9)
        .bswap_be(R1, 64)
        .stx(Size::DW, R2, tag + 10, R1);
    if cfg.rfc4814_ports {
        for (slot, off) in [(-16, l4), (-24, l4 + 2)] {
            a.ldx(Size::DW, R1, R10, slot).alu(Alu::Add, R5, R1);
            a.bswap_be(R1, 16).stx(Size::H, R2, off, R1);
        }
    }
    // adjust = orig + ~new (ones' complement, 16 bits).
    fold_r5(&mut a);
    a.alu_imm(Alu::Xor, R5, 0xffff)
        .alu_imm(Alu::Add, R5, orig_ports as i32);
    fold_r5(&mut a);
    a.bswap_be(R5, 16).stx(Size::H, R2, tag + 4, R5);
    a.alu_imm(Alu::Add, R8, 1).stx(Size::W, R7, T_SEQ, R8);
    a.mov_imm(R0, XDP_TX).exit();
    a.label("drop");
    a.mov_imm(R0, XDP_DROP).exit();
    a
}

/// Writes `head` (the template's bytes before the tag, and the tag's magic, stream
/// and flags) over the frame at `r2`, as immediates: the kernel hands a live-frames
/// page back to the pool with whatever the frame's last holder wrote into it, and a
/// device that forwards in place (a kernel router: a new Ethernet header, TTL − 1 and
/// the IPv4 checksum; a NAT: addresses, ports, checksums) would otherwise have its
/// own egress header sent back to it. Seen: a kernel device dropped every frame after
/// the pool's first 128 pages as addressed to another host. Clobbers `r1`.
fn restore_headers(a: &mut Asm, head: &[u8]) {
    let mut chunks = head.chunks_exact(8);
    let mut off = 0i16;
    for c in &mut chunks {
        let word = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        a.ld_imm64(R1, word).stx(Size::DW, R2, off, R1);
        off += 8;
    }
    let mut rest = chunks.remainder();
    for (size, len) in [(Size::W, 4), (Size::H, 2), (Size::B, 1)] {
        if rest.len() >= len {
            let mut b = [0u8; 4];
            b[..len].copy_from_slice(&rest[..len]);
            a.st_imm(size, R2, off, i32::from_le_bytes(b));
            off += len as i16;
            rest = &rest[len..];
        }
    }
}

/// Two end-around-carry folds of r5 to 16 bits (enough below 2^32).
fn fold_r5(a: &mut Asm) {
    for _ in 0..2 {
        a.mov(R4, R5).alu_imm(Alu::Rsh, R4, 16);
        a.alu_imm(Alu::And, R5, 0xffff).alu(Alu::Add, R5, R4);
    }
}

fn fold(mut s: u32) -> u32 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s
}

/// A frame generator for one template on one port; see [`Generator::run`].
#[derive(Debug)]
pub struct Generator {
    prog: Prog,
    state: ArrayMap,
    frame: Vec<u8>,
    tag_offset: usize,
    ifindex: u32,
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

impl Generator {
    pub(super) fn new(ifindex: u32, cfg: &TxConfig) -> io::Result<Generator> {
        let n = cfg.frame.len();
        if !(14..=3000).contains(&n) {
            return Err(invalid(format!("frame of {n} bytes: 14..=3000 allowed")));
        }
        if cfg.tag_offset + TAG_LEN as usize > n || cfg.l4_offset + 8 > cfg.tag_offset {
            return Err(invalid(format!(
                "tag at {} and UDP header at {} do not fit a {n}-byte frame",
                cfg.tag_offset, cfg.l4_offset
            )));
        }
        let t = cfg.tag_offset;
        let tag = &cfg.frame[t..t + TAG_LEN as usize];
        if tag[..3] != [0x25, 0x44, cfg.stream] || tag[4..].iter().any(|&b| b != 0) {
            return Err(invalid(format!(
                "the template's tag must be magic 0x2544, stream {}, adjust/seq/tx_ns 0 \
                 (the checksum trick relies on it): {tag:02x?}",
                cfg.stream
            )));
        }
        let state = ArrayMap::create("dp_tx_state", STATE_VALUE, 1, 0)?;
        let prog = Prog::load_xdp("dp_tx", &program(state.raw_fd(), cfg).finish())?;
        Ok(Generator {
            prog,
            state,
            frame: cfg.frame.clone(),
            tag_offset: t,
            ifindex,
        })
    }

    /// Writes a fresh state for `sched`; returns the total of frames.
    fn arm(&self, sched: &Schedule) -> io::Result<u32> {
        let segs: Vec<_> = sched.segments.iter().filter(|s| s.frames > 0).collect();
        if segs.len() > MAX_SEGMENTS {
            return Err(invalid(format!(
                "{} segments, at most {MAX_SEGMENTS}",
                segs.len()
            )));
        }
        let mut v = vec![0u8; STATE_VALUE as usize];
        let (mut first, mut offset_ps) = (0u64, 0u128);
        for (i, s) in segs.iter().enumerate() {
            let span_ps = u128::from(s.frames) * u128::from(s.interval_ps);
            if span_ps > u128::from(u64::MAX) {
                return Err(invalid(format!("segment {i} spans more than 2^64 ps")));
            }
            let at = T_SEGS as usize + i * SEG_LEN as usize;
            let base = u128::from(sched.start_ns) + offset_ps / 1000;
            v[at..at + 4].copy_from_slice(&(first as u32).to_ne_bytes());
            v[at + 4..at + 8].copy_from_slice(&s.frames.to_ne_bytes());
            v[at + 8..at + 16].copy_from_slice(&s.interval_ps.to_ne_bytes());
            v[at + 16..at + 24].copy_from_slice(&(base as u64).to_ne_bytes());
            first += u64::from(s.frames);
            offset_ps += span_ps;
            if first > u64::from(u32::MAX) {
                return Err(invalid("more than 2^32 − 1 frames in a schedule".into()));
            }
        }
        v[T_TOTAL as usize..T_TOTAL as usize + 4].copy_from_slice(&(first as u32).to_ne_bytes());
        self.state.update(0, &v)?;
        Ok(first as u32)
    }

    fn read_state(&self) -> io::Result<(u32, u64)> {
        let mut v = vec![0u8; STATE_VALUE as usize];
        self.state.lookup(0, &mut v)?;
        let seq = u32::from_ne_bytes(v[0..4].try_into().expect("4 bytes"));
        let late = u64::from_ne_bytes(v[8..16].try_into().expect("8 bytes"));
        Ok((seq, late))
    }

    /// Sends the schedule's frames: blocks the calling thread in ONE
    /// `BPF_PROG_TEST_RUN` (live frames, `repeat` = `u32::MAX`, batches of
    /// 64) paced by the program. A scoped watcher thread polls the state
    /// every millisecond and, once every frame is sent or `deadline_ns`
    /// (`CLOCK_MONOTONIC`) has passed, interrupts the run with a signal
    /// (`SIGRTMIN + 4`, a no-op handler installed without `SA_RESTART`): the
    /// live loop checks `signal_pending` between batches and the call
    /// returns `EINTR`, the normal end. Counters live in maps, so nothing
    /// is lost. Frame `i` of segment `s` is due at `start_ns` + the earlier
    /// segments' spans + `i · interval`; `seq` runs on across segments
    /// from 0.
    ///
    /// Must run on a thread in the port's network namespace (the kernel
    /// resolves `ingress_ifindex` in the caller's). Each call has a fixed
    /// cost of about 25 ms (23–32 ms measured on kernel 6.18, a 2-CPU VM,
    /// by `ceiling_of_64_byte_frames_on_one_cpu` in tests/xdp.rs: the
    /// kernel's page pool set-up and teardown) on top of the schedule, plus
    /// up to 1 ms for the watcher to notice the end: start the schedule
    /// some 30 ms after calling, or its first frames leave late (in a
    /// burst, catching up).
    pub fn run(&mut self, sched: &Schedule, deadline_ns: u64) -> io::Result<TxStats> {
        let total = self.arm(sched)?;
        install_handler();
        // SAFETY: pthread_self has no preconditions.
        let me = unsafe { libc::pthread_self() };
        let finished = AtomicBool::new(false);
        let state = &self.state;
        let result = std::thread::scope(|scope| {
            scope.spawn(|| watch(state, me, total, deadline_ns, &finished));
            let r = self.live_loop(total, deadline_ns);
            finished.store(true, Ordering::Release);
            r
        });
        result?;
        let (seq, late) = self.read_state()?;
        Ok(TxStats {
            sent: u64::from(seq),
            max_lateness_ns: late,
        })
    }

    fn live_loop(&self, total: u32, deadline_ns: u64) -> io::Result<()> {
        loop {
            let run = TestRun {
                data: &self.frame,
                data_out: None,
                ingress_ifindex: self.ifindex,
                repeat: u32::MAX,
                flags: BPF_F_TEST_XDP_LIVE_FRAMES,
                batch_size: BATCH,
            };
            match self.prog.test_run(run) {
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => return Ok(()),
                Err(e) => return Err(super::bpf::annotate(e, "BPF_PROG_TEST_RUN (live frames)")),
                // `repeat` runs exhausted before the end: go on.
                Ok(_) => {
                    if self.read_state()?.0 >= total || mono_ns() >= deadline_ns {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Runs the program without sending (`BPF_PROG_TEST_RUN` without live
    /// frames, one run per call, the state armed from `sched`) until it has
    /// produced `n` frames or the schedule is done; returns those frames as
    /// they would have left. For checking the tag, ports and checksum
    /// without a network; use a `start_ns` in the past. Each run starts from
    /// a page whose bytes before the tag's `adjust` are scrambled, as a
    /// recycled live-frames page may hold a device's rewrite of them: what
    /// comes out must be the template again.
    pub fn preview(&mut self, sched: &Schedule, n: usize) -> io::Result<Vec<Vec<u8>>> {
        let total = self.arm(sched)?;
        let mut page = self.frame.clone();
        let head = self.tag_offset + 4;
        for b in &mut page[..head] {
            *b ^= 0x5a;
        }
        let mut frames = Vec::new();
        let mut out = vec![0u8; self.frame.len() + 256];
        for _ in 0..n * 2 + MAX_SEGMENTS + 2 {
            if frames.len() == n || self.read_state()?.0 >= total {
                break;
            }
            let run = TestRun {
                data: &page,
                data_out: Some(&mut out),
                ingress_ifindex: 0,
                repeat: 1,
                flags: 0,
                batch_size: 0,
            };
            let (verdict, len) = self.prog.test_run(run)?;
            if verdict == XDP_TX as u32 {
                frames.push(out[..len].to_vec());
            }
        }
        Ok(frames)
    }
}

/// Interrupts thread `runner` once the run is over, repeating every
/// millisecond until it has returned (a signal landing just before the
/// syscall starts would otherwise be lost).
fn watch(
    state: &ArrayMap,
    runner: libc::pthread_t,
    total: u32,
    deadline_ns: u64,
    finished: &AtomicBool,
) {
    let mut v = vec![0u8; STATE_VALUE as usize];
    let mut over = false;
    while !finished.load(Ordering::Acquire) {
        if !over {
            let seq = match state.lookup(0, &mut v) {
                Ok(()) => u32::from_ne_bytes(v[0..4].try_into().expect("4 bytes")),
                Err(_) => total,
            };
            over = seq >= total || mono_ns() >= deadline_ns;
        }
        if over {
            // SAFETY: `runner` is alive: it is inside `thread::scope`, which
            // does not return before this thread ends.
            unsafe { libc::pthread_kill(runner, stop_signal()) };
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn stop_signal() -> libc::c_int {
    libc::SIGRTMIN() + 4
}

extern "C" fn on_stop_signal(_: libc::c_int) {}

/// Installs the no-op handler (once per process) and unblocks the signal on
/// the calling thread, in case the caller's runtime blocked it.
fn install_handler() {
    let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises `set`; pthread_sigmask reads it and
    // changes only this thread's mask.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), stop_signal());
        libc::pthread_sigmask(libc::SIG_UNBLOCK, set.as_ptr(), std::ptr::null_mut());
    }
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: a zeroed sigaction is valid; the handler is a no-op
        // `extern "C"` function, async-signal-safe; no SA_RESTART, so the
        // interrupted bpf(2) returns EINTR.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_stop_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = 0;
            libc::sigaction(stop_signal(), &sa, std::ptr::null_mut());
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_is_ones_complement() {
        assert_eq!(fold(0x1_fffe), 0xffff);
        assert_eq!(fold(0x2_0001), 0x0003);
        assert_eq!(fold(0), 0);
    }

    #[test]
    fn the_program_assembles_for_both_port_modes() {
        for ports in [false, true] {
            let cfg = TxConfig {
                frame: vec![0; 60],
                l4_offset: 34,
                tag_offset: 42,
                stream: 0,
                v6: false,
                rfc4814_ports: ports,
            };
            assert!(program(3, &cfg).finish().len() > 50);
        }
    }

    #[test]
    fn templates_without_a_clean_tag_are_refused_before_any_syscall() {
        let mut frame = vec![0u8; 60];
        frame[42..45].copy_from_slice(&[0x25, 0x44, 5]);
        let ok = TxConfig {
            frame,
            l4_offset: 34,
            tag_offset: 42,
            stream: 5,
            v6: false,
            rfc4814_ports: false,
        };
        let mut bad = Vec::new();
        for (at, v) in [(42, 0x26), (44, 6), (48, 1), (59, 1)] {
            let mut c = ok.clone();
            c.frame[at] = v;
            bad.push(c);
        }
        bad.push(TxConfig {
            tag_offset: 43,
            ..ok.clone()
        });
        bad.push(TxConfig {
            l4_offset: 36,
            ..ok.clone()
        });
        bad.push(TxConfig {
            frame: vec![0; 10],
            ..ok.clone()
        });
        for c in bad {
            let e = Generator::new(1, &c).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        }
    }
}
