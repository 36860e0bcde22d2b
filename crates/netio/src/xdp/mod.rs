//! The kernel side of the RFC 2544 tester (`dualperf rfc2544`): XDP programs
//! that send paced, tagged test frames and count them on arrival, at
//! millions of frames per second on one CPU.
//!
//! - [`TesterPort::open`] attaches the receive program natively to
//!   an interface (`BPF_LINK_CREATE`, `BPF_XDP`; detached on drop). It
//!   counts the tester's frames per stream and drops them; everything else
//!   goes on to the stack (`XDP_PASS`), so ARP and ND keep working.
//! - [`TesterPort::generator`] loads the send program for one frame
//!   template; [`Generator::run`] runs it with `BPF_PROG_TEST_RUN` in
//!   live-frames mode (Documentation/bpf/bpf_prog_run.rst): frames leave the
//!   port as if the program had returned `XDP_TX` in a driver.
//!
//! Measured on a veth pair (kernel 6.18, a 2-CPU VM, both programs on one
//! CPU since the receiving veth's NAPI runs in the sender's softirq): 3.4–4.7
//! Mpps of 64-byte frames sent and counted (lower while builds shared the
//! machine), against 0.55 Mpps for `trafgen --cpus 1` (AF_PACKET) on the
//! same pair. At that ceiling one run of three lost 0.02 % in the veth's
//! ring; paced runs below it lost nothing.
//!
//! A veth takes XDP-transmitted frames only when its peer has NAPI on (an
//! XDP program attached, or GRO on): a tester port's peer needs one.
//!
//! Frames carry the 18-byte tag of `wire::testframe` at the start of the
//! UDP payload, big-endian: magic 0x2544, stream u8, flags u8, adjust u16,
//! seq u32, tx_ns u64 (`CLOCK_MONOTONIC`, `bpf_ktime_get_ns`).
//!
//! Everything here needs root (or `CAP_BPF` + `CAP_NET_ADMIN`) and a thread
//! in the port's network namespace ([`crate::netns::enter`]); the fds keep
//! their namespace afterwards.

mod asm;
mod bpf;
mod gen;
mod rx;

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::OnceLock;

use bpf::{ArrayMap, Link, MapMem, Prog, TestRun, BPF_F_MMAPABLE, BPF_F_TEST_XDP_LIVE_FRAMES};
pub use gen::{Generator, MAX_SEGMENTS};
pub use rx::TAG_BANKS;
use rx::{STREAMS, STREAM_VALUE};

/// How a port is set up.
#[derive(Clone, Debug)]
pub struct PortConfig {
    /// Tagged latency slots per stream (RFC 8219 §7.2 wants ≥ 500 tagged
    /// frames per trial); [`TAG_BANKS`] streams hold them at once.
    pub max_tags: u32,
}

impl Default for PortConfig {
    fn default() -> Self {
        PortConfig { max_tags: 65536 }
    }
}

/// What the receive program counts until the next [`TesterPort::arm_rx`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxConfig {
    /// Streams counted; frames of any other stream are dropped uncounted.
    /// The first [`TAG_BANKS`] of them get tagged latency slots.
    pub streams: Vec<u8>,
    /// Frames with `seq < first_seq` are the ramp: counted as `ramp` only.
    pub first_seq: u32,
    /// A frame with latency above this counts as late, not received.
    pub timeout_ns: u64,
    /// Every `tag_every`-th frame from `first_seq` fills a tag slot; a power
    /// of two.
    pub tag_every: u32,
}

/// One stream's counts (RFC 2544 §26; latency per RFC 8219 §7.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxStats {
    /// Frames of the trial (seq ≥ first_seq) on time.
    pub received: u64,
    /// Frames of the trial later than the timeout.
    pub late: u64,
    /// Ramp frames (seq < first_seq).
    pub ramp: u64,
    /// Smallest latency of a received frame (0 if none).
    pub min_ns: u64,
    /// Largest latency of a received frame.
    pub max_ns: u64,
    /// Sum of the received frames' latencies.
    pub sum_ns: u64,
    /// Received frames whose seq was below the highest seen before them.
    pub reordered: u64,
    /// Frames with a bad checksum: 0, checksums are not checked.
    pub bad_checksum: u64,
}

/// The frame a [`Generator`] sends.
#[derive(Clone, Debug)]
pub struct TxConfig {
    /// The frame without FCS: tag `seq`, `tx_ns`, `adjust` 0, checksums valid.
    pub frame: Vec<u8>,
    /// Offset of the UDP header.
    pub l4_offset: usize,
    /// Offset of the tag.
    pub tag_offset: usize,
    /// The stream number (already in the template's tag).
    pub stream: u8,
    /// IPv6 (informational: the offsets say where things are).
    pub v6: bool,
    /// RFC 4814 §4.5 pseudorandom ports per frame: source 1024..=65535,
    /// destination 1..=49151, from a `bpf_get_prandom_u32` each, by `%`
    /// (`wire::testframe::rfc4814_ports`).
    pub rfc4814_ports: bool,
}

