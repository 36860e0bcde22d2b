//! The RFC 2544 tester's test frame: Ethernet, IPv4 or IPv6, UDP, and an 18-byte tag at
//! the start of the UDP payload that says which stream sent the frame, its sequence
//! number and when it left.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         magic 0x2544          |    stream     |  flags (0)    |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |        checksum adjust        |     sequence number (u32) ... |  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | ... sequence number           |  tx_ns (u64, the tester's     |  8
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
//! |               CLOCK_MONOTONIC when the frame left)            | 12
//! +                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                               |                                 16
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! All fields are big-endian; the rest of the UDP payload is zero.
//!
//! - [`build`] makes the template a generator copies: the whole frame without the FCS,
//!   with `seq`, `tx_ns` and `adjust` zero, a valid IPv4 header checksum and a valid UDP
//!   checksum (over IPv4 too).
//! - The generator (netio's XDP program) writes `seq`, `tx_ns`, optionally RFC 4814
//!   pseudorandom ports ([`rfc4814_ports`]), and the `adjust` word [`adjust_for`]
//!   computes, so the UDP checksum stays valid without being recomputed: the
//!   ones'-complement sum of everything it rewrote is the template's (RFC 1071 §2(B),
//!   RFC 1624 §3).
//! - [`parse`] reads a received frame, plain or translated (a NAT64 turns the IPv6
//!   frame into an IPv4 one; the tag goes through unchanged), and says whether its UDP
//!   checksum holds.
//!
//! Frame sizes follow RFC 2544 and include the 4-byte FCS the NIC appends: a
//! "64-byte frame" is 60 bytes handed to the interface.

use std::net::IpAddr;

use crate::{checksum, ethernet, ipv4, ipv6};

/// Length of the tag.
pub const TAG_LEN: usize = 18;
/// The tag's first two octets.
pub const MAGIC: u16 = 0x2544;
/// Length of the Ethernet frame check sequence, counted in RFC 2544 frame sizes but not
/// in the bytes [`build`] returns.
pub const FCS_LEN: usize = 4;
/// The largest frame size [`build`] accepts: 9216 bytes, the largest Ethernet size
/// RFC 5180 §5.1.1 lists (jumbo frames).
pub const MAX_FRAME_SIZE: usize = 9216;
/// Length of the UDP header.
pub const UDP_HEADER_LEN: usize = 8;

const ETHERTYPE_VLAN: u16 = 0x8100;
const VLAN_TAG_LEN: usize = 4;

/// RFC 2544 §9.1's frame sizes for Ethernet (FCS included): the standard's minimum and
/// maximum and a selection between them, finer for the small sizes.
pub const SIZES_V4: &[usize] = &[64, 128, 256, 512, 1024, 1280, 1518];

/// The IPv6 frame sizes: RFC 2544 §9.1's list with its smallest size raised to 84 bytes.
///
/// RFC 5180 §5.1.1 keeps RFC 2544's Ethernet sizes for IPv6 and adds larger ones (up to
/// 9216-byte jumbo frames). A 64-byte frame leaves 46 bytes for IP, and the IPv6 header
/// (40) plus UDP (8) alone take 48, so an IPv6 test frame with UDP cannot be 64 bytes:
/// 14 + 40 + 8 + 18 (tag) + 4 (FCS) = 84 is the smallest this tester makes. It is also
/// what a 64-byte IPv4 frame becomes through a stateless translator (the IPv6 header is
/// 20 bytes longer): siitperf, the RFC 8219 tester by one of its authors, takes IPv6
/// frame sizes of 84..=1518 bytes and makes its IPv4 frames 20 bytes shorter.
pub const SIZES_V6: &[usize] = &[84, 128, 256, 512, 1024, 1280, 1518];

/// The smallest frame [`build`] makes, FCS included: 64 bytes for IPv4
/// (14 + 20 + 8 + 18 + 4), 84 for IPv6 (14 + 40 + 8 + 18 + 4).
pub const fn min_frame_size(v6: bool) -> usize {
    let ip = if v6 {
        ipv6::HEADER_LEN
    } else {
        ipv4::HEADER_LEN
    };
    ethernet::HEADER_LEN + ip + UDP_HEADER_LEN + TAG_LEN + FCS_LEN
}

/// The theoretical maximum frame rate of an Ethernet link for frames of `frame_size`
/// bytes (FCS included): `link_bps / ((frame_size + 20) × 8)`, the 20 bytes being the
/// preamble with its start delimiter (8) and the minimum inter-frame gap (12)
/// (RFC 2544 Appendix A, RFC 5180 Appendix A.1). Rounded down.
///
/// 10 Gbit/s and 64 bytes: 14 880 952 frames/s.
pub fn line_rate_fps(frame_size: usize, link_bps: u64) -> u64 {
    let bits = (frame_size as u128 + 20) * 8;
    (u128::from(link_bps) / bits) as u64
}

