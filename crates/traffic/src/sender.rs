//! How `dualperf send` carries its flows, decided from their specs alone: which sender
//! thread sends each flow ([`assign`]), which flows the kernel paces rather than the
//! scheduler ([`kernel_paced`], at the rate of [`kernel_pacing`]), and how large a
//! flow's buffered packets may be ([`max_payload`]), and how it announces each flow to
//! the receiver ([`announce`]). The threads and sockets are the binary's; the host's CPU
//! count and a UDP flow's source port come in as arguments.

use wire::control::{FlowAnnounce, Meter, Protocol};
use wire::frame;
use wire::time::Duration;

use crate::flow::FlowSpec;

/// Paced packets a second one sender thread is given by default. On this project's
/// 2-CPU reference host, receiver on the same host, one thread sends one flow at 2,000,000
/// pkt/s (GSO runs) and 10,000 flows × 50 pkt/s (500,000 pkt/s) with the median flow's
/// schedule-error p99 at 8 µs; two spinning threads take the CPUs from the receiver and
/// the kernel, and the same 10,000 flows' median p99 was 3.4 ms (issue 15). Earlier,
/// with 1,000 G.711 calls: 9–51 µs on one thread, 100–320 µs on two.
pub const PPS_PER_THREAD: f64 = 1_000_000.0;

/// The sender thread of each flow: a flow without a schedule (bulk) gets a thread of its
/// own, as it keeps a core busy by itself (iperf3 runs one thread per stream too); paced
/// flows are spread over `threads` threads (default: one per [`PPS_PER_THREAD`] of their
/// mean rate, at most one per CPU of the `cpus` the host has), each flow to the thread
/// with the lowest packet rate so far.
pub fn assign(flows: &[FlowSpec], threads: Option<usize>, cpus: usize) -> Vec<usize> {
    let own = |f: &FlowSpec| f.unpaced || kernel_paced(f);
    let paced = flows.iter().filter(|f| !own(f)).count();
    // A flow of unknown rate counts as one packet a second.
    let pps = |f: &FlowSpec| f.mean_pps().unwrap_or(1.0).max(1e-3);
    let threads = threads
        .unwrap_or_else(|| {
            let load: f64 = flows.iter().filter(|f| !own(f)).map(pps).sum();
            ((load / PPS_PER_THREAD).ceil() as usize).clamp(1, cpus.max(1))
        })
        .clamp(1, paced.max(1));
    let mut load = vec![0.0f64; threads];
    let mut next_own = threads;
    flows
        .iter()
        .map(|f| {
            if own(f) {
                next_own += 1;
                return next_own - 1;
            }
            let (e, _) = load
                .iter()
                .enumerate()
                .min_by(|a, b| a.1.total_cmp(b.1))
                .unwrap_or((0, &0.0));
            load[e] += pps(f);
            e
        })
        .collect()
}

/// Whether the kernel paces this flow rather than the scheduler: a TCP bulk flow with a
/// constant rate (`--tcp --bulk --rate 10gbit`), whose measure is its throughput, not
/// its schedule. Its rate goes to `SO_MAX_PACING_RATE` and the engine writes as fast as
/// the socket takes, as iperf3's `--fq-rate` does; measured flows keep the scheduler
/// (and its spin), whose schedule error is reported.
pub fn kernel_paced(spec: &FlowSpec) -> bool {
    spec.bulk
        && spec.protocol == Protocol::Tcp
        && !spec.unpaced
        && spec.idt_ms.is_none()
        && spec.size_dist.is_none()
        && spec.on_off_ms.is_none()
        && spec.video.is_none()
}

/// The `SO_MAX_PACING_RATE` of a kernel-paced flow, in bytes per second: its payload
/// rate with the message framing. TCP's own pacing spaces the segments of its write queue
/// by their payload (`tcp_update_skb_after_send`), so headers add nothing here; this is
/// iperf3's `--fq-rate` conversion too.
pub fn kernel_pacing(spec: &FlowSpec) -> Option<u64> {
    if !kernel_paced(spec) {
        return None;
    }
    let pps = spec.rate.pps(spec.size_bytes);
    Some((pps * (spec.size_bytes as usize + frame::PREFIX_LEN) as f64).ceil() as u64)
}

/// The largest payload a flow may send: its size, or what the protocol allows when sizes
/// are drawn from a distribution (the schedule clamps them to that), or a video packet.
pub fn max_payload(spec: &FlowSpec) -> usize {
    let size = match (&spec.size_dist, spec.protocol) {
        (None, _) => spec.size_bytes as usize,
        (Some(_), Protocol::Udp) => 65_507,
        (Some(_), Protocol::Tcp) => frame::MAX_DATA_LEN,
    };
    match &spec.video {
        Some(v) => size.max((v.header_bytes as usize + v.max_chunk_bytes as usize).min(65_507)),
        None => size,
    }
}

