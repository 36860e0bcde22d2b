#!/usr/bin/env python3
"""Precision and recall of `dualperf portcheck` on the hand-labelled real corpus.

Each directory of crates/port/tests/fixtures/real/ is one public code base with its
sites listed in SITES.txt (and debatable lines in NEUTRAL.txt); see its README.md.
Scored by site, a (file, line) pair: a flagged line is a hit when it is a site, a false
alarm when it is neither a site nor neutral; a site is found when its line is flagged.
The baseline is the search every porting guide starts with: a grep for the usual
IPv4-only names, one "finding" per matching line, comments and strings included.

usage: bench/portcheck-real.py [DUALPERF] [CORPUS]   (default target/release/dualperf)
Prints one row per code base and the pooled figures, for portcheck and for grep.
A benchmark: it prints figures and asserts nothing (crates/port/tests/real.rs holds the
floors).
"""

import json
import os
import re
import subprocess
import sys

GREP = re.compile(
    r"gethostbyname|gethostbyaddr|inet_addr|inet_aton|inet_ntoa|sockaddr_in\b|in_addr\b"
    r"|AF_INET\b|PF_INET\b|INADDR_ANY|INADDR_LOOPBACK|INADDR_BROADCAST|IP_TOS|IP_TTL"
    r"|IP_MULTICAST_|IP_ADD_MEMBERSHIP"
)
SOURCE = (".c", ".h", ".cc", ".cpp", ".hpp", ".hh", ".cxx", ".hxx")


def labels(path):
    """{(file, line)} of a label file (`FILE:LINE: description`); empty if absent."""
    out = set()
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for raw in f:
            raw = raw.strip()
            if not raw or raw.startswith("#"):
                continue
            file, line, _ = raw.split(":", 2)
            out.add((file.strip(), int(line)))
    return out


def portcheck(binary, base):
    doc = json.loads(
        subprocess.run(
            [binary, "portcheck", "--json", "--fail-on", "none", "--no-ignore", base],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    return {(os.path.relpath(f["path"], base), f["line"]) for f in doc["findings"]}


def grep(base):
    out = set()
    for root, _, files in os.walk(base):
        for name in files:
            if not name.endswith(SOURCE):
                continue
            path = os.path.join(root, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    if GREP.search(line):
                        out.add((os.path.relpath(path, base), n))
    return out


def score(flagged, sites, neutral):
    counted = flagged - neutral
    hits = len(counted & sites)
    alarms = len(counted - sites)
    return hits, alarms, len(sites)


def ratio(a, b):
    return f"{a / b:.2f}" if b else "-"


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/dualperf"
    corpus = sys.argv[2] if len(sys.argv) > 2 else "crates/port/tests/fixtures/real"
    bases = sorted(
        d for d in os.listdir(corpus) if os.path.isfile(os.path.join(corpus, d, "SITES.txt"))
    )
    head = f"{'code base':<16} {'lines':>6} {'sites':>6}   {'portcheck P':>11} {'R':>5} {'hits':>5} {'false':>5}   {'grep P':>6} {'R':>5} {'hits':>5} {'false':>5}"
    print(head)
    print("-" * len(head))
    pooled = {"portcheck": [0, 0, 0], "grep": [0, 0, 0]}
    for name in bases:
        base = os.path.join(corpus, name)
        sites = labels(os.path.join(base, "SITES.txt"))
        neutral = labels(os.path.join(base, "NEUTRAL.txt"))
        lines = 0
        for root, _, files in os.walk(base):
            for f in files:
                if f.endswith(SOURCE):
                    with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                        lines += sum(1 for _ in fh)
        row = [f"{name:<16} {lines:>6} {len(sites):>6}  "]
        for tool, flagged in (("portcheck", portcheck(binary, base)), ("grep", grep(base))):
            hits, alarms, total = score(flagged, sites, neutral)
            for i, v in enumerate((hits, alarms, total)):
                pooled[tool][i] += v
            row.append(
                f" {ratio(hits, hits + alarms):>{11 if tool == 'portcheck' else 6}} {ratio(hits, total):>5} {hits:>5} {alarms:>5}  "
            )
        print("".join(row))
    print("-" * len(head))
    row = [f"{'pooled':<16} {'':>6} {pooled['grep'][2]:>6}  "]
    for tool in ("portcheck", "grep"):
        hits, alarms, total = pooled[tool]
        row.append(
            f" {ratio(hits, hits + alarms):>{11 if tool == 'portcheck' else 6}} {ratio(hits, total):>5} {hits:>5} {alarms:>5}  "
        )
    print("".join(row))
    print("P: precision, hits over flagged lines (neutral lines left out); R: recall, hits over sites")


if __name__ == "__main__":
    main()
