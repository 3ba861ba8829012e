#!/usr/bin/env bash
# Run real client drivers' own test suites against MariaDB directly and through sluice,
# and compare the counts. A report tool, not part of scripts/test (slow; needs Python,
# Node, Go and Java). See scripts/drivers/README.md for getting the suites' sources.
#
#   scripts/drivers/run-all.sh SLUICE_BIN
#
# Environment:
#   SUITES        suites to run, in order (default "pymysql mysql2 go jdbc")
#   DRIVERS_SRC   where the suites' sources are (default /work/drivers/src)
#   DRIVERS_OUT   directory for logs and results (default: a new /tmp/sluice-drivers.XXXXXX)
#   DRIVERS_NETNS 1 (default): run everything in a private network namespace that has only
#                 the loopback interface, so no test can dial outside 127.0.0.0/8 and no
#                 port can clash with another cluster; needs root (unshare). 0: the host's
#                 network, on free ports found from the defaults below.
#   MASTER_PORT, REPLICA_PORT, SLUICE_PORT, ADMIN_PORT   (defaults 3306, 3307, 6033, 9033)
#   SUITE_TIMEOUT seconds one suite run may take on one side (default 1500)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

die() { echo "drivers: $*" >&2; exit 1; }
log() { echo "drivers: $*" >&2; }