/// Flow `index` as the sender announces it in its `Register` (`src_port`: a UDP flow's
/// source port, for its echoes): with the receiver's series in windows of `interval`,
/// and with `cdf` the one-way delay's distribution (a round trip's is the sender's).
pub fn announce(
    index: u32,
    spec: &FlowSpec,
    src_port: Option<u16>,
    interval: Option<Duration>,
    cdf: bool,
) -> FlowAnnounce {
    FlowAnnounce {
        index,
        protocol: spec.protocol,
        meter: spec.meter,
        size_bytes: spec.size_bytes,
        tos: spec.marking.tos(),
        ttl: spec.marking.ttl,
        flow_label: spec.marking.flow_label,
        src_port,
        translated: false,
        label: spec.label.clone(),
        rtp_clock_hz: spec.rtp.map(|r| r.clock_rate_hz),
        interval_ns: interval.map(Duration::as_nanos),
        cdf: cdf && spec.meter == Meter::Owd,
        bulk: spec.bulk || spec.unpaced,
        unpaced: spec.unpaced,
        window_bytes: spec.window_bytes,
        omit_ns: spec.omit_ns,
        reserve: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribution::Dist;
    use crate::flow::VideoSpec;
    use crate::Rate;

    fn paced(pps: u64) -> FlowSpec {
        FlowSpec {
            rate: Rate::MilliPps(pps * 1000),
            ..FlowSpec::default()
        }
    }

    fn tcp_bulk(rate: Rate, size_bytes: u32) -> FlowSpec {
        FlowSpec {
            protocol: Protocol::Tcp,
            bulk: true,
            rate,
            size_bytes,
            ..FlowSpec::default()
        }
    }

    #[test]
    fn paced_flows_share_as_few_threads_as_their_rate_needs_and_bulk_flows_get_their_own() {
        // 1,000 calls of 50 pkt/s: 50,000 pkt/s, one thread.
        let calls = vec![paced(50); 1_000];
        assert!(assign(&calls, None, 8).iter().all(|&e| e == 0));
        // 10,000 of them, 500,000 pkt/s: still one thread (a second spinning one takes
        // the CPUs a receiver on the same host needs).
        assert!(assign(&vec![paced(50); 10_000], None, 8)
            .iter()
            .all(|&e| e == 0));
        // Asked for two threads, the flows split evenly by rate.
        let two = assign(&calls, Some(2), 8);
        assert_eq!(two.iter().filter(|&&e| e == 0).count(), 500);
        assert_eq!(two.iter().filter(|&&e| e == 1).count(), 500);
        // A flow of 300,000 pkt/s and many small ones: the small ones go to the other
        // thread.
        let mut mixed = vec![paced(300_000)];
        mixed.extend(vec![paced(1_000); 10]);
        let got = assign(&mixed, Some(2), 8);
        assert_eq!(got[0], 0);
        assert!(got[1..].iter().all(|&e| e == 1), "{got:?}");
        // Bulk flows: one thread each, after the paced flows' threads.
        let bulk = FlowSpec {
            unpaced: true,
            ..FlowSpec::default()
        };
        let got = assign(&[paced(10), bulk.clone(), paced(10), bulk], Some(4), 8);
        assert_eq!(got, [0, 2, 1, 3]);
        // More threads than paced flows are not started.
        assert_eq!(assign(&[paced(10)], Some(8), 8), [0]);
    }

    #[test]
    fn by_default_a_thread_per_million_packets_a_second_up_to_the_cpus() {
        // 2,500,000 pkt/s over five flows: three threads where the host has four CPUs,
        // two where it has two; each flow to the least loaded thread, in turn.
        let flows = vec![paced(500_000); 5];
        assert_eq!(assign(&flows, None, 4), [0, 1, 2, 0, 1]);
        assert_eq!(assign(&flows, None, 2), [0, 1, 0, 1, 0]);
        // A host that says it has no CPUs still gets one thread.
        assert_eq!(assign(&flows, None, 0), [0, 0, 0, 0, 0]);
        // A kernel-paced flow is one of its own: it neither counts in the load nor
        // shares a thread.
        let flows = [tcp_bulk(Rate::Bps(10_000_000_000), 131_072), paced(10)];
        assert_eq!(assign(&flows, None, 4), [1, 0]);
    }

    #[test]
    fn only_a_tcp_bulk_flow_of_a_constant_rate_is_paced_by_the_kernel() {
        // 10 Gbit/s of 131,072-byte messages: 9,536.74… messages a second, each with
        // its 4-byte prefix: 1,250,038,146.97… bytes a second, rounded up.
        let spec = tcp_bulk(Rate::Bps(10_000_000_000), 131_072);
        assert!(kernel_paced(&spec));
        assert_eq!(kernel_pacing(&spec), Some(1_250_038_147));
        // 1,000 messages of 1,000 bytes a second: 1,004,000 bytes a second.
        assert_eq!(
            kernel_pacing(&tcp_bulk(Rate::MilliPps(1_000_000), 1_000)),
            Some(1_004_000)
        );
        // Not bulk, not TCP, unpaced (no --rate), or a schedule of its own: the
        // scheduler's.
        let not = [
            FlowSpec {
                bulk: false,
                ..spec.clone()
            },
            FlowSpec {
                protocol: Protocol::Udp,
                ..spec.clone()
            },
            FlowSpec {
                unpaced: true,
                ..spec.clone()
            },
            FlowSpec {
                idt_ms: Some(Dist::Constant { value: 10.0 }),
                ..spec.clone()
            },
            FlowSpec {
                size_dist: Some(Dist::Constant { value: 100.0 }),
                ..spec.clone()
            },
        ];
        for f in &not {
            assert!(!kernel_paced(f), "{f:?}");
            assert_eq!(kernel_pacing(f), None);
        }
    }

    #[test]
    fn a_flow_is_announced_with_its_marking_its_options_and_the_sessions() {
        use crate::flow::{MarkingSpec, RtpSpec};
        use wire::ds::{Dscp, Ecn};
        let spec = FlowSpec {
            size_bytes: 160,
            label: "g711".into(),
            marking: MarkingSpec {
                dscp: Some(Dscp::EF),
                ecn: Some(Ecn::Ect1),
                ttl: Some(7),
                flow_label: Some(0x12345),
            },
            rtp: Some(RtpSpec {
                payload_type: 0,
                clock_rate_hz: 8_000,
            }),
            window_bytes: Some(65_536),
            omit_ns: Some(2_000_000_000),
            ..FlowSpec::default()
        };
        let a = announce(
            3,
            &spec,
            Some(40_000),
            Some(Duration::from_millis(500)),
            true,
        );
        assert_eq!(
            a,
            FlowAnnounce {
                index: 3,
                protocol: Protocol::Udp,
                meter: Meter::Owd,
                size_bytes: 160,
                // EF (46) << 2 | ECT(1).
                tos: Some(0xb9),
                ttl: Some(7),
                flow_label: Some(0x12345),
                src_port: Some(40_000),
                translated: false,
                label: "g711".into(),
                rtp_clock_hz: Some(8_000),
                interval_ns: Some(500_000_000),
                cdf: true,
                bulk: false,
                unpaced: false,
                window_bytes: Some(65_536),
                omit_ns: Some(2_000_000_000),
                reserve: None,
            }
        );
        // A round trip's distribution is the sender's to measure; an unpaced flow is
        // bulk to the receiver.
        let rtt = FlowSpec {
            meter: Meter::Rtt,
            protocol: Protocol::Tcp,
            unpaced: true,
            ..FlowSpec::default()
        };
        let a = announce(0, &rtt, None, None, true);
        assert_eq!((a.cdf, a.bulk, a.unpaced), (false, true, true));
        assert_eq!((a.tos, a.interval_ns, a.src_port), (None, None, None));
    }

    #[test]
    fn the_largest_payload_is_the_size_or_what_the_protocol_allows() {
        let udp = FlowSpec {
            size_bytes: 512,
            ..FlowSpec::default()
        };
        assert_eq!(max_payload(&udp), 512);
        let drawn = FlowSpec {
            size_dist: Some(Dist::Constant { value: 100.0 }),
            ..udp.clone()
        };
        assert_eq!(max_payload(&drawn), 65_507);
        let tcp = FlowSpec {
            protocol: Protocol::Tcp,
            ..drawn
        };
        assert_eq!(max_payload(&tcp), frame::MAX_DATA_LEN);
        // Video: the largest chunk with its header, if larger than the size.
        let video = FlowSpec {
            video: Some(VideoSpec {
                frame_bytes: Dist::Constant { value: 5_000.0 },
                correlation: 0.0,
                max_chunk_bytes: 1_400,
                header_bytes: 12,
            }),
            ..udp
        };
        assert_eq!(max_payload(&video), 1_412);
    }
}
