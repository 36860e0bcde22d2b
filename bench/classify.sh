#!/usr/bin/env bash
# bench/classify.sh - cost of per-flow classification, IPv4 vs IPv6 vs the IPv6 flow label.
#
# WHAT IT MEASURES
#   ns per packet of a reservation-table lookup (parse the key, hash, look up) at 1, 10,
#   100, 1,000 and 10,000 reserved flows, keyed by:
#     - the IPv4 5-tuple;
#     - the IPv6 5-tuple, plain UDP and behind Hop-by-Hop + Destination Options headers
#       (the extension-header walk of RFC 8200);
#     - the IPv6 (src, dst, flow label) 3-tuple at fixed offsets (RFC 6437).
#   and the ratios to the flow-label lookup: the WebAudio thesis measured 1 : 1.4 : 4
#   (flow label : IPv4 : IPv6) on its 2003 router. Single thread, in process, best of 5.
#   A benchmark: it prints figures, it asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --release -p qos --example classify_bench
