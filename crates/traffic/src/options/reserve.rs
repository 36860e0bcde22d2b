//! `send --reserve` and its companions as plans write them (`reserve = "controlled-load"`,
//! `reserve_refresh = "30s"`): the RSVP reservation (RFC 2205) every flow of one `send`
//! asks for, with the IntServ service (Controlled-Load, RFC 2211; Guaranteed, RFC 2212).
//! They are options of the whole `send`, not of one flow line, so they are kept beside
//! the [`FlowOptions`](super::FlowOptions) ([`super::NamedOptions::finish_reserved`]),
//! and checked against the flows as `send` checks them.

use wire::control::{Protocol, ReserveService};
use wire::time::Duration;

use super::checks::OptionError;
use super::values::ValueError;
use crate::flow::FlowSpec;

/// How routers tell the reserved flows apart (`--reserve-filter`, the FILTER_SPEC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReserveFilter {
    /// IPv6 source address and flow label (C-Type 3): IPv6 only.
    FlowLabel,
    /// Source address and port (C-Type 1 or 2).
    FiveTuple,
}

/// A `send`'s reservation: `--reserve SERVICE` and what goes with it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReserveOptions {
    /// `--reserve`.
    pub service: ReserveService,
    /// `--reserve-refresh`: the refresh period R (`send`'s default 30 s when `None`).
    pub refresh: Option<Duration>,
    /// `--reserve-burst`: the Tspec's bucket depth, bytes.
    pub burst: Option<u64>,
    /// `--reserve-filter` (by family when `None`: the flow label on IPv6).
    pub filter: Option<ReserveFilter>,
    /// `--reserve-wait`: how long the flows may wait for their Resv before they start.
    pub wait: Option<Duration>,
}

/// The shortest refresh period `send` takes (the RSVP engine's floor).
pub const MIN_REFRESH: Duration = Duration::from_millis(1);

/// `--reserve`'s service: `controlled-load` or `guaranteed`.
pub(super) fn parse_service(v: &str) -> Result<ReserveService, ValueError> {
    match v {
        "controlled-load" => Ok(ReserveService::ControlledLoad),
        "guaranteed" => Ok(ReserveService::Guaranteed),
        _ => Err(ValueError(
            "expected controlled-load (RFC 2211) or guaranteed (RFC 2212)".into(),
        )),
    }
}

/// `--reserve-filter`: `flow-label` or `5-tuple`.
pub(super) fn parse_filter(v: &str) -> Result<ReserveFilter, ValueError> {
    match v {
        "flow-label" => Ok(ReserveFilter::FlowLabel),
        "5-tuple" => Ok(ReserveFilter::FiveTuple),
        _ => Err(ValueError("expected flow-label or 5-tuple".into())),
    }
}

impl ReserveOptions {
    /// Whether `send` reserves `flows` as these options ask: UDP flows with a mean rate
    /// (the Tspec's r), and a refresh period of at least [`MIN_REFRESH`].
    pub fn check(&self, flows: &[FlowSpec]) -> Result<(), OptionError> {
        if let Some(r) = self.refresh.filter(|r| *r < MIN_REFRESH) {
            return Err(OptionError::new(
                "--reserve-refresh",
                format!("--reserve-refresh {r} is below {MIN_REFRESH}"),
            ));
        }
        for f in flows {
            if f.protocol == Protocol::Tcp {
                return Err(OptionError::new(
                    "--reserve",
                    format!("--reserve reserves UDP flows only: {} is TCP, whose rate is its congestion control's", f.label),
                ));
            }
            if !f.mean_pps().is_some_and(|p| p > 0.0) {
                return Err(OptionError::new(
                    "--reserve",
                    format!("--reserve needs each flow's rate: {} has no mean rate (unpaced bulk, or gaps without a mean)", f.label),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::NamedOptions;

    fn named(items: &[(&str, Option<&str>)]) -> Result<NamedOptions<'static>, OptionError> {
        let mut o = NamedOptions::new(|_| Ok(String::new()));
        for (k, v) in items {
            o.set(k, *v)?;
        }
        Ok(o)
    }

    #[test]
    fn a_plans_reserve_keys_are_reads_of_sends_flags() {
        let (flow, reserve) = named(&[
            ("stream", Some("webaudio")),
            ("reserve", Some("controlled-load")),
            ("reserve_refresh", Some("30s")),
            ("reserve_filter", Some("5-tuple")),
            ("reserve-burst", Some("2500")),
            ("reserve_wait", Some("2s")),
        ])
        .unwrap()
        .finish_reserved()
        .unwrap();
        assert_eq!(
            reserve,
            Some(ReserveOptions {
                service: ReserveService::ControlledLoad,
                refresh: Some(Duration::from_secs(30)),
                burst: Some(2500),
                filter: Some(ReserveFilter::FiveTuple),
                wait: Some(Duration::from_secs(2)),
            })
        );
        let specs = flow.to_specs("f".into(), 0).unwrap();
        assert_eq!(reserve.unwrap().check(&specs.flows), Ok(()));
        // Without --reserve: none, and the flow alone.
        let (_, none) = named(&[("stream", Some("webaudio"))])
            .unwrap()
            .finish_reserved()
            .unwrap();
        assert_eq!(none, None);
    }

    #[test]
    fn reserve_mistakes_name_their_option() {
        for (items, option, text) in [
            (
                &[("reserve", Some("best-effort"))][..],
                "--reserve",
                "expected controlled-load (RFC 2211) or guaranteed (RFC 2212)",
            ),
            (
                &[
                    ("reserve", Some("guaranteed")),
                    ("reserve_filter", Some("port")),
                ],
                "--reserve-filter",
                "expected flow-label or 5-tuple",
            ),
            (
                &[("reserve_refresh", Some("30s"))],
                "--reserve-refresh",
                "--reserve-refresh requires --reserve",
            ),
            (
                &[("reserve_burst", Some("1000"))],
                "--reserve-burst",
                "--reserve-burst requires --reserve",
            ),
        ] {
            let e = named(items)
                .and_then(NamedOptions::finish_reserved)
                .unwrap_err();
            assert_eq!(e.option(), option, "{e}");
            assert!(e.to_string().contains(text), "{e}");
        }
        let check = |items: &[(&str, Option<&str>)]| {
            let (flow, reserve) = named(items).unwrap().finish_reserved().unwrap();
            let specs = flow.to_specs("f".into(), 0).unwrap();
            reserve.unwrap().check(&specs.flows).unwrap_err()
        };
        let e = check(&[("tcp", None), ("reserve", Some("controlled-load"))]);
        assert_eq!(e.option(), "--reserve");
        assert!(e.to_string().contains("UDP flows only"), "{e}");
        let e = check(&[("bulk", None), ("reserve", Some("controlled-load"))]);
        assert!(e.to_string().contains("no mean rate"), "{e}");
        let e = check(&[
            ("reserve", Some("controlled-load")),
            ("reserve_refresh", Some("0s")),
        ]);
        assert_eq!(e.option(), "--reserve-refresh");
    }
}
