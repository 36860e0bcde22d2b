//! The flow vocabulary: one flow's options as `dualperf send` spells them (protocol,
//! rate, size, stop, meter, marking, presets, distributions…), checked and turned into
//! [`FlowSpec`](crate::FlowSpec)s.
//!
//! - `checks.rs`: [`FlowOptions`], its checks and [`FlowOptions::to_specs`];
//! - `values.rs`: parsers of single values (`--vad`, `--voip-header`, `--meter`,
//!   `--flow-label`, distributions);
//! - `named.rs`: options set by name, as plans write them ([`NamedOptions`]), with the
//!   conflicts and requirements between options;
//! - `file.rs`: the flow lines of a flow file ([`flow_lines`]);
//! - `reserve.rs`: `--reserve` and its companions ([`ReserveOptions`]), the RSVP
//!   reservation of every flow of one `send`.
//!
//! Errors are [`OptionError`]s that name the offending option, so a caller can point at
//! where it was written (a plan's line). Nothing here reads files or clocks: `file:PATH`
//! distributions are read through the caller's reader, and the seed of a flow that gives
//! none is the caller's.

mod checks;
mod file;
mod named;
mod reserve;
mod values;

pub use checks::{FlowOptions, OptionError, Specs, MAX_CALLS, RTP_PROBE_MIN};
pub use file::flow_lines;
pub use named::{canonical, NamedOptions, CONFLICTS, REQUIRES};
pub use reserve::{ReserveFilter, ReserveOptions, MIN_REFRESH};
pub use values::{
    parse_dist, parse_flow_label, parse_meter, parse_vad, parse_voip_header, Vad, ValueError,
};
