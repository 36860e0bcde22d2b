//! dualperf's reports, from run directories to what a reader sees.
//!
//! - [`plot`]: standalone SVG line and bar charts with confidence bands and error bars;
//! - [`png`]: those plots as PNG, drawn by resvg with the system's fonts.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod plot;
pub mod png;