/// RFC 4814 §4.5 pseudorandom UDP ports, one random word each: the source port is
/// `1024 + r_src % 64512` (1024..=65535), the destination port `1 + r_dst % 49151`
/// (1..=49151). netio's generator computes exactly this from two
/// `bpf_get_prandom_u32()` calls.
///
/// As uniform as a modulo of 32 random bits allows: the first `2³² mod n` ports of each
/// range (16,384 source ports, 5,463 destination ports) come up once more in `2³² / n`
/// (66,576 and 87,383), a bias of 0.0015 % and 0.0011 %. (With 16 bits a port, as first
/// written, a third of the destination range came up twice as often as the rest.)
pub fn rfc4814_ports(r_src: u32, r_dst: u32) -> (u16, u16) {
    let src = 1024 + r_src % 64512;
    let dst = 1 + r_dst % 49151;
    (src as u16, dst as u16)
}

fn fold(mut s: u32) -> u32 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s
}

/// The tag's `adjust` word that keeps the template's UDP checksum valid when a
/// generator writes `seq`, `tx_ns` and, with RFC 4814 ports, replaces the template's
/// ports `template_ports` by `ports` (all in a template whose `adjust`, `seq` and
/// `tx_ns` are 0).
///
/// RFC 1624 §3 reasoning in ones'-complement arithmetic (`+'`): the checksum stays
/// right when the sum of the checksummed words is unchanged, so
/// `adjust = old ports +' ~(seq words +' tx_ns words +' new ports)`. This is the
/// computation netio's XDP generator does, word for word.
pub fn adjust_for(
    seq: u32,
    tx_ns: u64,
    ports: Option<(u16, u16)>,
    template_ports: (u16, u16),
) -> u16 {
    let mut new = (seq >> 16) + (seq & 0xffff);
    for shift in [0, 16, 32, 48] {
        new += ((tx_ns >> shift) & 0xffff) as u32;
    }
    let mut old = 0;
    if let Some((src, dst)) = ports {
        new += u32::from(src) + u32::from(dst);
        old = fold(u32::from(template_ports.0) + u32::from(template_ports.1));
    }
    fold((fold(new) ^ 0xffff) + old) as u16
}

/// Building or parsing a test frame failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Source and destination are of different address families.
    #[error("source and destination addresses are of different families")]
    MixedFamilies,
    /// The frame size is outside what this family allows.
    #[error("frame size {size} outside {min}..={max} bytes (FCS included)")]
    FrameSize {
        /// Asked size.
        size: usize,
        /// Smallest allowed.
        min: usize,
        /// Largest allowed.
        max: usize,
    },
    /// The DSCP does not fit 6 bits.
    #[error("DSCP {0} above 63")]
    Dscp(u8),
    /// The frame ends before a header or field it must hold.
    #[error("truncated: need {need} bytes, have {have}")]
    Truncated {
        /// Bytes required.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// The EtherType (after at most one 802.1Q tag) is neither IPv4 nor IPv6.
    #[error("EtherType 0x{0:04x} is not IPv4 or IPv6")]
    NotIp(u16),
    /// The IP header is malformed (version, lengths, header checksum).
    #[error("bad IP header: {0}")]
    Ip(crate::Error),
    /// An IPv4 fragment (More Fragments set or a fragment offset).
    #[error("an IPv4 fragment")]
    Fragment,
    /// The IP payload is not UDP (an IPv6 extension header counts as not UDP).
    #[error("IP protocol / next header {0} is not UDP")]
    NotUdp(u8),
    /// The UDP length field differs from the IP payload length.
    #[error("UDP length {0} does not fit the tag and the IP payload")]
    UdpLength(u16),
    /// The payload does not start with [`MAGIC`].
    #[error("wrong tag magic 0x{0:04x}")]
    WrongMagic(u16),
}

impl From<crate::Error> for FrameError {
    fn from(e: crate::Error) -> Self {
        Self::Ip(e)
    }
}

mod field {
    pub(super) type Field = core::ops::Range<usize>;
    pub(super) const MAGIC: Field = 0..2;
    pub(super) const STREAM: usize = 2;
    pub(super) const FLAGS: usize = 3;
    pub(super) const ADJUST: Field = 4..6;
    pub(super) const SEQ: Field = 6..10;
    pub(super) const TX_NS: Field = 10..18;
}

