//! `dualperf overhead`: header overhead, fragmentation and codec bandwidth of IPv4 and
//! IPv6, computed (never measured) by `wire::overhead` and `traffic::voip`.

use anyhow::Result;
use serde::Serialize;
use traffic::voip::{Bandwidth, Codec, VoipHeader};
use wire::overhead::{carry, Carriage, Ip, Transport};

use crate::usage;

/// Compute what IPv4 and IPv6 headers cost: overhead %, packets, fragments and bytes on
/// the wire for a payload over TCP and UDP, and the bandwidth of D-ITG's VoIP codecs.
///
/// Overhead % is header bytes ÷ IP packet bytes, Kharche and Patil's definition (32 bytes
/// over TCP/IPv4: 40/72 = 55.56 %). UDP beyond the MTU is fragmented (RFC 791, RFC 8200
/// §4.5), TCP segmented at the MSS. Frames are Ethernet: a capture shows 14 + IP bytes,
/// the link carries FCS, padding to 64 and 20 more of preamble and gap.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf overhead                          # 32 bytes, as Kharche & Patil's Table 1
  dualperf overhead --payload 32,1472,1473,65496
  dualperf overhead --sweep --json           # 32 B to 65,496 B, through fragmentation
  dualperf overhead --codecs                 # D-ITG's VoIP presets at L3, L2 and on the wire
  dualperf overhead --payload 252            # Bouras et al.'s G.711 30 ms packets: 294/314-byte frames")]
pub(crate) struct OverheadArgs {
    /// Payload sizes in bytes, comma-separated (what the application hands to TCP or UDP).
    #[arg(long, value_delimiter = ',', default_value = "32")]
    payload: Vec<u32>,
    /// Kharche and Patil's sweep instead of --payload: 32 bytes to 65,496 bytes.
    #[arg(long, conflicts_with = "payload")]
    sweep: bool,
    /// Link MTU (1500 for Ethernet, 65536 for Linux loopback).
    #[arg(long, default_value_t = wire::overhead::ETHERNET_MTU)]
    mtu: u32,
    /// The bandwidth of D-ITG's five VoIP codecs with RTP and CRTP, with and without its
    /// VAD factor, instead of payload sizes.
    #[arg(long, conflicts_with_all = ["payload", "sweep"])]
    codecs: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Kharche and Patil's payload sweep (Figure 6), with the sizes where IPv4 and
/// IPv6 start to fragment on Ethernet.
const SWEEP: [u32; 16] = [
    32, 64, 128, 256, 512, 1024, 1452, 1453, 1472, 1473, 2048, 4096, 8192, 16384, 32768, 65496,
];

#[derive(Serialize)]
struct Row {
    transport: Transport,
    ip: Ip,
    #[serde(flatten)]
    carriage: Carriage,
}

#[derive(Serialize)]
struct CodecRow {
    codec: Codec,
    header: VoipHeader,
    ditg_vad: bool,
    ipv4: Bandwidth,
    ipv6: Bandwidth,
}

pub(crate) fn run(args: OverheadArgs) -> Result<()> {
    if args.codecs {
        return codecs(args.json);
    }
    let payloads: &[u32] = if args.sweep { &SWEEP } else { &args.payload };
    let mut rows = Vec::new();
    for &payload in payloads {
        for transport in [Transport::Tcp, Transport::Udp] {
            for ip in [Ip::V4, Ip::V6] {
                match carry(ip, transport, payload, args.mtu) {
                    Ok(carriage) => rows.push(Row {
                        transport,
                        ip,
                        carriage,
                    }),
                    Err(e @ wire::overhead::OverheadError::TooLarge { .. }) => {
                        if !args.sweep {
                            usage!("--payload {payload}: {e}");
                        }
                    }
                    Err(e) => usage!("{e}"),
                }
            }
        }
    }
    if args.json {
        return crate::out::print_json(&serde_json::json!({
            "format_version": 1,
            "mtu": args.mtu,
            "rows": rows,
        }));
    }
    let mut t = report::text_table::Table::new(&[
        "payload B",
        "proto",
        "packets",
        "header B",
        "IP B",
        "overhead %",
        "captured frames B",
        "on the wire B",
        "wire overhead %",
    ]);
    for r in &rows {
        let c = &r.carriage;
        t.row(vec![
            c.payload_bytes.to_string(),
            format!("{}/{}", format!("{:?}", r.transport).to_uppercase(), r.ip),
            c.packets.to_string(),
            c.header_bytes.to_string(),
            c.ip_bytes.to_string(),
            format!("{:.2}", c.overhead_pct),
            c.captured_frame_bytes.to_string(),
            c.wire_bytes.to_string(),
            format!("{:.2}", c.wire_overhead_pct),
        ]);
    }
    crate::out::print(format!(
        "dualperf overhead: MTU {} bytes, Ethernet framing\n{}\
         overhead % = header bytes / IP packet bytes (Kharche & Patil). UDP beyond the MTU is\n\
         fragmented by IP; TCP is cut into MSS-sized segments. Captured frames: 14 + IP bytes\n\
         (what Wireshark shows); on the wire: + FCS, padding to 64, preamble and gap (+24).\n",
        args.mtu,
        t.render()
    ))
}

fn codecs(json: bool) -> Result<()> {
    let mut rows = Vec::new();
    for codec in Codec::ALL {
        for header in [VoipHeader::Rtp, VoipHeader::Crtp] {
            for ditg_vad in [false, true] {
                rows.push(CodecRow {
                    codec,
                    header,
                    ditg_vad,
                    ipv4: codec.bandwidth(header, ditg_vad, Ip::V4),
                    ipv6: codec.bandwidth(header, ditg_vad, Ip::V6),
                });
            }
        }
    }
    if json {
        return crate::out::print_json(&serde_json::json!({
            "format_version": 1,
            "codecs": rows,
        }));
    }
    let kbit = |b: f64| format!("{:.2}", b / 1e3);
    let mut t = report::text_table::Table::new(&[
        "codec",
        "header",
        "VAD",
        "payload B",
        "pkt/s",
        "payload kbit/s",
        "IPv4 kbit/s",
        "IPv6 kbit/s",
        "IPv4 L2",
        "IPv6 L2",
        "IPv4 wire",
        "IPv6 wire",
        "hdr % v4",
        "hdr % v6",
    ]);
    for r in &rows {
        t.row(vec![
            r.codec.to_string(),
            format!("{:?}", r.header).to_lowercase(),
            if r.ditg_vad { "×0.65" } else { "-" }.to_owned(),
            r.ipv4.payload_bytes.to_string(),
            format!("{}", r.ipv4.pps),
            kbit(r.ipv4.payload_bps),
            kbit(r.ipv4.ip_bps),
            kbit(r.ipv6.ip_bps),
            kbit(r.ipv4.frame_bps),
            kbit(r.ipv6.frame_bps),
            kbit(r.ipv4.wire_bps),
            kbit(r.ipv6.wire_bps),
            format!("{:.1}", r.ipv4.header_pct),
            format!("{:.1}", r.ipv6.header_pct),
        ]);
    }
    crate::out::print(format!(
        "dualperf overhead --codecs: D-ITG's VoIP models (payload = codec bytes × VAD + RTP 12 or CRTP 2)\n{}\
         L3 adds UDP and IP headers (28 or 48 bytes), L2 Ethernet's 18 (frames padded to 64), the wire\n\
         20 more. hdr % counts IP, UDP and the RTP/CRTP header against the IP packet (Kharche & Patil §2).\n",
        t.render()
    ))
}
