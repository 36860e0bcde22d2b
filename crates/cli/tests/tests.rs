//! End-to-end tests of the `dualperf` binary over real kernel sockets, on loopback
//! (127.0.0.1, ::1, ::ffff:127.0.0.1) or inside network namespaces the tests create
//! (`lab.rs`, addresses from 198.18.0.0/15 and 2001:2::/48). They assert counts and exact values, never timings.

#![cfg(target_os = "linux")]

#[path = "tests/support.rs"]
mod support;

#[path = "tests/agent.rs"]
mod agent;
#[path = "tests/auth.rs"]
mod auth;
#[path = "tests/compare.rs"]
mod compare;
#[path = "tests/compare_host.rs"]
mod compare_host;
#[path = "tests/decode.rs"]
mod decode;
#[path = "tests/docs.rs"]
mod docs;
#[path = "tests/doctor.rs"]
mod doctor;
#[path = "tests/fleet.rs"]
mod fleet;
#[path = "tests/flow_file.rs"]
mod flow_file;
#[path = "tests/garbage.rs"]
mod garbage;
#[path = "tests/handshake.rs"]
mod handshake;
#[path = "tests/interop.rs"]
mod interop;
#[path = "tests/interrupt.rs"]
mod interrupt;
#[path = "tests/iperf3_options.rs"]
mod iperf3_options;
#[path = "tests/json_shape.rs"]
mod json_shape;
#[path = "tests/lab.rs"]
mod lab;
#[path = "tests/lab_dut.rs"]
mod lab_dut;
#[path = "tests/lab_fresh.rs"]
mod lab_fresh;
#[path = "tests/lab_hosts.rs"]
mod lab_hosts;
#[path = "tests/lab_nat.rs"]
mod lab_nat;
#[path = "tests/lab_qos.rs"]
mod lab_qos;
#[path = "tests/lab_rsvp.rs"]
mod lab_rsvp;
#[path = "tests/lab_truth.rs"]
mod lab_truth;
#[path = "tests/layers.rs"]
mod layers;
#[path = "tests/loopback.rs"]
mod loopback;
#[path = "tests/many_flows.rs"]
mod many_flows;
#[path = "tests/marking.rs"]
mod marking;
#[path = "tests/metrics.rs"]
mod metrics;
#[path = "tests/nat_reverse.rs"]
mod nat_reverse;
#[path = "tests/overhead.rs"]
mod overhead;
#[path = "tests/path_facts.rs"]
mod path_facts;
#[path = "tests/pg.rs"]
mod pg;
#[path = "tests/pg_store.rs"]
mod pg_store;
#[path = "tests/plan_resume.rs"]
mod plan_resume;
#[path = "tests/plan_run.rs"]
mod plan_run;
#[path = "tests/portcheck.rs"]
mod portcheck;
#[path = "tests/presets.rs"]
mod presets;
#[path = "tests/raw_protocol.rs"]
mod raw_protocol;
#[path = "tests/recv_threads.rs"]
mod recv_threads;
#[path = "tests/relay.rs"]
mod relay;
#[path = "tests/report_html.rs"]
mod report_html;
#[path = "tests/report_rfc2544.rs"]
mod report_rfc2544;
#[path = "tests/report_stats.rs"]
mod report_stats;
#[path = "tests/reverse_nat.rs"]
mod reverse_nat;
#[path = "tests/rfc2544.rs"]
mod rfc2544;
#[path = "tests/route_stall.rs"]
mod route_stall;
#[path = "tests/rsvp_hosts.rs"]
mod rsvp_hosts;
#[path = "tests/rtp_capture.rs"]
mod rtp_capture;
#[path = "tests/schema.rs"]
mod schema;
#[path = "tests/stamp.rs"]
mod stamp;
#[path = "tests/streams.rs"]
mod streams;
#[path = "tests/unit_file.rs"]
mod unit_file;
#[path = "tests/usage.rs"]
mod usage;
