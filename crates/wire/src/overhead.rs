//! Header overhead, fragmentation and framing of IPv4 and IPv6, computed exactly.
//!
//! For one message of `payload` bytes handed to UDP or TCP, [`carry`] says how it crosses
//! a link of a given MTU: how many IP packets, how many header bytes, how many bytes at
//! layer 3, in Ethernet frames and on the wire.
//!
//! - **Header sizes**: IPv4 20 bytes without options (RFC 791), IPv6 40 (RFC 8200 §3),
//!   UDP 8 (RFC 768), TCP 20 without options (RFC 9293), the IPv6 Fragment header 8
//!   (RFC 8200 §4.5).
//! - **UDP beyond the MTU is fragmented at the IP layer.** Every fragment but the last
//!   carries a multiple of 8 bytes of the datagram. IPv4 (RFC 791): up to ⌊(MTU−20)/8⌋·8
//!   bytes per fragment, each behind its own 20-byte header. IPv6 (RFC 8200 §4.5): only
//!   the source fragments, up to ⌊(MTU−48)/8⌋·8 bytes per fragment, each behind 40 + 8.
//!   The UDP header travels once, in the first fragment.
//! - **TCP is segmented instead**: segments of at most MSS = MTU − IP header − 20 bytes
//!   (RFC 9293 §3.7.1), each with both headers.
//! - **Ethernet** (IEEE 802.3): 14 bytes of header and 4 of FCS around each IP packet, a
//!   frame at least 64 bytes (padding), and on the wire 8 of preamble and start delimiter
//!   plus a 12-byte inter-frame gap. A capture shows the frame without FCS or padding:
//!   that is the 294- and 314-byte "frames" of the H.323 study (Bouras et al.).
//! - **Overhead %** is header bytes ÷ bytes of the IP packets × 100, Kharche and Patil's
//!   definition (Kharche & Patil §4.3: "the ratio of the header size in bytes to the total bytes
//!   in the data unit"), so 32 bytes over TCP/IPv4 give 40/72 = 55.56 %.

use serde::{Deserialize, Serialize};

/// IPv4 header without options.
pub const IPV4_HEADER: u32 = 20;
/// IPv6 fixed header.
pub const IPV6_HEADER: u32 = 40;
/// IPv6 Fragment extension header.
pub const IPV6_FRAGMENT_HEADER: u32 = 8;
/// UDP header.
pub const UDP_HEADER: u32 = 8;
/// TCP header without options.
pub const TCP_HEADER: u32 = 20;
/// Ethernet II header (destination, source, EtherType).
pub const ETHERNET_HEADER: u32 = 14;
/// Ethernet frame check sequence.
pub const ETHERNET_FCS: u32 = 4;
/// Smallest Ethernet frame, header and FCS included.
pub const ETHERNET_MIN_FRAME: u32 = 64;
/// Preamble, start delimiter and inter-frame gap: what a frame costs on the wire beyond
/// itself.
pub const ETHERNET_WIRE_EXTRA: u32 = 8 + 12;
/// Ethernet's MTU.
pub const ETHERNET_MTU: u32 = 1500;
/// The largest UDP payload in one IPv4 datagram (65535 − 20 − 8).
pub const MAX_UDP_PAYLOAD_V4: u32 = 65_507;
/// The largest UDP payload in one IPv6 packet without a jumbogram (65535 − 8).
pub const MAX_UDP_PAYLOAD_V6: u32 = 65_527;

/// IP version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Ip {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

/// Transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// UDP: one datagram, fragmented by IP beyond the MTU.
    Udp,
    /// TCP: segmented at the MSS.
    Tcp,
}

impl core::fmt::Display for Ip {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Self::V4 => "IPv4",
            Self::V6 => "IPv6",
        })
    }
}

impl Ip {
    /// The fixed header.
    pub const fn header(self) -> u32 {
        match self {
            Self::V4 => IPV4_HEADER,
            Self::V6 => IPV6_HEADER,
        }
    }
}

impl Transport {
    /// The header.
    pub const fn header(self) -> u32 {
        match self {
            Self::Udp => UDP_HEADER,
            Self::Tcp => TCP_HEADER,
        }
    }
}

/// Why a message cannot be carried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverheadError {
    /// The MTU leaves no room for a fragment or a segment.
    #[error("an MTU of {mtu} bytes is too small (IPv4 needs 68, IPv6 1280)")]
    MtuTooSmall {
        /// The MTU.
        mtu: u32,
    },
    /// An MTU beyond what one IP packet can fill (loopback's 65536 is the largest here).
    #[error("an MTU of {mtu} bytes is larger than 65536")]
    MtuTooLarge {
        /// The MTU.
        mtu: u32,
    },
    /// A UDP payload larger than one datagram can hold.
    #[error("{payload} bytes exceed the largest UDP payload over {ip} ({max})")]
    TooLarge {
        /// The payload.
        payload: u32,
        /// The IP version.
        ip: Ip,
        /// The largest payload.
        max: u32,
    },
}

