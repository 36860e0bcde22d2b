//! dualperf's output documents as types: what `send --json`, `recv --json`, `compare --json` and
//! `decode --json` print, with `Serialize` to write them, `Deserialize` to read them back
//! (the lab's run records embed `send --json`), and `schemars::JsonSchema` for
//! `dualperf schema`. Run records live with the lab (`lab::store`), router statistics
//! with the router (`router::stats`) and report documents with the report (`report`).
//!
//! Every figure is computed by `meter` and cites its definition there; this crate only
//! names and arranges them, so a renamed field is a compile error in every reader.
//! One exception feeds `meter` itself: [`stamp`], the STAMP Session-Sender's reply
//! meter, turns each reply's four timestamps into `meter`'s records and arranges the
//! figures into `send`'s report.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bmwg;
pub mod clock;
pub mod compare;
pub mod decode;
pub mod doctor;
pub mod human;
pub mod log;
pub mod metric;
pub mod path;
pub mod prom;
pub mod recv;
pub mod send;
pub mod stamp;
pub mod tcp_info;
pub mod text_table;
