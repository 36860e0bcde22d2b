//! The tables of `dualperf overhead`, computed (never measured): what IPv4 and IPv6
//! headers cost a payload over TCP and UDP ([`carriage_rows`], from `wire::overhead`)
//! and the bandwidth of D-ITG's VoIP codecs ([`codec_rows`], from [`crate::voip`]), with
//! each row's cells as the text table shows them.

use serde::{Deserialize, Serialize};
use wire::overhead::{carry, Carriage, Ip, OverheadError, Transport};

use crate::voip::{Bandwidth, Codec, VoipHeader};

/// Kharche and Patil's payload sweep (Figure 6), with the sizes where IPv4 and
/// IPv6 start to fragment on Ethernet.
pub const SWEEP: [u32; 16] = [
    32, 64, 128, 256, 512, 1024, 1452, 1453, 1472, 1473, 2048, 4096, 8192, 16384, 32768, 65496,
];

/// `dualperf overhead --json`: the payloads' table on a link of one MTU.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CarriageDoc {
    /// The document's format, 1.
    pub format_version: u32,
    /// The link MTU, bytes.
    pub mtu: u32,
    /// Each payload over TCP and UDP, over IPv4 and IPv6 (see [`carriage_rows`]).
    pub rows: Vec<Row>,
}

/// `dualperf overhead --codecs --json`: the codecs' table.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CodecDoc {
    /// The document's format, 1.
    pub format_version: u32,
    /// Each codec with each header, without and with D-ITG's VAD factor (see [`codec_rows`]).
    pub codecs: Vec<CodecRow>,
}

/// One payload over one transport and one IP version.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Row {
    /// TCP or UDP.
    pub transport: Transport,
    /// IPv4 or IPv6.
    pub ip: Ip,
    /// Packets, headers and bytes on the wire.
    #[serde(flatten)]
    pub carriage: Carriage,
}

/// A payload that cannot be carried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct RowError {
    /// The payload, bytes.
    pub payload: u32,
    /// Why.
    pub error: OverheadError,
}

/// Each payload over TCP and UDP, over IPv4 and IPv6, on a link of `mtu` bytes; with
/// `skip_too_large`, a payload too large for one transport or IP version is left out of
/// the table instead of failing it.
pub fn carriage_rows(
    payloads: &[u32],
    mtu: u32,
    skip_too_large: bool,
) -> Result<Vec<Row>, RowError> {
    let mut rows = Vec::new();
    for &payload in payloads {
        for transport in [Transport::Tcp, Transport::Udp] {
            for ip in [Ip::V4, Ip::V6] {
                match carry(ip, transport, payload, mtu) {
                    Ok(carriage) => rows.push(Row {
                        transport,
                        ip,
                        carriage,
                    }),
                    Err(OverheadError::TooLarge { .. }) if skip_too_large => {}
                    Err(error) => return Err(RowError { payload, error }),
                }
            }
        }
    }
    Ok(rows)
}

/// The columns of the payloads' text table.
pub const CARRIAGE_COLUMNS: [&str; 9] = [
    "payload B",
    "proto",
    "packets",
    "header B",
    "IP B",
    "overhead %",
    "captured frames B",
    "on the wire B",
    "wire overhead %",
];

/// A payload row's cells, under [`CARRIAGE_COLUMNS`].
pub fn carriage_cells(r: &Row) -> Vec<String> {
    let c = &r.carriage;
    vec![
        c.payload_bytes.to_string(),
        format!("{}/{}", format!("{:?}", r.transport).to_uppercase(), r.ip),
        c.packets.to_string(),
        c.header_bytes.to_string(),
        c.ip_bytes.to_string(),
        format!("{:.2}", c.overhead_pct),
        c.captured_frame_bytes.to_string(),
        c.wire_bytes.to_string(),
        format!("{:.2}", c.wire_overhead_pct),
    ]
}

/// One codec with one header, with or without D-ITG's VAD factor, over both IP versions.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CodecRow {
    /// The codec.
    pub codec: Codec,
    /// RTP or CRTP.
    pub header: VoipHeader,
    /// D-ITG's VAD factor (×0.65) applied.
    pub ditg_vad: bool,
    /// Over IPv4.
    pub ipv4: Bandwidth,
    /// Over IPv6.
    pub ipv6: Bandwidth,
}

/// Every codec with RTP and CRTP, without and with D-ITG's VAD factor.
pub fn codec_rows() -> Vec<CodecRow> {
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
    rows
}

/// The columns of the codecs' text table.
pub const CODEC_COLUMNS: [&str; 14] = [
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
];

/// A codec row's cells, under [`CODEC_COLUMNS`].
pub fn codec_cells(r: &CodecRow) -> Vec<String> {
    let kbit = |b: f64| format!("{:.2}", b / 1e3);
    vec![
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
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_gives_four_rows_and_a_too_large_one_fails_unless_skipped() {
        let rows = carriage_rows(&[32], 1500, false).unwrap();
        let cells: Vec<Vec<String>> = rows.iter().map(carriage_cells).collect();
        // Kharche and Patil's Table 1: 32 bytes over TCP/IPv4 is 40/72 = 55.56 %; on the
        // wire 14 + 72 + 4 (FCS) + 20 = 110 bytes, 78 of them overhead.
        assert_eq!(
            cells[0],
            ["32", "TCP/IPv4", "1", "40", "72", "55.56", "86", "110", "70.91"]
        );
        let protos: Vec<&str> = cells.iter().map(|c| c[1].as_str()).collect();
        assert_eq!(protos, ["TCP/IPv4", "TCP/IPv6", "UDP/IPv4", "UDP/IPv6"]);
        // A UDP datagram over IPv4 carries 65,535 − 20 − 8 = 65,507 bytes at most; over
        // IPv6 65,535 − 8 (the payload length leaves out the fixed header): 65,510 bytes
        // fail UDP/IPv4 alone.
        let err = carriage_rows(&[65_510], 1500, false).unwrap_err();
        assert_eq!(err.payload, 65_510);
        assert!(
            matches!(err.error, OverheadError::TooLarge { .. }),
            "{err:?}"
        );
        let kept = carriage_rows(&[65_510], 1500, true).unwrap();
        let protos: Vec<String> = kept.iter().map(|r| carriage_cells(r)[1].clone()).collect();
        assert_eq!(protos, ["TCP/IPv4", "TCP/IPv6", "UDP/IPv6"]);
        assert!(matches!(
            carriage_rows(&[32], 10, true),
            Err(RowError {
                payload: 32,
                error: OverheadError::MtuTooSmall { mtu: 10 }
            })
        ));
    }

    #[test]
    fn every_codec_has_four_rows() {
        let rows = codec_rows();
        assert_eq!(rows.len(), Codec::ALL.len() * 4);
        let first = codec_cells(&rows[0]);
        assert_eq!(first.len(), CODEC_COLUMNS.len());
        assert_eq!((first[1].as_str(), first[2].as_str()), ("rtp", "-"));
        assert_eq!(codec_cells(&rows[1])[2], "×0.65");
    }
}
