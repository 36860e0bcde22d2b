#!/usr/bin/env bash
# How many claims a second one PostgreSQL sustains for mesh campaigns (docs/campaigns.md):
# CONTROLLERS `dualperf campaign --no-measure` processes, each with WORKERS workers, claim
# and finish every run of a mesh of AGENTS agents (AGENTS·(AGENTS−1) pairs × 2 families ×
# the tests) against a fresh cluster in a temporary directory. Nothing is sent.
#
#   DUALPERF=target/release/dualperf bench/campaign-claims.sh
#   AGENTS=100 CONTROLLERS=8 WORKERS=4 EXCLUSIVE=1 bench/campaign-claims.sh
#
# Needs Debian's postgresql (initdb, pg_ctl); as root the server runs as nobody.
set -euo pipefail
DUALPERF=${DUALPERF:-target/release/dualperf}
AGENTS=${AGENTS:-100}
CONTROLLERS=${CONTROLLERS:-4}
WORKERS=${WORKERS:-4}
EXCLUSIVE=${EXCLUSIVE:-0}
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
tmp=$(mktemp -d /tmp/dualperf-claims.XXXXXX)
as=()
if [ "$(id -u)" = 0 ]; then
  chown nobody:nogroup "$tmp"
  as=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fi
port=$((20000 + RANDOM % 20000))
cleanup() { "${as[@]}" "$bin/pg_ctl" -D "$tmp/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
"${as[@]}" "$bin/initdb" -D "$tmp/data" -U dualperf --auth=trust --no-sync -E UTF8 --locale=C >/dev/null
"${as[@]}" "$bin/pg_ctl" -D "$tmp/data" -l "$tmp/log" -w \
  -o "-p $port -k $tmp -c listen_addresses=127.0.0.1 -c max_connections=300" start >/dev/null
url="postgresql://dualperf@127.0.0.1:$port/postgres"
mesh="$tmp/mesh.toml"
{
  printf 'version = 1\nname = "claims"\n'
  for i in $(seq 1 "$AGENTS"); do
    printf '\n[[agent]]\nname = "a%d"\nipv4 = "198.18.%d.%d"\nipv6 = "2001:2::%x"\n' "$i" $((i / 250)) $((i % 250 + 1)) "$i"
  done
  printf '\n[[test]]\nname = "rtt"\nargs = ["--meter", "rtt"]\n'
  if [ "$EXCLUSIVE" = 1 ]; then
    printf '\n[[test]]\nname = "throughput"\nexclusive = true\nargs = ["--udp", "--bulk"]\n'
  fi
} > "$mesh"
runs=$((AGENTS * (AGENTS - 1) * 2 * (1 + EXCLUSIVE)))
# The queue first, then the claims alone are timed.
"$DUALPERF" -q campaign "$mesh" --store "$url" --queue-only
start=$(date +%s.%N)
for c in $(seq 1 "$CONTROLLERS"); do
  "$DUALPERF" -q campaign "$mesh" --store "$url" --no-measure --workers "$WORKERS" --controller "c$c" --json > "$tmp/c$c.json" &
done
wait
end=$(date +%s.%N)
claims=$(cat "$tmp"/c*.json | grep -o '"claims": *[0-9]*' | grep -o '[0-9]*$' | paste -sd+ | bc)
echo "agents $AGENTS, runs $runs, controllers $CONTROLLERS × $WORKERS workers, exclusive test: $EXCLUSIVE"
echo "claims: $claims in $(echo "$end - $start" | bc) s = $(echo "scale=0; $claims / ($end - $start)" | bc) claims/s (claim + finish, each its own transaction)"