/// A read/write view of a tag in a buffer.
#[derive(Debug, Clone)]
pub struct Tag<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Tag<T> {
    /// Wrap a buffer without checks; accessors may panic if it is too short.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wrap a buffer and validate it: at least [`TAG_LEN`] bytes and the magic. Required
    /// for untrusted input; when it returns `Ok`, no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Self, FrameError> {
        let tag = Self::new_unchecked(buffer);
        let have = tag.buffer.as_ref().len();
        if have < TAG_LEN {
            return Err(FrameError::Truncated {
                need: TAG_LEN,
                have,
            });
        }
        if tag.magic() != MAGIC {
            return Err(FrameError::WrongMagic(tag.magic()));
        }
        Ok(tag)
    }

    /// Unwrap the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// The magic, [`MAGIC`] in a valid tag.
    pub fn magic(&self) -> u16 {
        u16::from_be_bytes(be(&self.buffer.as_ref()[field::MAGIC]))
    }
    /// The sending stream.
    pub fn stream(&self) -> u8 {
        self.buffer.as_ref()[field::STREAM]
    }
    /// The flags (0; receivers ignore them).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }
    /// The checksum-adjust word (see [`adjust_for`]).
    pub fn adjust(&self) -> u16 {
        u16::from_be_bytes(be(&self.buffer.as_ref()[field::ADJUST]))
    }
    /// The per-stream sequence number, from 0.
    pub fn seq(&self) -> u32 {
        u32::from_be_bytes(be(&self.buffer.as_ref()[field::SEQ]))
    }
    /// The tester's CLOCK_MONOTONIC when the frame left, ns.
    pub fn tx_ns(&self) -> u64 {
        u64::from_be_bytes(be(&self.buffer.as_ref()[field::TX_NS]))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Tag<T> {
    /// Set the magic.
    pub fn set_magic(&mut self, magic: u16) {
        self.buffer.as_mut()[field::MAGIC].copy_from_slice(&magic.to_be_bytes());
    }
    /// Set the stream.
    pub fn set_stream(&mut self, stream: u8) {
        self.buffer.as_mut()[field::STREAM] = stream;
    }
    /// Set the flags.
    pub fn set_flags(&mut self, flags: u8) {
        self.buffer.as_mut()[field::FLAGS] = flags;
    }
    /// Set the checksum-adjust word.
    pub fn set_adjust(&mut self, adjust: u16) {
        self.buffer.as_mut()[field::ADJUST].copy_from_slice(&adjust.to_be_bytes());
    }
    /// Set the sequence number.
    pub fn set_seq(&mut self, seq: u32) {
        self.buffer.as_mut()[field::SEQ].copy_from_slice(&seq.to_be_bytes());
    }
    /// Set the transmit time.
    pub fn set_tx_ns(&mut self, ns: u64) {
        self.buffer.as_mut()[field::TX_NS].copy_from_slice(&ns.to_be_bytes());
    }
}

fn be<const N: usize>(s: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(s);
    out
}

/// The meaning of a tag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TagRepr {
    /// The sending stream.
    pub stream: u8,
    /// The per-stream sequence number.
    pub seq: u32,
    /// The tester's CLOCK_MONOTONIC when the frame left, ns.
    pub tx_ns: u64,
}

impl TagRepr {
    /// Parse a tag (checked again here, so an unchecked view is fine). Flags and
    /// `adjust` are not kept.
    pub fn parse<T: AsRef<[u8]>>(tag: &Tag<T>) -> Result<Self, FrameError> {
        let tag = Tag::new_checked(tag.buffer.as_ref())?;
        Ok(Self {
            stream: tag.stream(),
            seq: tag.seq(),
            tx_ns: tag.tx_ns(),
        })
    }

    /// Bytes needed to emit a tag: [`TAG_LEN`].
    pub const fn buffer_len(&self) -> usize {
        TAG_LEN
    }

    /// Write the tag: magic, stream, flags 0, `adjust` 0, `seq`, `tx_ns`. In a frame
    /// whose checksum must stay valid with nonzero `seq`/`tx_ns`, set
    /// [`adjust_for`]'s word afterwards.
    ///
    /// Panics if the buffer is shorter than [`TAG_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, tag: &mut Tag<T>) {
        tag.set_magic(MAGIC);
        tag.set_stream(self.stream);
        tag.set_flags(0);
        tag.set_adjust(0);
        tag.set_seq(self.seq);
        tag.set_tx_ns(self.tx_ns);
    }
}

/// What [`build`] makes a frame of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameSpec {
    /// Ethernet source.
    pub src_mac: [u8; 6],
    /// Ethernet destination (the device's MAC on this side).
    pub dst_mac: [u8; 6],
    /// IP source.
    pub src: IpAddr,
    /// IP destination, the same family as `src`.
    pub dst: IpAddr,
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
    /// RFC 2544 frame size, FCS included: [`min_frame_size`]..=[`MAX_FRAME_SIZE`].
    pub frame_size: usize,
    /// The stream written in the tag.
    pub stream: u8,
    /// DSCP, 0..=63 (usually 0).
    pub dscp: u8,
    /// IPv4 TTL or IPv6 hop limit (usually 64).
    pub hop_limit: u8,
}

/// A frame template made by [`build`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestFrame {
    /// The frame without FCS (`frame_size - 4` bytes): tag `seq`, `tx_ns`, `adjust` 0,
    /// valid IPv4 header and UDP checksums.
    pub bytes: Vec<u8>,
    /// Offset of the UDP header.
    pub l4_offset: usize,
    /// Offset of the tag (the UDP payload).
    pub tag_offset: usize,
}

