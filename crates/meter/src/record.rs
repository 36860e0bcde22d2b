//! Per-packet records: the only input of every metric in this crate.
//!
//! A [`RxRecord`] is one packet as received (by the receiver for the one-way
//! meter, or an echo received back by the sender for the round-trip meter); a
//! [`TxRecord`] is one packet as sent. Slices of records are always given in
//! the order the packets were received or sent ("arrival order").

use serde::{Deserialize, Serialize};

/// One packet as received: by the receiver (one-way meter) or an echo received
/// back by the sender (round-trip meter).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct RxRecord {
    /// Flow id carried in the probe.
    pub flow: u32,
    /// Per-flow sequence number, starting at 0.
    pub seq: u64,
    /// Payload bytes (UDP payload, or TCP message including our probe).
    pub size_bytes: u32,
    /// Sender transmit stamp from the probe: wall-clock ns since the Unix epoch.
    pub tx_ns: u64,
    /// Receive stamp: wall-clock ns since the Unix epoch (kernel stamp when
    /// available, see `kernel_ts`).
    pub rx_ns: u64,
    /// Received DS field byte, `DSCP << 2 | ECN` (IPv4 TOS or IPv6 traffic
    /// class); `None` when the receiver could not learn it.
    pub tos: Option<u8>,
    /// Received IPv4 TTL or IPv6 hop limit; `None` when not known.
    pub hop_limit: Option<u8>,
    /// Received IPv6 flow label (20 bits); `None` for IPv4 or when not known.
    pub flow_label: Option<u32>,
    /// True if `rx_ns` came from a kernel timestamp rather than a user-space
    /// clock read.
    pub kernel_ts: bool,
    /// The RTP timestamp (RFC 3550 §5.1, the sender's media clock) of a packet
    /// whose probe follows an RTP header; `None` for every other packet. With
    /// `rx_ns` it gives the RTP interarrival jitter ([`crate::rtp`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtp_ts: Option<u32>,
}

impl RxRecord {
    /// One-way delay (or round-trip time for echoes), `rx_ns - tx_ns`.
    ///
    /// Signed because the two clocks may disagree: across hosts a packet can
    /// appear to arrive before it was sent. Saturates at the `i64` range
    /// instead of wrapping (stamps more than 292 years apart).
    pub fn delay_ns(&self) -> i64 {
        let delay = i128::from(self.rx_ns) - i128::from(self.tx_ns);
        // The clamp makes the conversion infallible.
        delay.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// Received DSCP (upper six bits of the DS field, RFC 2474 §3).
    pub fn dscp(&self) -> Option<u8> {
        self.tos.map(|tos| tos >> 2)
    }

    /// Received ECN codepoint (lower two bits of the DS field, RFC 3168 §5).
    pub fn ecn(&self) -> Option<u8> {
        self.tos.map(|tos| tos & 0b11)
    }
}

/// One packet as sent, recorded by the sender.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct TxRecord {
    /// Flow id carried in the probe.
    pub flow: u32,
    /// Per-flow sequence number, starting at 0.
    pub seq: u64,
    /// Payload bytes.
    pub size_bytes: u32,
    /// Intended send time from the schedule, monotonic ns.
    pub scheduled_ns: u64,
    /// Actual send time, monotonic ns.
    pub actual_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_is_signed_and_saturates() {
        let mut r = RxRecord {
            tx_ns: 1_000,
            rx_ns: 1_250,
            ..RxRecord::default()
        };
        assert_eq!(r.delay_ns(), 250);
        r.rx_ns = 750;
        assert_eq!(r.delay_ns(), -250);
        r.tx_ns = 0;
        r.rx_ns = u64::MAX;
        assert_eq!(r.delay_ns(), i64::MAX);
        r.tx_ns = u64::MAX;
        r.rx_ns = 0;
        assert_eq!(r.delay_ns(), i64::MIN);
    }

    #[test]
    fn splits_ds_field_into_dscp_and_ecn() {
        // EF (46) with ECT(0) (0b10): 46 << 2 | 2 = 0xba.
        let r = RxRecord {
            tos: Some(0xba),
            ..RxRecord::default()
        };
        assert_eq!(r.dscp(), Some(46));
        assert_eq!(r.ecn(), Some(2));
        let unknown = RxRecord::default();
        assert_eq!(unknown.dscp(), None);
        assert_eq!(unknown.ecn(), None);
    }
}
