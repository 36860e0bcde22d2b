//! Arbitrary bytes as a per-packet log: the reader never panics, whether driven entry by
//! entry from a slice or through the streaming reader, and neither do the streaming
//! meters `decode` feeds every record to (with an interval series, as `--interval`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = meter::log::read_log(data);
    if let Ok(reader) = meter::log::LogReader::open(data) {
        let mut rx = meter::SummaryMeter::new()
            .with_intervals(meter::IntervalSeries::with_max_windows(1_000_000, 1 << 12).unwrap());
        let mut tx = meter::TxMeter::default();
        for entry in reader.flatten() {
            match entry {
                meter::log::Entry::Rx(r) => {
                    rx.set_rtp_clock(r.flow, 90_000);
                    rx.handle_record(&r);
                }
                meter::log::Entry::Tx(t) => tx.handle_record(&t),
                _ => {}
            }
        }
        let _ = rx.summary(&std::collections::BTreeMap::from([(1, 10)]));
        let _ = rx.rtp();
        let _ = rx.intervals();
        let _ = tx.schedule_error();
    }
    let mut rest = data;
    while let Ok((_, used)) = meter::log::parse_entry(rest) {
        if used == 0 || used > rest.len() {
            break;
        }
        rest = &rest[used..];
    }
});
