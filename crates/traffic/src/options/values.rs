//! Parsers of single flow option values: voice activity models, D-ITG's VoIP headers,
//! meters, flow labels and distributions. Each is what `dualperf send` accepts for one
//! option; the error says what is wrong with the value (the caller names the option).

use wire::control::Meter;

use crate::distribution::{Dist, DistError};
use crate::voip::{VoipHeader, P59_PAUSE_S, P59_TALK_SPURT_S};

/// A value an option cannot take, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ValueError(pub String);

/// A voice activity model (`--vad`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Vad {
    /// D-ITG's constant 0.65 factor.
    Ditg,
    /// Exponential talk spurts and silences with these means.
    OnOff {
        /// Mean talk spurt, seconds.
        spurt_s: f64,
        /// Mean silence, seconds.
        pause_s: f64,
    },
}

/// `onoff`, `onoff:SPURT,PAUSE` (means in seconds) or `ditg`.
pub fn parse_vad(s: &str) -> Result<Vad, ValueError> {
    let lower = s.to_ascii_lowercase();
    match lower.split_once(':') {
        None if lower == "ditg" => Ok(Vad::Ditg),
        None if lower == "onoff" => Ok(Vad::OnOff {
            spurt_s: P59_TALK_SPURT_S,
            pause_s: P59_PAUSE_S,
        }),
        Some(("onoff", means)) => {
            let parse = |v: Option<&str>| {
                v.and_then(|v| v.trim().parse::<f64>().ok())
                    .filter(|v| v.is_finite() && *v > 0.0)
            };
            let mut it = means.split(',');
            match (parse(it.next()), parse(it.next()), it.next()) {
                (Some(spurt_s), Some(pause_s), None) => Ok(Vad::OnOff { spurt_s, pause_s }),
                _ => Err(ValueError(format!(
                    "'{s}': onoff:SPURT,PAUSE takes two mean durations in seconds above 0, e.g. onoff:1.004,1.587"
                ))),
            }
        }
        _ => Err(ValueError(format!(
            "unknown voice activity model '{s}': use onoff, onoff:SPURT,PAUSE or ditg"
        ))),
    }
}

/// `rtp`, `crtp` or `none`.
pub fn parse_voip_header(s: &str) -> Result<VoipHeader, ValueError> {
    match s.to_ascii_lowercase().as_str() {
        "rtp" => Ok(VoipHeader::Rtp),
        "crtp" => Ok(VoipHeader::Crtp),
        "none" => Ok(VoipHeader::None),
        _ => Err(ValueError(format!(
            "unknown VoIP header '{s}': use rtp, crtp or none"
        ))),
    }
}

/// `owd` or `rtt` (D-ITG's `owdm`/`rttm` too).
pub fn parse_meter(s: &str) -> Result<Meter, ValueError> {
    match s.to_ascii_lowercase().as_str() {
        "owd" | "owdm" => Ok(Meter::Owd),
        "rtt" | "rttm" => Ok(Meter::Rtt),
        _ => Err(ValueError(format!("unknown meter '{s}': use owd or rtt"))),
    }
}

/// A 20-bit IPv6 flow label, decimal or `0x` hex.
pub fn parse_flow_label(s: &str) -> Result<u32, ValueError> {
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(h, 16)
    } else {
        s.parse()
    }
    .map_err(|_| ValueError(format!("invalid flow label '{s}'")))?;
    if v > 0xF_FFFF {
        return Err(ValueError(format!(
            "flow label {s} exceeds 20 bits (max 0xfffff)"
        )));
    }
    Ok(v)
}

/// A distribution in `kind:args` spelling; `file:PATH` takes the values from the text
/// `read` returns for PATH (the caller does the reading: this crate does no I/O).
pub fn parse_dist(
    s: &str,
    read: impl FnOnce(&str) -> std::io::Result<String>,
) -> Result<Dist, ValueError> {
    match s.parse::<Dist>() {
        Err(DistError::NeedsFile(path)) => {
            let text = read(&path)
                .map_err(|e| ValueError(format!("cannot read values from {path}: {e}")))?;
            Dist::empirical_from_text(&text).map_err(|e| ValueError(format!("{path}: {e}")))
        }
        other => other.map_err(|e| ValueError(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vad_models_parse_with_p59_defaults() {
        assert_eq!(parse_vad("DITG").unwrap(), Vad::Ditg);
        assert_eq!(
            parse_vad("onoff").unwrap(),
            Vad::OnOff {
                spurt_s: P59_TALK_SPURT_S,
                pause_s: P59_PAUSE_S
            }
        );
        assert_eq!(
            parse_vad("onoff:2,3").unwrap(),
            Vad::OnOff {
                spurt_s: 2.0,
                pause_s: 3.0
            }
        );
        for bad in [
            "onoff:1",
            "onoff:0,1",
            "onoff:1,2,3",
            "onoff:x,1",
            "silence",
        ] {
            assert!(parse_vad(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn meters_headers_and_labels_parse_and_reject_junk() {
        assert_eq!(parse_meter("RTTM").unwrap(), Meter::Rtt);
        assert!(parse_meter("x").is_err());
        assert_eq!(parse_voip_header("CRTP").unwrap(), VoipHeader::Crtp);
        assert!(parse_voip_header("srtp").is_err());
        assert_eq!(parse_flow_label("0x12345").unwrap(), 0x12345);
        assert_eq!(parse_flow_label("1048575").unwrap(), 0xF_FFFF);
        assert!(parse_flow_label("0x100000").is_err());
        assert!(parse_flow_label("zz").is_err());
    }

    #[test]
    fn file_distributions_read_through_the_callers_reader() {
        let d = parse_dist("file:gaps.txt", |p| {
            assert_eq!(p, "gaps.txt");
            Ok("1\n2\n3\n".into())
        })
        .unwrap();
        assert_eq!(d.mean(), Some(2.0));
        let e =
            parse_dist("file:missing", |_| Err(std::io::ErrorKind::NotFound.into())).unwrap_err();
        assert!(e.0.starts_with("cannot read values from missing"), "{e}");
        assert_eq!(
            parse_dist("exp:10", |_| unreachable!()).unwrap(),
            Dist::Exponential { mean: 10.0 }
        );
    }
}
