//! netio — the only crate of dualperf that talks to the kernel.
//!
//! It holds every `unsafe` block and every syscall of the project, and no
//! protocol or statistics logic: it moves bytes, puts the caller's marking on
//! them and hands back what the kernel knows about received packets. Linux
//! only.
//!
//! # Contract
//! What the rest of the workspace may rely on (as mio's `sys/mod.rs` lists
//! what a backend provides). Times are `u64` nanoseconds; addresses are
//! `std::net` types, and v4-mapped IPv6 addresses never come back out:
//! they are returned as plain IPv4.
//!
//! **Clock** ([`clock`])
//! - `mono_ns()`: `CLOCK_MONOTONIC`; `wall_ns()`: `CLOCK_REALTIME` since
//!   the epoch; `resolution_ns(ClockId)`: `clock_getres`.
//! - `sleep_until(deadline_ns, spin_ns) -> u64`: absolute sleep then spin;
//!   never returns before the deadline.
//! - `set_timer_slack_ns` / `timer_slack_ns`: the thread's timer slack.
//!
//! **UDP** ([`UdpSocket`])
//! - `bind(addr, dual_stack)`: `IPV6_V6ONLY = !dual_stack` on IPv6.
//!   `bind_reuseport(addr, dual_stack)`: the same with `SO_REUSEPORT`, so
//!   several sockets (one per receiving thread) share the address and port;
//!   the kernel picks one per datagram by its 4-tuple's hash.
//! - `connect(dst)`, `connect_marked(dst, &Marking)`: socket-wide DS byte,
//!   TTL / hop limit and IPv6 flow label (leased), set before `connect`.
//! - `send(buf)`, `send_batch(&[&[u8]]) -> taken` (`sendmmsg`, `Ok(0)` =
//!   try later).
//! - `send_to_marked(buf, dst, &Marking)`: per-packet marking by cmsg, for
//!   echoes from a shared dual-stack socket; IPv4 destinations are mapped.
//!   The kernel picks the source address.
//! - `send_to_marked_from(buf, dst, src_ip: Option<IpAddr>, &Marking)`: the
//!   same, from `src_ip` (a local address; `None` or unspecified = kernel's
//!   choice, i.e. `send_to_marked`). Echo from the probe's
//!   [`RecvMeta::dst_ip`]: a peer's connected socket drops replies from any
//!   other address, and on a multi-address host the kernel's choice can
//!   differ. Sent as `IP_PKTINFO` (`ipi_spec_dst`) for IPv4 and v4-mapped
//!   destinations, `IPV6_PKTINFO` for IPv6, next to the marking cmsgs; works
//!   for both families on a dual-stack socket. A `src_ip` of the other
//!   family is `InvalidInput`.
//! - `enable_recv_meta()`, then `recv_batch(bufs, metas) -> count`
//!   (`recvmmsg`; `Ok(0)` on read timeout) filling [`RecvMeta`]: full
//!   length, source, destination address (`dst_ip`, from `IP_PKTINFO`'s
//!   `ipi_addr` / `IPV6_PKTINFO`, plain IPv4 when v4-mapped), DS byte, TTL /
//!   hop limit, flow label, kernel receive time (`CLOCK_REALTIME`),
//!   truncation.
//! - `set_read_timeout`, `set_nonblocking`, `set_buffer_sizes` (`*FORCE`
//!   when privileged), `buffer_sizes`, `local_addr`.
//!
//! **TCP** ([`tcp`], over `std::net` streams)
//! - `connect(dst, &Marking, nodelay, congestion, timeout)`: marking
//!   (including the flow label) applied before the SYN.
//! - `listen(addr, dual_stack)`: `SO_REUSEADDR`, `IPV6_V6ONLY = !dual_stack`.
//! - `set_marking(&stream, &Marking)`: DS byte and TTL on an established
//!   socket (no new flow label: Linux fixes it at connect).
//! - `enable_recv_meta(&stream)` / `enable_recv_meta_listener(&listener)` and
//!   `last_recv_meta(&stream)`: header fields of received segments, per
//!   segment on IPv6, handshake only on IPv4 (table in [`tcp`]).
//! - `tcp_info(&stream) -> TcpInfo`: `getsockopt(TCP_INFO)` read at the byte
//!   offsets of Linux `struct tcp_info` (cwnd, srtt, retransmits, pacing and
//!   delivery rates, …); fields an older kernel does not return are `None`.
//!
//! **Packet** ([`packet::PacketSocket`], raw Ethernet frames on one interface)
//! - `open(ifname, &RingConfig)`: `AF_PACKET`/`SOCK_RAW`, `ETH_P_ALL`,
//!   non-blocking, `TPACKET_V2` RX and TX rings in one mapping
//!   ([`packet::RingConfig`]: `frame_size` 2048, 512 + 512 slots,
//!   promiscuous), bound to the interface of the calling thread's namespace;
//!   `PACKET_IGNORE_OUTGOING` where the kernel has it.
//! - `recv_batch(max, |frame, RxInfo|) -> handed`: whole Ethernet frames
//!   straight from the ring, with kernel receive time (`CLOCK_REALTIME`),
//!   `pkt_type`, `truncated` (the caller drops such frames) and `losing`;
//!   outgoing frames never come out. Never blocks: wait with `poll` on
//!   `fd()`.
//! - `send(frame) -> bool` queues into the TX ring (`false` = ring full,
//!   flush and retry; too long or shorter than 14 bytes = `InvalidInput`);
//!   `flush()` kicks the kernel (`EAGAIN`/`ENOBUFS` are `Ok`), dropping and
//!   counting (`tx_wrong_format()`) frames the kernel refuses.
//! - `fd`, `ifindex`, `mac` (`SIOCGIFHWADDR`), `mtu` (`SIOCGIFMTU`),
//!   `max_frame_len`, `ring_frames`, `take_error` (`SO_ERROR`), and
//!   `stats()` (`PACKET_STATISTICS`, reset by the kernel on every read).
//!
//! **Raw RSVP** ([`raw::RawRsvpSocket`], IP protocol 46, needs `CAP_NET_RAW`)
//! - `open(v6)`: `SOCK_RAW`, non-blocking; refused is `PermissionDenied`
//!   saying "needs root or CAP_NET_RAW".
//! - `send(dst, src, ttl, router_alert, payload)`: TTL / hop limit, source
//!   and Router Alert per datagram by cmsg (`IP_RETOPTS` with RFC 2113's
//!   option, or an `IPV6_HOPOPTS` header with RFC 2711's, value 1).
//! - `recv(buf) -> Option<RawDatagram>` (`None` = nothing now): src, dst,
//!   TTL, arrival ifindex, Router Alert value, and `payload` / `header`
//!   ranges of `buf` (IPv4 reads the IP header, IPv6 does not). `as_raw_fd`
//!   for [`poll`].
//!
//! **Path MTU** ([`pmtu`], on any socket's fd): `set_dont_fragment(fd)`: DF at every
//! size, the cached path MTU ignored (`IP_PMTUDISC_PROBE`, `IPV6_PMTUDISC_PROBE` +
//! `IPV6_DONTFRAG`), so a datagram above the route's MTU fails with `EMSGSIZE`
//! (`is_too_big`); `path_mtu(fd)`: `IP_MTU` / `IPV6_MTU` of a connected socket.
//!
//! **Poll** ([`poll`]): `poll_readable(fds, timeout_ns) -> Vec<bool>`:
//! `poll(2)` for `POLLIN` (errors and hang-ups count as readable), ns
//! rounded up to ms, `None` = forever; `EINTR` = all `false`.
//!
//! **Namespaces** ([`netns`]): `enter(name)`: `setns(CLONE_NEWNET)` into
//! `/var/run/netns/NAME` for the **calling thread only**; spawn a thread for
//! it. Sockets keep the namespace they were created in.
//!
//! **Processes** ([`process`]): `die_with_parent(&mut Command, sig)`: the
//! child gets `sig` when the spawning thread ends, also on the parent's
//! SIGKILL (`PR_SET_PDEATHSIG`); `signal(pid, sig)`: kill(2) to one process;
//! `wait_exited(pid)`: a child's end, left to be reaped (`WNOWAIT`);
//! `ignored(sig)`: whether this process ignores `sig` (`nohup`'s SIGHUP).
//!
//! **XDP tester** ([`xdp`], RFC 2544 frames, needs root): `TesterPort::open(ifname)`
//! attaches a counting XDP program (tester frames counted per stream and
//! dropped, the rest passed); `Generator::run` sends a paced schedule of tagged
//! frames with `BPF_PROG_TEST_RUN` live frames. Raw `bpf(2)`, a tiny eBPF
//! assembler, no library.
//!
//! **Marking** ([`Marking`]): `tos` is the whole DS byte (`DSCP << 2 | ECN`,
//! the traffic class on IPv6), `ttl` the TTL or unicast hop limit,
//! `flow_label` 20 bits, IPv6 only. Misuse is an [`io::Error`](std::io::Error)
//! wrapping a [`MarkingError`]. The docs of [`Marking`] say how Linux
//! flow-label leases and `net.ipv6.auto_flowlabels` behave.
//!
//! # Errors
//! Everything returns `std::io::Result`; kernel errors keep their errno.
//! "Nothing now, try again" on the batch calls is `Ok(0)`, not an error.
//!
//! # Example
//! ```
//! use netio::{Marking, RecvMeta, UdpSocket};
//! # fn main() -> std::io::Result<()> {
//! let rx = UdpSocket::bind("[::]:0".parse().unwrap(), true)?;
//! rx.enable_recv_meta()?;
//! let tx = UdpSocket::bind("127.0.0.1:0".parse().unwrap(), false)?;
//! let port = rx.local_addr()?.port();
//! let ef = Marking { tos: Some(0xb8), ttl: Some(7), flow_label: None };
//! tx.connect_marked(([127, 0, 0, 1], port).into(), &ef)?;
//! tx.send_batch(&[b"probe"])?;
//! let mut bufs = vec![vec![0u8; 2048]; 4];
//! let mut metas = [RecvMeta::default(); 4];
//! let n = rx.recv_batch(&mut bufs, &mut metas)?;
//! assert_eq!((n, metas[0].tos, metas[0].hop_limit), (1, Some(0xb8), Some(7)));
//! assert_eq!(metas[0].dst_ip, Some([127, 0, 0, 1].into()));
//! // Echo from the address the probe was sent to, with the same marking.
//! rx.send_to_marked_from(b"echo", metas[0].src, metas[0].dst_ip, &ef)?;
//! # Ok(())
//! # }
//! ```
#![cfg(target_os = "linux")]
#![warn(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod clock;
mod cmsg;
pub mod cpu;
pub mod ethtool;
mod marking;
pub mod netns;
pub mod packet;
pub mod pmtu;
pub mod poll;
pub mod process;
pub mod raw;
pub mod rlimit;
mod sys;
pub mod tcp;
mod udp;
pub mod xdp;

pub use marking::{Marking, MarkingError, FLOW_LABEL_MAX};
pub use udp::{gro_segments, Datagram, GroSegments, RecvMeta, UdpSocket, MAX_BATCH};
