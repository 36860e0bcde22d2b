//! `dualperf overhead`: header overhead, fragmentation and codec bandwidth of IPv4 and
//! IPv6, computed (never measured) by `traffic::overhead_table` from `wire::overhead`
//! and `traffic::voip`.

use anyhow::Result;
use traffic::overhead_table::{
    carriage_cells, carriage_rows, codec_cells, codec_rows, CarriageDoc, CodecDoc,
    CARRIAGE_COLUMNS, CODEC_COLUMNS, SWEEP,
};
use wire::overhead::OverheadError;

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

pub(crate) fn run(args: OverheadArgs) -> Result<()> {
    if args.codecs {
        return codecs(args.json);
    }
    let payloads: &[u32] = if args.sweep { &SWEEP } else { &args.payload };
    let rows = match carriage_rows(payloads, args.mtu, args.sweep) {
        Ok(rows) => rows,
        Err(
            e @ traffic::overhead_table::RowError {
                error: OverheadError::TooLarge { .. },
                ..
            },
        ) => usage!("--payload {}: {e}", e.payload),
        Err(e) => usage!("{e}"),
    };
    if args.json {
        // Keys in name order, as the document has always had them.
        return crate::out::print_json(&crate::out::sorted_json(&CarriageDoc {
            format_version: 1,
            mtu: args.mtu,
            rows,
        })?);
    }
    let mut t = report::text_table::Table::new(&CARRIAGE_COLUMNS);
    for r in &rows {
        t.row(carriage_cells(r));
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
    let rows = codec_rows();
    if json {
        // Keys in name order, as the document has always had them.
        return crate::out::print_json(&crate::out::sorted_json(&CodecDoc {
            format_version: 1,
            codecs: rows,
        })?);
    }
    let mut t = report::text_table::Table::new(&CODEC_COLUMNS);
    for r in &rows {
        t.row(codec_cells(r));
    }
    crate::out::print(format!(
        "dualperf overhead --codecs: D-ITG's VoIP models (payload = codec bytes × VAD + RTP 12 or CRTP 2)\n{}\
         L3 adds UDP and IP headers (28 or 48 bytes), L2 Ethernet's 18 (frames padded to 64), the wire\n\
         20 more. hdr % counts IP, UDP and the RTP/CRTP header against the IP packet (Kharche & Patil §2).\n",
        t.render()
    ))
}