/// Build a test frame template: Ethernet II; IPv4 (IHL 5, Don't Fragment set,
/// identification 0, TTL `hop_limit`, the DSCP, ECN 0) or IPv6 (traffic class `dscp << 2`, flow label 0,
/// hop limit); UDP with a valid checksum; the tag with `stream`, everything else zero.
pub fn build(spec: &FrameSpec) -> Result<TestFrame, FrameError> {
    let v6 = match (spec.src, spec.dst) {
        (IpAddr::V4(_), IpAddr::V4(_)) => false,
        (IpAddr::V6(_), IpAddr::V6(_)) => true,
        _ => return Err(FrameError::MixedFamilies),
    };
    let min = min_frame_size(v6);
    if !(min..=MAX_FRAME_SIZE).contains(&spec.frame_size) {
        return Err(FrameError::FrameSize {
            size: spec.frame_size,
            min,
            max: MAX_FRAME_SIZE,
        });
    }
    if spec.dscp > 63 {
        return Err(FrameError::Dscp(spec.dscp));
    }
    let mut bytes = vec![0u8; spec.frame_size - FCS_LEN];
    let l3 = ethernet::HEADER_LEN;
    let eth = ethernet::Repr {
        src_addr: ethernet::Address(spec.src_mac),
        dst_addr: ethernet::Address(spec.dst_mac),
        ethertype: if v6 {
            ethernet::EtherType::Ipv6
        } else {
            ethernet::EtherType::Ipv4
        },
    };
    eth.emit(&mut ethernet::Frame::new_unchecked(&mut bytes[..]));
    let mut sum = match (spec.src, spec.dst) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => {
            let ip = ipv4::Repr {
                src_addr: src,
                dst_addr: dst,
                protocol: ipv4::PROTO_UDP,
                payload_len: bytes.len() - l3 - ipv4::HEADER_LEN,
                ttl: spec.hop_limit,
                dscp: spec.dscp,
                ecn: 0,
                ident: 0,
                // A translator fragments a DF-clear packet whose IPv6 form exceeds 1280
                // bytes (RFC 7915 §5.1.1): the tester's frame would arrive as two, and a
                // translation benchmark would measure fragmentation. With DF set it is
                // translated whole (§5.1), as a router forwards it.
                dont_frag: true,
            };
            ip.emit(&mut ipv4::Packet::new_unchecked(&mut bytes[l3..]));
            checksum::pseudo_header_v4(&src, &dst, ipv4::PROTO_UDP, ip.payload_len as u16)
        }
        (IpAddr::V6(src), IpAddr::V6(dst)) => {
            let ip = ipv6::Repr {
                src_addr: src,
                dst_addr: dst,
                next_header: ipv4::PROTO_UDP,
                payload_len: bytes.len() - l3 - ipv6::HEADER_LEN,
                hop_limit: spec.hop_limit,
                traffic_class: spec.dscp << 2,
                flow_label: 0,
            };
            ip.emit(&mut ipv6::Packet::new_unchecked(&mut bytes[l3..]));
            checksum::pseudo_header_v6(&src, &dst, ipv4::PROTO_UDP, ip.payload_len as u32)
        }
        _ => unreachable!("families checked above"),
    };
    let l4 = l3
        + if v6 {
            ipv6::HEADER_LEN
        } else {
            ipv4::HEADER_LEN
        };
    let tag_offset = l4 + UDP_HEADER_LEN;
    let udp_len = (bytes.len() - l4) as u16;
    bytes[l4..l4 + 2].copy_from_slice(&spec.src_port.to_be_bytes());
    bytes[l4 + 2..l4 + 4].copy_from_slice(&spec.dst_port.to_be_bytes());
    bytes[l4 + 4..l4 + 6].copy_from_slice(&udp_len.to_be_bytes());
    let tag = TagRepr {
        stream: spec.stream,
        seq: 0,
        tx_ns: 0,
    };
    tag.emit(&mut Tag::new_unchecked(&mut bytes[tag_offset..]));
    // RFC 768: a computed 0 is sent as all ones (0 means "no checksum" over IPv4).
    let udp_sum = match sum.add(&bytes[l4..]).finish() {
        0 => 0xffff,
        s => s,
    };
    bytes[l4 + 6..l4 + 8].copy_from_slice(&udp_sum.to_be_bytes());
    Ok(TestFrame {
        bytes,
        l4_offset: l4,
        tag_offset,
    })
}

/// What [`parse`] found in a received test frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// The frame is IPv6 (after any translation on the way).
    pub v6: bool,
    /// IP source.
    pub src: IpAddr,
    /// IP destination.
    pub dst: IpAddr,
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
    /// The tag.
    pub tag: TagRepr,
    /// The UDP checksum verifies (an IPv4 checksum of 0, "none", counts as valid; over
    /// IPv6 0 is invalid, RFC 8200 §8.1).
    pub udp_checksum_ok: bool,
    /// Bytes of the frame as given (no FCS).
    pub frame_len: usize,
}