[ $# -eq 1 ] || { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
sluice_bin=$(realpath "$1") || die "no such file: $1"
[ -x "$sluice_bin" ] || die "$sluice_bin is not executable"

if [ "${DRIVERS_NETNS:-1}" = 1 ] && [ -z "${DRIVERS_IN_NETNS:-}" ]; then
  command -v unshare >/dev/null && [ "$(id -u)" -eq 0 ] ||
    die "DRIVERS_NETNS=1 needs root and unshare(1); run as root or with DRIVERS_NETNS=0"
  out=${DRIVERS_OUT:-$(mktemp -d /tmp/sluice-drivers.XXXXXX)}
  # The namespace goes away with its last process; everything started below is stopped
  # by PID on the way out all the same.
  exec unshare --net -- env DRIVERS_IN_NETNS=1 DRIVERS_OUT="$out" \
    bash -c 'ip link set lo up && exec "$@"' bash "${BASH_SOURCE[0]}" "$sluice_bin"
fi

export DRIVERS_SRC=${DRIVERS_SRC:-/work/drivers/src}
out=${DRIVERS_OUT:-$(mktemp -d /tmp/sluice-drivers.XXXXXX)}
mkdir -p "$out"
out=$(realpath "$out")
suites=${SUITES:-pymysql mysql2 go jdbc}
suite_timeout=${SUITE_TIMEOUT:-1500}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# The first port from $1 up that nothing listens on and that is not already taken by us.
taken=" "
free_port() {
  local p=$1
  while port_in_use "$p" || [[ $taken == *" $p "* ]]; do p=$((p + 1)); done
  taken="$taken$p "
  echo "$p"
}
master_port=$(free_port "${MASTER_PORT:-3306}")
replica_port=$(free_port "${REPLICA_PORT:-3307}")
sluice_port=$(free_port "${SLUICE_PORT:-6033}")
admin_port=$(free_port "${ADMIN_PORT:-9033}")
export MASTER_HOST=127.0.0.1 MASTER_PORT=$master_port

cluster_dir=$out/cluster
sluice_pid=""
cleanup() {
  local rc=$?
  if [ -n "$sluice_pid" ] && kill -0 "$sluice_pid" 2>/dev/null; then
    kill -TERM "$sluice_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$sluice_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$sluice_pid" 2>/dev/null || true
  fi
  [ -d "$cluster_dir" ] && "$repo/scripts/cluster" stop "$cluster_dir" >>"$out/cluster.log" 2>&1 || true
  log "logs and results are in $out"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "results in $out (master $master_port, replica $replica_port, sluice $sluice_port, admin $admin_port)"
MASTER_PORT=$master_port REPLICA_PORTS=$replica_port CLUSTER_DB=sluice_drivers \
  "$repo/scripts/cluster" start "$cluster_dir" >"$out/cluster.log" 2>&1 ||
  { cat "$out/cluster.log" >&2; die "the cluster did not start"; }

server_sql() { local port=$1; shift; mariadb --no-defaults -h127.0.0.1 -P"$port" -usluice -psluice --comments "$@"; }
master_sql() { server_sql "$master_port" "$@"; }

# The account every suite's defaults expect: root without a password, here over TCP
# (the cluster's own root@localhost is unix-socket only).
master_sql <<'SQL'
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
SQL
# Each suite's databases and accounts; the schemas it names get sluice's triggers, so reads
# through sluice can go to the replica as they would in production.
schemas=()
for s in $suites; do
  [ -f "$here/$s.sh" ] || die "unknown suite $s (no $here/$s.sh)"
  "$here/$s.sh" check || die "suite $s is not ready (see scripts/drivers/README.md)"
  # What replication does not carry (INSTALL SONAME): run on every server, unlogged, or the
  # replica stops at the first statement that needs it and every read goes to the master.
  for port in "$master_port" "$replica_port"; do
    { echo "SET sql_log_bin = 0;"; "$here/$s.sh" server-sql; } | server_sql "$port" --force >>"$out/setup.log" 2>&1 ||
      log "per-server setup of $s had errors on port $port (see $out/setup.log)"
  done
  "$here/$s.sh" setup-sql | master_sql --force >>"$out/setup.log" 2>&1 ||
    log "setup of $s had errors (see $out/setup.log)"
  read -r -a more <<<"$("$here/$s.sh" schemas)"
  schemas+=("${more[@]}")
done

# sluice with the default config (multiplex: true, freshness.mode: causal), logging in the
# server's own accounts (auth.mode: server): every suite logs in with accounts it creates
# itself (change-user, auth-plugin tests), which a users: list could not know.
cat >"$out/sluice.yaml" <<EOF2
listen: 127.0.0.1:$sluice_port
admin_listen: 127.0.0.1:$admin_port
log: { format: text, level: info }
auth:
  mode: server
  account: { user: sluice, password: sluice }
groups:
  - name: main
    master: { addr: 127.0.0.1:$master_port, user: sluice, password: sluice }
    replicas:
      - { addr: 127.0.0.1:$replica_port, user: sluice, password: sluice, weight: 1 }
EOF2
for db in "${schemas[@]}"; do
  "$sluice_bin" triggers install --schema "$db" --config "$out/sluice.yaml" >>"$out/setup.log" 2>&1 ||
    die "sluice triggers install --schema $db failed (see $out/setup.log)"
done
"$sluice_bin" serve --config "$out/sluice.yaml" >"$out/sluice.log" 2>&1 &
sluice_pid=$!
for _ in $(seq 100); do
  port_in_use "$sluice_port" && break
  kill -0 "$sluice_pid" 2>/dev/null || { cat "$out/sluice.log" >&2; die "sluice exited"; }
  sleep 0.1
done
port_in_use "$sluice_port" || die "sluice does not listen on $sluice_port"
log "sluice $("$sluice_bin" --version 2>/dev/null || true) pid $sluice_pid"

start=$(date +%s)
for s in $suites; do
  for side in direct sluice; do
    port=$master_port
    [ $side = sluice ] && port=$sluice_port
    mkdir -p "$out/$s/$side"
    t0=$(date +%s)
    echo "$(date -u +%FT%TZ) $s $side start" >>"$out/timeline"
    log "$s $side (127.0.0.1:$port)"
    rc=0
    timeout --kill-after=30 "$suite_timeout" "$here/$s.sh" run "$side" 127.0.0.1 "$port" "$out/$s/$side" \
      >"$out/$s/$side/run.log" 2>&1 || rc=$?
    echo "$(date -u +%FT%TZ) $s $side end rc=$rc $(($(date +%s) - t0))s" >>"$out/timeline"
    [ $rc = 124 ] && log "$s $side timed out after ${suite_timeout}s"
    python3 "$here/summarize.py" "$s" "$side" "$out/$s" || log "$s $side: no results (see $out/$s/$side/run.log)"
  done
done
echo "total suite time: $(($(date +%s) - start))s" >>"$out/timeline"
# A replica whose replication stopped gets no reads (sluice sends them to the master), so the
# run would not have tested replica reads: say so next to the table.
replica_state=$(server_sql "$replica_port" -e "SHOW SLAVE STATUS\G" 2>&1 |
  grep -E "Slave_(IO|SQL)_Running:|Last_SQL_Error:" | sed 's/^ *//' | tr '\n' ' ')
echo "replica after the suites: $replica_state" >>"$out/timeline"
# sluice's own counters after all suites (routing, auto-installed triggers, errors): where
# to look first when a side differs.
curl -sf "http://127.0.0.1:$admin_port/metrics" >"$out/metrics.txt" || log "could not read sluice's /metrics"
python3 "$here/summarize.py" table "$out" $suites | tee "$out/table.md"
reads=$(grep -E '^sluice_routed_statements_total\{destination="replica"' "$out/metrics.txt" 2>/dev/null |
  awk '{n += $2} END {print n + 0}')
echo "reads sluice sent to the replica: $reads; replica: $replica_state" | tee -a "$out/table.md"
[[ $replica_state == *"Slave_SQL_Running: Yes"* ]] || log "WARNING: replication stopped during the run (see above)"