/// A run of frames at one rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Frames in the segment.
    pub frames: u32,
    /// Time between frames, picoseconds.
    pub interval_ps: u64,
}

/// When frames leave: segments (ramp steps, then the trial) back to back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// `CLOCK_MONOTONIC` ns of frame 0.
    pub start_ns: u64,
    /// At most [`MAX_SEGMENTS`] segments with frames (empty ones skipped).
    pub segments: Vec<Segment>,
}

/// What a [`Generator::run`] sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxStats {
    /// Frames sent (every ramp and trial frame when the run completed).
    pub sent: u64,
    /// How late the worst frame left against its slot.
    pub max_lateness_ns: u64,
}

/// One tester port: an interface of the calling thread's network namespace
/// with the receive program attached.
#[derive(Debug)]
pub struct TesterPort {
    ifindex: u32,
    mac: [u8; 6],
    max_tags: u32,
    streams: ArrayMap,
    _tags: ArrayMap,
    tag_mem: MapMem,
    _link: Link,
    _prog: Prog,
}

impl TesterPort {
    /// Loads the receive program and attaches it to `ifname` (native XDP,
    /// `BPF_LINK_CREATE`; detached when the port is dropped). No stream is
    /// armed yet.
    pub fn open(ifname: &str, cfg: &PortConfig) -> io::Result<TesterPort> {
        if cfg.max_tags == 0 || cfg.max_tags > 1 << 24 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("max_tags {}: 1..=2^24", cfg.max_tags),
            ));
        }
        let ifindex = ifindex(ifname)?;
        let mac = hwaddr(ifname)?;
        let streams = ArrayMap::create("dp_rx_streams", STREAM_VALUE, STREAMS, 0)?;
        let tags = ArrayMap::create("dp_rx_tags", 8, TAG_BANKS * cfg.max_tags, BPF_F_MMAPABLE)?;
        let tag_mem = tags.mmap()?;
        let insns = rx::program(streams.raw_fd(), tags.raw_fd(), cfg.max_tags).finish();
        let prog = Prog::load_xdp("dp_rx", &insns)?;
        let link = Link::xdp(&prog, ifindex)?;
        Ok(TesterPort {
            ifindex,
            mac,
            max_tags: cfg.max_tags,
            streams,
            _tags: tags,
            tag_mem,
            _link: link,
            _prog: prog,
        })
    }

    /// The interface index (in the port's namespace).
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// The interface's MAC address (`SIOCGIFHWADDR`, read at open).
    pub fn mac(&self) -> io::Result<[u8; 6]> {
        Ok(self.mac)
    }

    /// Arms `rx.streams` with zeroed counters and tag slots and disarms every
    /// other stream (their counters stay readable, their tags do not). Call
    /// while no test traffic flows.
    pub fn arm_rx(&self, rx: &RxConfig) -> io::Result<()> {
        if !rx.tag_every.is_power_of_two() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("tag_every {} is not a power of two", rx.tag_every),
            ));
        }
        let mut v = vec![0u8; STREAM_VALUE as usize];
        for s in 0..STREAMS {
            let Some(pos) = rx.streams.iter().position(|&x| u32::from(x) == s) else {
                self.streams.lookup(s, &mut v)?;
                if get32(&v, rx::S_ARMED) != 0 || get32(&v, rx::S_BANK) != u32::MAX {
                    put32(&mut v, rx::S_ARMED, 0);
                    put32(&mut v, rx::S_BANK, u32::MAX);
                    self.streams.update(s, &v)?;
                }
                continue;
            };
            v.fill(0);
            put64(&mut v, rx::S_MIN, u64::MAX);
            put64(&mut v, rx::S_TIMEOUT, rx.timeout_ns);
            put32(&mut v, rx::S_FIRST_SEQ, rx.first_seq);
            put32(&mut v, rx::S_TAG_MASK, rx.tag_every - 1);
            put32(&mut v, rx::S_TAG_SHIFT, rx.tag_every.trailing_zeros());
            let bank = if (pos as u32) < TAG_BANKS {
                pos as u32
            } else {
                u32::MAX
            };
            put32(&mut v, rx::S_BANK, bank);
            put32(&mut v, rx::S_ARMED, 1);
            if bank != u32::MAX {
                let base = (bank * self.max_tags) as usize;
                for i in base..base + self.max_tags as usize {
                    self.tag_mem.set(i, 0);
                }
            }
            self.streams.update(s, &v)?;
        }
        Ok(())
    }

    /// `stream`'s counts; read after the traffic stopped and the timeout
    /// passed.
    pub fn rx_stats(&self, stream: u8) -> io::Result<RxStats> {
        let mut v = vec![0u8; STREAM_VALUE as usize];
        self.streams.lookup(u32::from(stream), &mut v)?;
        let received = get64(&v, rx::S_RECEIVED);
        Ok(RxStats {
            received,
            late: get64(&v, rx::S_LATE),
            ramp: get64(&v, rx::S_RAMP),
            min_ns: if received == 0 {
                0
            } else {
                get64(&v, rx::S_MIN)
            },
            max_ns: get64(&v, rx::S_MAX),
            sum_ns: get64(&v, rx::S_SUM),
            reordered: get64(&v, rx::S_REORDERED),
            bad_checksum: 0,
        })
    }

    /// All `max_tags` slots of an armed stream that has a tag bank: slot `k`
    /// is the latency of frame `first_seq + k·tag_every`, `None` when it was
    /// not received on time. Slots past the frames sent are `None` too: keep
    /// the first [`tag_slots`]`(trial frames, tag_every)`.
    pub fn tagged_latencies(&self, stream: u8) -> io::Result<Vec<Option<u64>>> {
        let mut v = vec![0u8; STREAM_VALUE as usize];
        self.streams.lookup(u32::from(stream), &mut v)?;
        let bank = get32(&v, rx::S_BANK);
        if bank >= TAG_BANKS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("stream {stream} has no tag slots (not among the first {TAG_BANKS} armed)"),
            ));
        }
        let base = (bank * self.max_tags) as usize;
        Ok((base..base + self.max_tags as usize)
            .map(|i| self.tag_mem.get(i).checked_sub(1))
            .collect())
    }

    /// Loads the send program for `tx`'s template on this port.
    pub fn generator(&self, tx: &TxConfig) -> io::Result<Generator> {
        Generator::new(self.ifindex, tx)
    }
}

