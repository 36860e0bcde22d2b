//! dualperf's IPv6 porting assistant, as a library.
//!
//! - [`lex`], [`rules`], [`scan`]: `dualperf portcheck`. A file is cut into tokens of
//!   code (comments and string contents set apart), and a table of rules, one per
//!   IPv4-only construct, is matched against them. Each finding names its rule, its
//!   position, why the construct breaks on IPv6 and what replaces it.
//! - [`walk`]: scanning trees in parallel, honouring `.gitignore` (the `ignore` crate).
//! - [`report`]: findings as text, JSON and SARIF 2.1.0.
//! - [`criteria`]: `portcheck --criteria`, Bouras et al.'s eight criteria judged from the
//!   sources and from a program under test's `/proc`.
//!
//! Nothing here opens a socket or reads a clock; only [`walk`] reads files, and
//! [`criteria`] a process's `/proc`.
#![forbid(unsafe_code)]

pub mod criteria;
pub mod lex;
pub mod report;
pub mod rules;
pub mod scan;
pub mod walk;