/// Parse a received frame: Ethernet II (at most one 802.1Q tag), IPv4 (any IHL, valid
/// header checksum, total length within the frame, not a fragment) or IPv6 (UDP right
/// after the fixed header; extension headers are refused), UDP (its length
/// the IP payload's, room for the tag), and the tag (magic). Never panics; bytes
/// after the IP packet (Ethernet padding) are ignored.
pub fn parse(frame: &[u8]) -> Result<Received, FrameError> {
    let eth = ethernet::Frame::new_checked(frame)?;
    let mut l3 = ethernet::HEADER_LEN;
    let mut ethertype = u16::from(eth.ethertype());
    if ethertype == ETHERTYPE_VLAN {
        l3 += VLAN_TAG_LEN;
        let Some(inner) = frame.get(l3 - 2..l3) else {
            return Err(FrameError::Truncated {
                need: l3,
                have: frame.len(),
            });
        };
        ethertype = u16::from_be_bytes([inner[0], inner[1]]);
    }
    let ip_bytes = &frame[l3.min(frame.len())..];
    let (v6, src, dst, udp, mut sum) = match ethernet::EtherType::from(ethertype) {
        ethernet::EtherType::Ipv4 => {
            let ip = ipv4::Packet::new_checked(ip_bytes)?;
            if !ip.verify_checksum() {
                return Err(FrameError::Ip(crate::Error::Malformed(
                    "IPv4 header checksum",
                )));
            }
            if ip.more_frags() || ip.frag_offset() != 0 {
                return Err(FrameError::Fragment);
            }
            if ip.protocol() != ipv4::PROTO_UDP {
                return Err(FrameError::NotUdp(ip.protocol()));
            }
            let (src, dst) = (ip.src_addr(), ip.dst_addr());
            let udp = &ip_bytes[ip.header_len()..usize::from(ip.total_len())];
            let len = udp.len().min(usize::from(u16::MAX)) as u16;
            let sum = checksum::pseudo_header_v4(&src, &dst, ipv4::PROTO_UDP, len);
            (false, IpAddr::V4(src), IpAddr::V4(dst), udp, sum)
        }
        ethernet::EtherType::Ipv6 => {
            let ip = ipv6::Packet::new_checked(ip_bytes)?;
            if ip.next_header() != ipv4::PROTO_UDP {
                return Err(FrameError::NotUdp(ip.next_header()));
            }
            let (src, dst) = (ip.src_addr(), ip.dst_addr());
            let udp = &ip_bytes[ipv6::HEADER_LEN..ipv6::HEADER_LEN + usize::from(ip.payload_len())];
            let sum = checksum::pseudo_header_v6(&src, &dst, ipv4::PROTO_UDP, udp.len() as u32);
            (true, IpAddr::V6(src), IpAddr::V6(dst), udp, sum)
        }
        _ => return Err(FrameError::NotIp(ethertype)),
    };
    if udp.len() < UDP_HEADER_LEN + TAG_LEN {
        return Err(FrameError::Truncated {
            need: UDP_HEADER_LEN + TAG_LEN,
            have: udp.len(),
        });
    }
    let word = |i: usize| u16::from_be_bytes([udp[i], udp[i + 1]]);
    let udp_len = word(4);
    if usize::from(udp_len) != udp.len() {
        return Err(FrameError::UdpLength(udp_len));
    }
    let tag = TagRepr::parse(&Tag::new_unchecked(&udp[UDP_HEADER_LEN..]))?;
    let udp_checksum_ok = match word(6) {
        0 => !v6,
        _ => sum.add(udp).finish() == 0,
    };
    Ok(Received {
        v6,
        src,
        dst,
        src_port: word(0),
        dst_port: word(2),
        tag,
        udp_checksum_ok,
        frame_len: frame.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn spec_v4(frame_size: usize) -> FrameSpec {
        FrameSpec {
            src_mac: [0x02, 0, 0, 0, 0, 0x01],
            dst_mac: [0x02, 0, 0, 0, 0, 0x02],
            src: IpAddr::V4(Ipv4Addr::new(198, 18, 0, 2)),
            dst: IpAddr::V4(Ipv4Addr::new(198, 19, 0, 2)),
            src_port: 1024,
            dst_port: 1025,
            frame_size,
            stream: 7,
            dscp: 0,
            hop_limit: 64,
        }
    }

    fn spec_v6(frame_size: usize) -> FrameSpec {
        FrameSpec {
            src: IpAddr::V6("2001:2::2".parse::<Ipv6Addr>().unwrap()),
            dst: IpAddr::V6("2001:2:0:1::2".parse::<Ipv6Addr>().unwrap()),
            ..spec_v4(frame_size)
        }
    }

    /// A small deterministic generator (xorshift64*), enough for many random values.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    /// The generator's rewrite of a template, as netio's XDP program does it.
    fn rewrite(t: &TestFrame, seq: u32, tx_ns: u64, ports: Option<(u16, u16)>) -> Vec<u8> {
        let mut f = t.bytes.clone();
        let l4 = t.l4_offset;
        let template_ports = (
            u16::from_be_bytes([f[l4], f[l4 + 1]]),
            u16::from_be_bytes([f[l4 + 2], f[l4 + 3]]),
        );
        if let Some((s, d)) = ports {
            f[l4..l4 + 2].copy_from_slice(&s.to_be_bytes());
            f[l4 + 2..l4 + 4].copy_from_slice(&d.to_be_bytes());
        }
        let mut tag = Tag::new_unchecked(&mut f[t.tag_offset..]);
        tag.set_seq(seq);
        tag.set_tx_ns(tx_ns);
        tag.set_adjust(adjust_for(seq, tx_ns, ports, template_ports));
        f
    }

    #[rustfmt::skip]
    const V4_64: [u8; 60] = [
        0x02, 0, 0, 0, 0, 0x02,  0x02, 0, 0, 0, 0, 0x01,  0x08, 0x00,
        // IPv4: IHL 5, DS 0, total 46, ident 0, DF, offset 0, TTL 64, UDP, checksum
        0x45, 0x00, 0x00, 0x2e,  0x00, 0x00, 0x40, 0x00,  0x40, 0x11, 0xae, 0x95,
        198, 18, 0, 2,  198, 19, 0, 2,
        // UDP 1024 → 1025, length 26, checksum
        0x04, 0x00, 0x04, 0x01,  0x00, 0x1a, 0x3f, 0x4b,
        // tag: magic, stream 7, flags, adjust, seq, tx_ns
        0x25, 0x44, 0x07, 0x00,  0, 0,  0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn testframe_v4_64_exact_bytes() {
        let t = build(&spec_v4(64)).unwrap();
        assert_eq!(t.bytes, V4_64);
        assert_eq!((t.l4_offset, t.tag_offset), (34, 42));
        assert_eq!(checksum::internet(&t.bytes[14..34]), 0);
    }

    #[rustfmt::skip]
    const V6_84: [u8; 80] = [
        0x02, 0, 0, 0, 0, 0x02,  0x02, 0, 0, 0, 0, 0x01,  0x86, 0xdd,
        // IPv6: TC 0, flow 0, payload 26, UDP, hop limit 64
        0x60, 0, 0, 0,  0x00, 0x1a, 0x11, 0x40,
        0x20, 0x01, 0x00, 0x02, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0x02,
        0x20, 0x01, 0x00, 0x02, 0, 0, 0, 0x01,  0, 0, 0, 0, 0, 0, 0, 0x02,
        // UDP 1024 → 1025, length 26, checksum
        0x04, 0x00, 0x04, 0x01,  0x00, 0x1a, 0x8b, 0x6a,
        0x25, 0x44, 0x07, 0x00,  0, 0,  0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn testframe_v6_84_exact_bytes() {
        let t = build(&spec_v6(84)).unwrap();
        assert_eq!(t.bytes, V6_84);
        assert_eq!((t.l4_offset, t.tag_offset), (54, 62));
    }

    #[test]
    fn testframe_build_then_parse_every_size() {
        for (v6, sizes) in [(false, SIZES_V4), (true, SIZES_V6)] {
            for &size in sizes.iter().chain(&[MAX_FRAME_SIZE]) {
                let spec = if v6 { spec_v6(size) } else { spec_v4(size) };
                let t = build(&spec).unwrap();
                assert_eq!(t.bytes.len(), size - FCS_LEN);
                assert!(t.bytes[t.tag_offset + TAG_LEN..].iter().all(|&b| b == 0));
                let r = parse(&t.bytes).unwrap();
                assert_eq!(
                    r,
                    Received {
                        v6,
                        src: spec.src,
                        dst: spec.dst,
                        src_port: 1024,
                        dst_port: 1025,
                        tag: TagRepr {
                            stream: 7,
                            seq: 0,
                            tx_ns: 0
                        },
                        udp_checksum_ok: true,
                        frame_len: size - 4,
                    },
                    "size {size} v6 {v6}"
                );
            }
        }
    }

    #[test]
    fn testframe_dscp_and_hop_limit_land_in_the_headers() {
        let t = build(&FrameSpec {
            dscp: 46,
            hop_limit: 3,
            ..spec_v4(128)
        })
        .unwrap();
        let ip = ipv4::Packet::new_checked(&t.bytes[14..]).unwrap();
        assert_eq!((ip.dscp(), ip.ttl(), ip.dont_frag()), (46, 3, true));
        assert!(ip.verify_checksum());
        let t = build(&FrameSpec {
            dscp: 46,
            hop_limit: 3,
            ..spec_v6(128)
        })
        .unwrap();
        let ip = ipv6::Packet::new_checked(&t.bytes[14..]).unwrap();
        assert_eq!(
            (ip.traffic_class(), ip.hop_limit(), ip.flow_label()),
            (184, 3, 0)
        );
        assert!(parse(&t.bytes).unwrap().udp_checksum_ok);
    }

    #[test]
    fn testframe_build_refuses_bad_specs() {
        let mixed = FrameSpec {
            dst: spec_v6(84).dst,
            ..spec_v4(84)
        };
        assert_eq!(build(&mixed), Err(FrameError::MixedFamilies));
        let small = |size, min| FrameError::FrameSize {
            size,
            min,
            max: MAX_FRAME_SIZE,
        };
        assert_eq!(build(&spec_v4(63)), Err(small(63, 64)));
        assert_eq!(build(&spec_v6(83)), Err(small(83, 84)));
        assert_eq!(build(&spec_v4(9217)), Err(small(9217, 64)));
        assert!(build(&spec_v6(84)).is_ok());
        let dscp = FrameSpec {
            dscp: 64,
            ..spec_v4(64)
        };
        assert_eq!(build(&dscp), Err(FrameError::Dscp(64)));
        assert_eq!((min_frame_size(false), min_frame_size(true)), (64, 84));
    }

    /// The generator's rewrite keeps the checksum valid for any seq, time and ports, and
    /// parse reads back what was written. Without `adjust` the checksum would fail.
    #[test]
    fn testframe_adjust_keeps_the_udp_checksum_valid() {
        let mut rng = Rng(0x2544_1624);
        for spec in [spec_v4(64), spec_v6(84), spec_v4(1518), spec_v6(1518)] {
            let t = build(&spec).unwrap();
            for i in 0..5000 {
                let r = rng.next();
                let seq = if i < 3 { [0, 1, u32::MAX][i] } else { r as u32 };
                let tx_ns = if i < 3 {
                    [0, u64::MAX, 0xffff][i]
                } else {
                    rng.next()
                };
                let ports = (i % 2 == 1).then(|| rfc4814_ports((r >> 32) as u32, r as u32));
                let f = rewrite(&t, seq, tx_ns, ports);
                let got = parse(&f).unwrap();
                assert!(got.udp_checksum_ok, "seq {seq} tx {tx_ns} ports {ports:?}");
                assert_eq!(
                    got.tag,
                    TagRepr {
                        stream: 7,
                        seq,
                        tx_ns
                    }
                );
                let (sp, dp) = ports.unwrap_or((1024, 1025));
                assert_eq!((got.src_port, got.dst_port), (sp, dp));
            }
            // The same rewrite with adjust left 0 breaks the checksum.
            let mut f = rewrite(&t, 12345, 678, None);
            Tag::new_unchecked(&mut f[t.tag_offset..]).set_adjust(0);
            assert!(!parse(&f).unwrap().udp_checksum_ok);
        }
    }

    #[test]
    fn testframe_adjust_matches_a_hand_computation() {
        // seq 1 and tx_ns 2 add 3 to the sum: adjust is ~3.
        assert_eq!(adjust_for(1, 2, None, (1, 1)), 0xfffc);
        // Nothing written: ~0 = 0xffff, ones'-complement zero.
        assert_eq!(adjust_for(0, 0, None, (9, 9)), 0xffff);
        // Ports 1024+1025 replaced by 2000+3000: +2951 → adjust ~2951.
        assert_eq!(adjust_for(0, 0, Some((2000, 3000)), (1024, 1025)), !2951);
    }

    #[test]
    fn testframe_parse_accepts_a_vlan_tag_options_and_padding() {
        let t = build(&spec_v4(64)).unwrap();
        let mut f = t.bytes[..12].to_vec();
        f.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        f.extend_from_slice(&t.bytes[12..]);
        f.extend_from_slice(&[0xaa; 6]);
        let r = parse(&f).unwrap();
        assert_eq!(
            (r.tag.stream, r.udp_checksum_ok, r.frame_len),
            (7, true, 70)
        );

        // IHL 6 with a 4-byte option (NOP NOP NOP EOL): header checksum refilled.
        let mut f = t.bytes[..34].to_vec();
        f.extend_from_slice(&[1, 1, 1, 0]);
        f.extend_from_slice(&t.bytes[34..]);
        let mut ip = ipv4::Packet::new_unchecked(&mut f[14..]);
        ip.set_header_len(24);
        ip.set_total_len(50);
        ip.fill_checksum();
        let r = parse(&f).unwrap();
        assert_eq!((r.tag.stream, r.udp_checksum_ok), (7, true));
    }

    #[test]
    fn testframe_parse_refuses_what_is_not_a_test_frame() {
        let v4 = build(&spec_v4(64)).unwrap().bytes;
        let v6 = build(&spec_v6(84)).unwrap().bytes;
        let with = |base: &[u8], i: usize, b: u8| {
            let mut f = base.to_vec();
            f[i] = b;
            f
        };
        assert!(matches!(
            parse(&with(&v4, 12, 0x86)),
            Err(FrameError::NotIp(0x8600))
        ));
        assert!(matches!(
            parse(&with(&with(&v4, 12, 0x86), 13, 0xdd)),
            Err(FrameError::Ip(_))
        ));
        assert_eq!(parse(&with(&v4, 13, 0x06)), Err(FrameError::NotIp(0x0806)));
        assert!(matches!(
            parse(&with(&v4, 24, 0xee ^ 1)),
            Err(FrameError::Ip(_))
        ));
        // More Fragments set (header checksum refilled so only the fragment is wrong).
        let mut frag = with(&v4, 20, 0x20);
        ipv4::Packet::new_unchecked(&mut frag[14..]).fill_checksum();
        assert_eq!(parse(&frag), Err(FrameError::Fragment));
        let mut tcp = with(&v4, 23, 6);
        ipv4::Packet::new_unchecked(&mut tcp[14..]).fill_checksum();
        assert_eq!(parse(&tcp), Err(FrameError::NotUdp(6)));
        assert_eq!(parse(&with(&v6, 20, 0)), Err(FrameError::NotUdp(0)));
        assert_eq!(
            parse(&with(&v4, 42, 0x26)),
            Err(FrameError::WrongMagic(0x2644))
        );
        assert_eq!(parse(&with(&v4, 39, 0x1b)), Err(FrameError::UdpLength(27)));
        assert!(matches!(parse(&v4[..59]), Err(FrameError::Ip(_))));
        assert!(matches!(parse(&v6[..79]), Err(FrameError::Ip(_))));
        assert!(matches!(parse(&v4[..10]), Err(FrameError::Ip(_))));
        // A flipped payload bit: parsed, checksum reported bad.
        let r = parse(&with(&v4, 59, 1)).unwrap();
        assert!(!r.udp_checksum_ok);
        // IPv4 UDP checksum 0 means none: ok. Over IPv6, 0 is invalid.
        let none = with(&with(&v4, 40, 0), 41, 0);
        assert!(parse(&none).unwrap().udp_checksum_ok);
        let none6 = with(&with(&v6, 60, 0), 61, 0);
        assert!(!parse(&none6).unwrap().udp_checksum_ok);
    }

    /// A NAT64 (RFC 7915) rewrites the IP header and the checksum over the new
    /// pseudo-header; the tag survives and the frame parses as IPv4.
    #[test]
    fn testframe_parse_reads_a_translated_frame() {
        let t6 = build(&spec_v6(84)).unwrap();
        let f6 = rewrite(&t6, 99, 123_456_789, None);
        let t4 = build(&spec_v4(64)).unwrap();
        let mut f4 = t4.bytes.clone();
        f4[t4.tag_offset..].copy_from_slice(&f6[t6.tag_offset..]);
        // Recompute the UDP checksum as a translator would.
        f4[40..42].copy_from_slice(&[0, 0]);
        let IpAddr::V4(s) = spec_v4(64).src else {
            unreachable!()
        };
        let IpAddr::V4(d) = spec_v4(64).dst else {
            unreachable!()
        };
        let c = checksum::pseudo_header_v4(&s, &d, 17, 26)
            .add(&f4[34..])
            .finish();
        f4[40..42].copy_from_slice(&c.to_be_bytes());
        let r = parse(&f4).unwrap();
        assert!(!r.v6 && r.udp_checksum_ok);
        assert_eq!(
            r.tag,
            TagRepr {
                stream: 7,
                seq: 99,
                tx_ns: 123_456_789
            }
        );
    }

    #[test]
    fn testframe_tag_view_and_repr_round_trip() {
        let mut buf = [0u8; TAG_LEN];
        let repr = TagRepr {
            stream: 255,
            seq: 0x0102_0304,
            tx_ns: 0x1112_1314_1516_1718,
        };
        repr.emit(&mut Tag::new_unchecked(&mut buf[..]));
        assert_eq!(
            buf,
            [
                0x25, 0x44, 0xff, 0, 0, 0, 1, 2, 3, 4, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
                0x18
            ]
        );
        let tag = Tag::new_checked(&buf[..]).unwrap();
        assert_eq!((tag.magic(), tag.flags(), tag.adjust()), (MAGIC, 0, 0));
        assert_eq!(TagRepr::parse(&tag), Ok(repr));
        assert_eq!(
            Tag::new_checked(&buf[..17]).err(),
            Some(FrameError::Truncated { need: 18, have: 17 })
        );
        buf[1] = 0;
        assert_eq!(
            Tag::new_checked(&buf[..]).err(),
            Some(FrameError::WrongMagic(0x2500))
        );
    }

    /// Both ends of each range are reached, nothing falls outside, and the bias is the
    /// stated one: 2³² = 66576 · 64512 + 16384, so the last word maps to the 16384th
    /// source port (1024 + 16383), and the words 64512·k + j all give 1024 + j.
    #[test]
    fn testframe_rfc4814_ports_ranges_and_bias() {
        assert_eq!(rfc4814_ports(0, 0), (1024, 1));
        assert_eq!(rfc4814_ports(64511, 49150), (65535, 49151));
        assert_eq!(rfc4814_ports(64512, 49151), (1024, 1));
        assert_eq!(rfc4814_ports(u32::MAX, u32::MAX), (1024 + 16383, 1 + 5462));
        for k in [1u32, 1000, 66575] {
            assert_eq!(rfc4814_ports(k * 64512 + 7, k * 49151 + 7), (1031, 8));
        }
        let mut w = 1u32;
        for _ in 0..100_000 {
            w = w.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let (s, d) = rfc4814_ports(w, w.rotate_left(13));
            assert!(s >= 1024, "{w}");
            assert!((1..=49151).contains(&d), "{w}");
        }
    }

    #[test]
    fn testframe_line_rate() {
        // RFC 5180 Appendix A.1's table: 10 Gbit/s.
        assert_eq!(line_rate_fps(64, 10_000_000_000), 14_880_952);
        assert_eq!(line_rate_fps(1518, 10_000_000_000), 812_743);
        assert_eq!(line_rate_fps(84, 1_000_000_000), 1_201_923);
        assert_eq!(line_rate_fps(64, 100_000_000), 148_809);
    }
}
