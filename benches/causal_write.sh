#!/usr/bin/env bash
# Causal write cost, side by side: sysbench oltp_insert through each sluice binary
# given as NAME=PATH, in freshness modes off and causal (triggers installed), at 8 and
# 64 threads, ROUNDS rounds alternating the binaries, against a master + replica of
# its own (scripts/cluster, 127.0.0.1). Per point: QPS, mean latency, and the CPU
# seconds sluice and the master's mariadbd spent (/proc ticks).
#
#   benches/causal_write.sh main=/tmp/sluice-main new=target/release/sluice
#
# Environment: ROUNDS [2], MODES ["off causal"], THREADS ["8 64"], TIME [10] seconds.
# docs/guarantees.md ("Write cost") has its figures.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ $# -gt 0 ] || { sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
command -v sysbench >/dev/null || { echo "causal_write: sysbench is not installed (apt-get install sysbench)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-causal-write.XXXXXX")
trap 'kill "${SP:-}" 2>/dev/null || true; scripts/cluster stop "$work/cluster" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
read -r M R P A <<<"$(python3 -c '
import socket
s = [socket.socket() for _ in range(4)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')"
MASTER_PORT=$M REPLICA_PORTS=$R CLUSTER_DB=sbtest scripts/cluster start "$work/cluster" >"$work/cluster.log" 2>&1
for mode in off causal; do
  cat >"$work/$mode.yaml" <<EOF
listen: 127.0.0.1:$P
admin_listen: 127.0.0.1:$A
log: { level: warn }
freshness: { mode: $mode, auto_install: false }
users:
  - { name: sb, password: sb, backend: group }
groups:
  - name: main
    master: { addr: "127.0.0.1:$M", user: sluice, password: sluice }
    replicas:
      - { addr: "127.0.0.1:$R", user: sluice, password: sluice }
EOF
done
sb() { # port user test threads time action
  sysbench "$3" --mysql-host=127.0.0.1 --mysql-port="$1" --mysql-user="$2" --mysql-password="$2" \
    --mysql-db=sbtest --tables=1 --table-size=10000 --threads="$4" --time="$5" \
    --mysql-ignore-errors=1213,1205,1062 "$6"
}
sb "$M" sluice oltp_insert 1 0 prepare >"$work/prepare.log" 2>&1
first=${1#*=}
"$first" triggers install --schema sbtest --config "$work/causal.yaml" >/dev/null
mpid=$(cat "$work/cluster/master/mysqld.pid")
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for round in $(seq 1 "${ROUNDS:-2}"); do
  for spec in "$@"; do
    name=${spec%%=*}
    bin=${spec#*=}
    for mode in ${MODES:-off causal}; do
      "$bin" serve --config "$work/$mode.yaml" >"$work/sluice.log" 2>&1 &
      SP=$!
      sleep 2
      for n in ${THREADS:-8 64}; do
        c0=$(ticks "$SP") m0=$(ticks "$mpid")
        out=$(sb "$P" sb oltp_insert "$n" "${TIME:-10}" run 2>&1)
        c1=$(ticks "$SP") m1=$(ticks "$mpid")
        qps=$(awk '/queries:/ {print $3}' <<<"$out" | tr -d '(')
        lat=$(awk '/avg:/ {print $2}' <<<"$out")
        printf '%s %s %s threads=%s qps=%s avg_ms=%s sluice_cpu_s=%s master_cpu_s=%s\n' \
          "round$round" "$name" "$mode" "$n" "$qps" "$lat" \
          "$(echo "scale=2; ($c1 - $c0) / 100" | bc)" "$(echo "scale=2; ($m1 - $m0) / 100" | bc)"
      done
      kill "$SP"
      wait "$SP" 2>/dev/null || true
      SP=
    done
  done
done