/// How one message crosses the link.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Carriage {
    /// Application bytes.
    pub payload_bytes: u32,
    /// IP packets: fragments (UDP) or segments (TCP).
    pub packets: u64,
    /// Header bytes of all of them: IP, transport and fragment headers.
    pub header_bytes: u64,
    /// Bytes of the IP packets, headers included.
    pub ip_bytes: u64,
    /// `header_bytes / ip_bytes × 100`.
    pub overhead_pct: f64,
    /// Ethernet frames as a capture shows them: 14-byte header, no FCS, no padding.
    pub captured_frame_bytes: u64,
    /// Ethernet frames as sent: header, FCS, padding to 64 bytes.
    pub frame_bytes: u64,
    /// What the link carries: frames plus preamble and inter-frame gap.
    pub wire_bytes: u64,
    /// `(wire_bytes − payload_bytes) / wire_bytes × 100`.
    pub wire_overhead_pct: f64,
}

/// How `payload` bytes sent at once over `transport` and `ip` cross a link of `mtu`.
pub fn carry(
    ip: Ip,
    transport: Transport,
    payload: u32,
    mtu: u32,
) -> Result<Carriage, OverheadError> {
    let min_mtu = match ip {
        Ip::V4 => 68,
        Ip::V6 => 1280,
    };
    if mtu < min_mtu {
        return Err(OverheadError::MtuTooSmall { mtu });
    }
    if mtu > 65_536 {
        return Err(OverheadError::MtuTooLarge { mtu });
    }
    // The IP packets: `count` of them, all `full` bytes long but the last, `last` bytes.
    let (count, full, last) = match transport {
        Transport::Tcp => {
            // IPv4's Total Length caps a packet at 65535 bytes (RFC 791), whatever the MTU.
            let largest = match ip {
                Ip::V4 => mtu.min(65_535),
                Ip::V6 => mtu,
            };
            let mss = largest - ip.header() - TCP_HEADER;
            let count = payload.div_ceil(mss).max(1);
            let headers = ip.header() + TCP_HEADER;
            (
                count,
                headers + mss,
                headers + (payload - mss * (count - 1)),
            )
        }
        Transport::Udp => {
            let max = match ip {
                Ip::V4 => MAX_UDP_PAYLOAD_V4,
                Ip::V6 => MAX_UDP_PAYLOAD_V6,
            };
            if payload > max {
                return Err(OverheadError::TooLarge { payload, ip, max });
            }
            let datagram = UDP_HEADER + payload;
            if ip.header() + datagram <= mtu {
                (1, ip.header() + datagram, ip.header() + datagram)
            } else {
                let header = match ip {
                    Ip::V4 => IPV4_HEADER,
                    Ip::V6 => IPV6_HEADER + IPV6_FRAGMENT_HEADER,
                };
                let chunk = (mtu - header) / 8 * 8;
                let count = datagram.div_ceil(chunk);
                (
                    count,
                    header + chunk,
                    header + datagram - chunk * (count - 1),
                )
            }
        }
    };
    let packets = u64::from(count);
    let sum = |per_packet: &dyn Fn(u32) -> u64| (packets - 1) * per_packet(full) + per_packet(last);
    let ip_bytes = sum(&u64::from);
    let header_bytes = ip_bytes - u64::from(payload);
    let captured_frame_bytes = sum(&|l| u64::from(ETHERNET_HEADER + l));
    let frame_bytes =
        sum(&|l| u64::from((ETHERNET_HEADER + l + ETHERNET_FCS).max(ETHERNET_MIN_FRAME)));
    let wire_bytes = frame_bytes + u64::from(ETHERNET_WIRE_EXTRA) * packets;
    Ok(Carriage {
        payload_bytes: payload,
        packets,
        header_bytes,
        ip_bytes,
        overhead_pct: header_bytes as f64 * 100.0 / ip_bytes as f64,
        captured_frame_bytes,
        frame_bytes,
        wire_bytes,
        wire_overhead_pct: (wire_bytes - u64::from(payload)) as f64 * 100.0 / wire_bytes as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pct(ip: Ip, t: Transport, payload: u32) -> f64 {
        carry(ip, t, payload, ETHERNET_MTU).unwrap().overhead_pct
    }

    #[test]
    fn kharche_table_1_at_32_bytes_of_data() {
        // Kharche & Patil, Table 1: 55.55 %, 65.21 %, 46.67 %, 60 %. The exact ratios are
        // 40/72, 60/92, 28/60 and 48/80; the paper cuts the first two after two decimals
        // (55.555…, 65.217…) and rounds the third (46.666…).
        assert_eq!(pct(Ip::V4, Transport::Tcp, 32), 40.0 * 100.0 / 72.0);
        assert_eq!(pct(Ip::V6, Transport::Tcp, 32), 60.0 * 100.0 / 92.0);
        assert_eq!(pct(Ip::V4, Transport::Udp, 32), 28.0 * 100.0 / 60.0);
        assert_eq!(pct(Ip::V6, Transport::Udp, 32), 60.0);
        let trunc = |x: f64| (x * 100.0).trunc() / 100.0;
        assert_eq!(trunc(pct(Ip::V4, Transport::Tcp, 32)), 55.55);
        assert_eq!(trunc(pct(Ip::V6, Transport::Tcp, 32)), 65.21);
        assert_eq!(
            (pct(Ip::V4, Transport::Udp, 32) * 100.0).round() / 100.0,
            46.67
        );
    }

    #[test]
    fn seed_000s_frames_are_294_and_314_bytes() {
        // G.711 in 30 ms packets: 240 bytes of audio behind a 12-byte RTP header.
        let v4 = carry(Ip::V4, Transport::Udp, 252, ETHERNET_MTU).unwrap();
        let v6 = carry(Ip::V6, Transport::Udp, 252, ETHERNET_MTU).unwrap();
        assert_eq!(
            (v4.captured_frame_bytes, v6.captured_frame_bytes),
            (294, 314)
        );
        // +20 bytes a packet, about 7 % more on the link (the seed's "7 % overhead").
        let more = v6.wire_bytes as f64 / v4.wire_bytes as f64 - 1.0;
        assert!((more - 20.0 / 318.0).abs() < 1e-12, "{more}");
        assert_eq!(v4.frame_bytes, 298);
        assert_eq!(v4.wire_bytes, 318);
    }

    #[test]
    fn udp_fragments_on_8_byte_boundaries_and_tcp_segments_at_the_mss() {
        // 1472 bytes fit one IPv4 packet of 1500; 1473 need two fragments.
        let one = carry(Ip::V4, Transport::Udp, 1472, 1500).unwrap();
        assert_eq!((one.packets, one.ip_bytes), (1, 1500));
        let two = carry(Ip::V4, Transport::Udp, 1473, 1500).unwrap();
        // 1481 datagram bytes: 1480 in the first fragment, 1 in the second.
        assert_eq!((two.packets, two.ip_bytes, two.header_bytes), (2, 1521, 48));
        // IPv6: 1448 bytes per fragment behind 40 + 8; 1452 bytes fit unfragmented.
        let v6 = carry(Ip::V6, Transport::Udp, 1452, 1500).unwrap();
        assert_eq!(v6.packets, 1);
        let v6 = carry(Ip::V6, Transport::Udp, 1453, 1500).unwrap();
        assert_eq!((v6.packets, v6.ip_bytes), (2, 1461 + 2 * 48));
        // The largest datagrams.
        let big4 = carry(Ip::V4, Transport::Udp, MAX_UDP_PAYLOAD_V4, 1500).unwrap();
        assert_eq!(big4.packets, 45); // 65515 bytes / 1480
        let big6 = carry(Ip::V6, Transport::Udp, MAX_UDP_PAYLOAD_V6, 1500).unwrap();
        assert_eq!(big6.packets, 46); // 65535 bytes / 1448
        assert!(carry(Ip::V4, Transport::Udp, 65_508, 1500).is_err());
        // TCP: MSS 1460 (IPv4) and 1440 (IPv6), any length of stream.
        let huge = carry(Ip::V4, Transport::Tcp, u32::MAX, 1500).unwrap();
        assert_eq!(huge.packets, u64::from(u32::MAX.div_ceil(1460)));
        assert_eq!(huge.header_bytes, huge.packets * 40);
        let t4 = carry(Ip::V4, Transport::Tcp, 2921, 1500).unwrap();
        assert_eq!((t4.packets, t4.header_bytes), (3, 120));
        let t6 = carry(Ip::V6, Transport::Tcp, 2880, 1500).unwrap();
        assert_eq!((t6.packets, t6.header_bytes), (2, 120));
        // Overhead falls with size, then rises again with every new fragment.
        assert!(pct(Ip::V6, Transport::Udp, 1452) < pct(Ip::V6, Transport::Udp, 1453));
    }

    #[test]
    fn small_frames_are_padded_and_small_mtus_refused() {
        let c = carry(Ip::V4, Transport::Udp, 1, 1500).unwrap();
        assert_eq!(
            (c.captured_frame_bytes, c.frame_bytes, c.wire_bytes),
            (43, 64, 84)
        );
        assert_eq!(
            carry(Ip::V6, Transport::Udp, 1, 1000).unwrap_err(),
            OverheadError::MtuTooSmall { mtu: 1000 }
        );
        assert!(carry(Ip::V4, Transport::Tcp, 0, 68).is_ok());
        // Loopback's 65536-byte MTU: an IPv4 packet still ends at 65535 bytes.
        let lo = carry(Ip::V4, Transport::Tcp, 100_000, 65_536).unwrap();
        assert_eq!((lo.packets, lo.ip_bytes - lo.header_bytes), (2, 100_000));
        assert_eq!(lo.header_bytes, 80);
        assert!(
            carry(Ip::V4, Transport::Tcp, 65_495, 65_536)
                .unwrap()
                .packets
                == 1
        );
        assert!(
            carry(Ip::V4, Transport::Tcp, 65_496, 65_536)
                .unwrap()
                .packets
                == 2
        );
    }
}