/// How many tag slots `frames` trial frames fill at `tag_every`:
/// ⌈frames / tag_every⌉.
pub fn tag_slots(frames: u64, tag_every: u32) -> usize {
    frames.div_ceil(u64::from(tag_every.max(1))) as usize
}

fn get32(v: &[u8], off: i16) -> u32 {
    let o = off as usize;
    u32::from_ne_bytes(v[o..o + 4].try_into().expect("4 bytes"))
}

fn get64(v: &[u8], off: i16) -> u64 {
    let o = off as usize;
    u64::from_ne_bytes(v[o..o + 8].try_into().expect("8 bytes"))
}

fn put32(v: &mut [u8], off: i16, x: u32) {
    let o = off as usize;
    v[o..o + 4].copy_from_slice(&x.to_ne_bytes());
}

fn put64(v: &mut [u8], off: i16, x: u64) {
    let o = off as usize;
    v[o..o + 8].copy_from_slice(&x.to_ne_bytes());
}

fn ifindex(ifname: &str) -> io::Result<u32> {
    let c = CString::new(ifname)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name with NUL"))?;
    // SAFETY: `c` is a valid NUL-terminated string for the call.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("interface {ifname}: {e}")));
    }
    Ok(i)
}

/// The MAC address of `ifname` (`SIOCGIFHWADDR` on a throwaway socket of
/// the calling thread's namespace).
fn hwaddr(ifname: &str) -> io::Result<[u8; 6]> {
    if ifname.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "interface name too long",
        ));
    }
    // SAFETY: socket(2) with constant arguments.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ifreq is plain old data; all-zero is valid.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(ifname.bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: `ifr` is a valid ifreq with a NUL-terminated name;
    // SIOCGIFHWADDR writes its `ifru_hwaddr` member.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFHWADDR as _, &mut ifr) } < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("SIOCGIFHWADDR {ifname}: {e}"),
        ));
    }
    // SAFETY: SIOCGIFHWADDR filled `ifru_hwaddr`.
    let data = unsafe { ifr.ifr_ifru.ifru_hwaddr.sa_data };
    let mut mac = [0u8; 6];
    for (d, &s) in mac.iter_mut().zip(&data) {
        *d = s as u8;
    }
    Ok(mac)
}

/// Whether `BPF_PROG_TEST_RUN` has live frames (kernel ≥ 5.18): runs a
/// one-instruction `XDP_DROP` program once in that mode on loopback.
/// `Ok(false)` when the kernel refuses the flag (`EINVAL`); missing
/// privileges are an error saying so. The first answer is kept.
pub fn live_frames_supported() -> io::Result<bool> {
    static ANSWER: OnceLock<bool> = OnceLock::new();
    if let Some(&a) = ANSWER.get() {
        return Ok(a);
    }
    let mut a = asm::Asm::new();
    a.mov_imm(asm::R0, bpf::XDP_DROP).exit();
    let prog = Prog::load_xdp("dp_probe", &a.finish())?;
    let frame = [0u8; 64];
    let run = TestRun {
        data: &frame,
        data_out: None,
        ingress_ifindex: 1,
        repeat: 1,
        flags: BPF_F_TEST_XDP_LIVE_FRAMES,
        batch_size: 1,
    };
    let answer = match prog.test_run(run) {
        Ok(_) => true,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => false,
        Err(e) => return Err(bpf::annotate(e, "BPF_PROG_TEST_RUN (live frames probe)")),
    };
    Ok(*ANSWER.get_or_init(|| answer))
}
