# shellcheck shell=bash
# Shared parts of the benchmark scripts in benches/ (sourced, not run):
#
#   tools         find_bin, need_bin NAME PACKAGE, need_pymysql, PY
#   messages      die, log (prefixed with $BENCH)
#   processes     stop_pid PID [GRACE], track_pid PID [GRACE], untrack_pid PID
#   work dir      bench_workdir: mktemp dir in $work, EXIT/INT/TERM traps that stop every
#                 tracked PID (last started first), then run CLEANUP_HOOKS, and remove the
#                 directory unless KEEP=1 or the script failed
#   ports, /proc  free_ports N, raise_nofile NEED, rss_kb PID, mib KB, loadavg
#   sluice        sluice_binary (SLUICE_BIN / SKIP_BUILD / cargo build --release),
#                 start_sluice CONFIG LOG PORT, sluice_version
#   servers       start_mariadb DIR PORT MAX_CONNECTIONS [extra mariadbd options...]
#                 (a throwaway standalone server; root_sql), start_haproxy CFG_DIR PORT
#                 SERVER_PORT MAXCONN (TCP mode)
#   sysbench      sysbench_prepare PORT USER PASSWORD TABLE_SIZE LOG
#   rounds        rotated OFFSET ITEM..., report_title TITLE
#   idle clients  hold_start PORT N [idle_clients.py options...], hold_ready, hold_check,
#                 hold_stop (a background process holding N logged-in connections)
#
# Set BENCH (a short name: message prefix, temp dir name) before sourcing. Functions that
# start a process set a global (MYSQLD_PID, HAPROXY_PID, STARTED_PID, HOLD_PID) and track
# it for the cleanup trap; do not call them inside $(...), or the PID is lost.

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=${BENCH:-bench}
PY=/usr/bin/python3 # Debian's, with python3-pymysql (a pyenv python3 may lack it)
KEEP=${KEEP:-0}
SKIP_BUILD=${SKIP_BUILD:-0}

die() { echo "$BENCH: $*" >&2; exit 1; }
log() { echo "$BENCH: $(date +%H:%M:%S) $*" >&2; }

# --- tools --------------------------------------------------------------------------------
find_bin() { # name: its path (PATH, then the sbin/bin directories a normal user may lack)
  local d
  command -v "$1" 2>/dev/null && return 0
  for d in /usr/sbin /usr/bin /usr/local/sbin /usr/local/bin; do
    [ -x "$d/$1" ] && { echo "$d/$1"; return 0; }
  done
  return 1
}
need_bin() { # name debian-package: its path, or die naming the package
  find_bin "$1" || die "$1 missing: sudo apt-get install -y $2"
}
need_pymysql() {
  [ -x "$PY" ] && "$PY" -c 'import pymysql' 2>/dev/null ||
    die "$PY with PyMySQL missing: sudo apt-get install -y python3 python3-pymysql"
}

# --- processes and cleanup ----------------------------------------------------------------
stop_pid() { # pid [grace seconds]: TERM, wait, KILL
  local pid=$1 grace=${2:-10} i
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -CONT "$pid" 2>/dev/null || true
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

TRACKED_PIDS=() TRACKED_GRACE=()
CLEANUP_HOOKS=() # commands run by the cleanup after the tracked PIDs are stopped
track_pid() { # pid [grace]: stopped by the cleanup trap
  TRACKED_PIDS+=("$1")
  TRACKED_GRACE+=("${2:-10}")
}
untrack_pid() { # pid: no longer ours (it exited and was waited for)
  local i
  for i in "${!TRACKED_PIDS[@]}"; do
    [ "${TRACKED_PIDS[$i]}" = "$1" ] && unset "TRACKED_PIDS[$i]" "TRACKED_GRACE[$i]"
  done
  return 0
}

bench_cleanup() {
  local rc=$? i h idx=()
  trap - EXIT INT TERM
  idx=("${!TRACKED_PIDS[@]}")
  for ((i = ${#idx[@]} - 1; i >= 0; i--)); do # last started, first stopped
    stop_pid "${TRACKED_PIDS[${idx[$i]}]}" "${TRACKED_GRACE[${idx[$i]}]}"
  done
  for h in "${CLEANUP_HOOKS[@]}"; do eval "$h" || true; done
  wait 2>/dev/null || true
  if [ -n "${work:-}" ] && [ -d "$work" ]; then
    if [ "$KEEP" = 1 ] || [ $rc -ne 0 ]; then
      echo "$BENCH: work directory kept: $work${KEPT_HINT:+ ($KEPT_HINT)}" >&2
    else
      rm -rf "$work"
    fi
  fi
  exit $rc
}

bench_workdir() { # creates $work and installs the traps
  work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-$BENCH.XXXXXX")
  trap bench_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# --- ports, limits, /proc -----------------------------------------------------------------
free_ports() { # n: n distinct free TCP ports on 127.0.0.1
  "$PY" -c '
import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))' "$1"
}

raise_nofile() { # need [what]: raise the soft fd limit (inherited by everything started here)
  local hard want=65536
  hard=$(ulimit -Hn)
  if [ "$hard" != unlimited ] && [ "$hard" -lt "$want" ]; then want=$hard; fi
  ulimit -n "$want" 2>/dev/null || true
  [ "$(ulimit -n)" -ge "$1" ] ||
    die "ulimit -n is $(ulimit -n); need $1${2:+ for $2} (raise the hard limit or use fewer connections)"
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

wait_port() { # port pid log what: until 127.0.0.1:port accepts, or die if pid exits
  # WAIT_PORT_S (default 10): valgrind on a loaded machine needs longer.
  local i
  for ((i = 0; i < ${WAIT_PORT_S:-10} * 10; i++)); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || { cat "$3" >&2; die "$4 exited during startup"; }
    sleep 0.1
  done
  die "$4 does not listen on 127.0.0.1:$1 after ${WAIT_PORT_S:-10} s"
}

# --- sluice -------------------------------------------------------------------------------
# Sets SLUICE_BIN: $SLUICE_BIN if given (no build), else the release binary of this
# checkout (${CARGO_TARGET_DIR:-target}/release/sluice), built first unless SKIP_BUILD=1.
sluice_binary() {
  if [ -n "${SLUICE_BIN:-}" ]; then
    SKIP_BUILD=1
    SLUICE_BIN=$(cd "$(dirname "$SLUICE_BIN")" && pwd)/$(basename "$SLUICE_BIN")
  else
    SLUICE_BIN=${CARGO_TARGET_DIR:-$repo/target}/release/sluice
  fi
  if [ "$SKIP_BUILD" != 1 ]; then
    log "cargo build --release"
    (cd "$repo" && cargo build --release --quiet --bin sluice) || die "cargo build --release failed"
  fi
  [ -x "$SLUICE_BIN" ] || die "$SLUICE_BIN missing (cargo build --release)"
}
sluice_version() { "$SLUICE_BIN" --version | awk '{print $2}'; }

start_sluice() { # config log port: checks the config, starts, waits; sets STARTED_PID
  "$SLUICE_BIN" check-config "$1" >/dev/null || die "generated sluice config $1 is invalid"
  "$SLUICE_BIN" serve --config "$1" </dev/null >"$2" 2>&1 &
  STARTED_PID=$!
  track_pid "$STARTED_PID" 10
  wait_port "$3" "$STARTED_PID" "$2" "sluice ($1)"
}

# --- MariaDB (standalone, throwaway) ------------------------------------------------------
# start_mariadb dir port max_connections [extra mariadbd options...]
# A fresh mariadb-install-db datadir in dir, a plain server (no binlog: the benchmarks
# measure the proxy, not replication) on 127.0.0.1:port with a 512 MiB buffer pool. Sets
# MYSQLD_PID and MARIADB_VERSION; root_sql runs SQL as root over its unix socket.
# Accounts: sbtest/sbtest (the clients') and sluicebe/sluicebe (sluice's backend login, so
# its server connections can be told apart), both ALL on *.*; database sbtest.
start_mariadb() {
  local dir=$1 port=$2 maxconn=$3 i installdb mariadbd user_opt=()
  shift 3
  mariadbd=$(need_bin mariadbd mariadb-server) || exit 1
  installdb=$(need_bin mariadb-install-db mariadb-server) || exit 1
  MDIR=$dir
  MARIADB_CLIENT=$(need_bin mariadb mariadb-client) || exit 1
  mkdir -p "$dir/tmp" # private tmpdir: nothing else in /tmp can touch its temp files
  [ "$(id -u)" -eq 0 ] && user_opt=(--user=root)
  log "mariadb-install-db into $dir"
  TMPDIR=$dir/tmp "$installdb" --no-defaults "${user_opt[@]}" --auth-root-authentication-method=normal --skip-test-db \
    --innodb-log-file-size=64M --datadir="$dir/data" >"$dir/install.log" 2>&1 ||
    { cat "$dir/install.log" >&2; die "mariadb-install-db failed"; }
  TMPDIR=$dir/tmp "$mariadbd" --no-defaults "${user_opt[@]}" --datadir="$dir/data" --tmpdir="$dir/tmp" \
    --socket="$dir/mysql.sock" \
    --pid-file="$dir/mysqld.pid" --log-error="$dir/error.log" --port="$port" \
    --bind-address=127.0.0.1 --skip-name-resolve --max-connections="$maxconn" \
    --max-connect-errors=1000000 --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
    --innodb-buffer-pool-size=512M --innodb-log-file-size=64M --innodb-flush-log-at-trx-commit=2 \
    --innodb-doublewrite=0 --innodb-use-native-aio=0 --innodb-buffer-pool-dump-at-shutdown=0 \
    --innodb-buffer-pool-load-at-startup=0 --thread-cache-size=256 --table-open-cache=4000 \
    --open-files-limit="$(ulimit -n)" "$@" </dev/null >"$dir/stdout.log" 2>&1 &
  MYSQLD_PID=$!
  track_pid "$MYSQLD_PID" 30
  for ((i = 0; i < 300; i++)); do
    root_sql "SELECT 1" >/dev/null 2>&1 && break
    kill -0 "$MYSQLD_PID" 2>/dev/null || { tail -n 30 "$dir/error.log" >&2; die "mariadbd exited during startup"; }
    sleep 0.1
  done
  root_sql "SELECT 1" >/dev/null || die "mariadbd not ready after 30 s"
  root_sql "CREATE USER 'sbtest'@'%' IDENTIFIED BY 'sbtest'; GRANT ALL ON *.* TO 'sbtest'@'%';
            CREATE USER 'sluicebe'@'%' IDENTIFIED BY 'sluicebe'; GRANT ALL ON *.* TO 'sluicebe'@'%';
            CREATE DATABASE sbtest;"
  MARIADB_VERSION=$(root_sql "SELECT @@version")
  log "mariadbd $MARIADB_VERSION on 127.0.0.1:$port (pid $MYSQLD_PID)"
}
root_sql() {
  "$MARIADB_CLIENT" --no-defaults --protocol=socket --socket="$MDIR/mysql.sock" --user=root -N -B -e "$1"
}

# --- HAProxy ------------------------------------------------------------------------------
# start_haproxy dir port server_port maxconn: HAProxy in TCP mode (a plain L4 forwarder, one
# server), in the foreground as our child (so its PID is known), config and log in dir.
# HAPROXY_WRAP: an optional command HAProxy runs under (profile.sh: valgrind, taskset).
start_haproxy() {
  local dir=$1 port=$2 sport=$3 maxconn=$4 haproxy
  haproxy=$(need_bin haproxy haproxy) || exit 1
  cat >"$dir/haproxy.cfg" <<EOF
global
    maxconn $maxconn
defaults
    mode tcp
    timeout connect 5s
    timeout client 1h
    timeout server 1h
    maxconn $maxconn
listen mysql
    bind 127.0.0.1:$port
    server master 127.0.0.1:$sport
EOF
  "${HAPROXY_WRAP[@]}" "$haproxy" -db -f "$dir/haproxy.cfg" </dev/null >"$dir/haproxy.log" 2>&1 &
  HAPROXY_PID=$!
  track_pid "$HAPROXY_PID" 5
  wait_port "$port" "$HAPROXY_PID" "$dir/haproxy.log" haproxy
  HAPROXY_VERSION=$("$haproxy" -v | awk 'NR == 1 { print $3 }')
  log "haproxy $HAPROXY_VERSION on 127.0.0.1:$port (pid $HAPROXY_PID)"
}

# --- sysbench -----------------------------------------------------------------------------
sysbench_prepare() { # port user password table_size log: 1 table sbtest.sbtest1
  log "sysbench prepare: 1 table x $4 rows (directly on the server)"
  "$(need_bin sysbench sysbench)" oltp_read_only --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$1" \
    --mysql-user="$2" --mysql-password="$3" --mysql-db=sbtest --tables=1 \
    --table-size="$4" prepare >"$5" 2>&1 || { cat "$5" >&2; die "sysbench prepare failed"; }
}

# --- rounds and report --------------------------------------------------------------------
rotated() { # offset item...: the items rotated left by offset (one per line), so that no
  # item always runs first or last when the offset changes from round to round
  local off=$1 i
  shift
  for ((i = 0; i < $#; i++)); do echo "${@:$(((i + off) % $# + 1)):1}"; done
}
report_title() { # title: the report's first lines (date, commit, machine)
  echo "$1  $(date -u +%Y-%m-%dT%H:%M:%SZ)  git $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo '+dirty')"
  echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(uname -r)"
}

# --- idle client connections (benches/idle_clients.py) ------------------------------------
# hold_start port n [options...]: starts the holder in the background (HOLD_PID; its output
# in $HOLD_OUT); hold_ready: waits until it has opened them and sets HOLD_N (connections
# open), HOLD_SECS and HOLD_ERR (why fewer than n, or empty); hold_check: pings every
# connection, sets HOLD_ALIVE; hold_stop: closes them and stops the holder.
HOLD_SEQ=0
hold_start() {
  local port=$1 n=$2
  shift 2
  HOLD_SEQ=$((HOLD_SEQ + 1))
  HOLD_FIFO=$work/hold-$HOLD_SEQ.fifo HOLD_OUT=$work/hold-$HOLD_SEQ.out
  rm -f "$HOLD_FIFO" && mkfifo "$HOLD_FIFO"
  "$PY" "$repo/benches/idle_clients.py" "$port" "$n" "$@" <"$HOLD_FIFO" >"$HOLD_OUT" 2>&1 &
  HOLD_PID=$!
  track_pid "$HOLD_PID" 10
  exec 7>"$HOLD_FIFO" # the holder's stdin: commands; closing it releases the connections
}
hold_ready() {
  local i line
  HOLD_N=0 HOLD_SECS="" HOLD_ERR=""
  for ((i = 0; i < 6000; i++)); do
    grep -q '^ready' "$HOLD_OUT" 2>/dev/null && break
    kill -0 "$HOLD_PID" 2>/dev/null || break
    sleep 0.1
  done
  line=$(grep '^ready' "$HOLD_OUT" 2>/dev/null || true)
  if [ -z "$line" ]; then
    HOLD_ERR="connection holder died: $(tail -n1 "$HOLD_OUT")"
    return 1
  fi
  HOLD_N=$(echo "$line" | awk '{print $2}')
  HOLD_SECS=$(echo "$line" | awk '{print $3}')
  HOLD_ERR=$(echo "$line" | sed -n 's/^ready [0-9]* [0-9.]* FAILED: //p')
  return 0
}
hold_check() {
  local i n
  HOLD_ALIVE=""
  n=$(grep -c '^alive' "$HOLD_OUT" 2>/dev/null || true)
  echo check >&7
  for ((i = 0; i < 1200; i++)); do
    [ "$(grep -c '^alive' "$HOLD_OUT" 2>/dev/null || true)" -gt "$n" ] && break
    kill -0 "$HOLD_PID" 2>/dev/null || break
    sleep 0.1
  done
  HOLD_ALIVE=$(grep '^alive' "$HOLD_OUT" 2>/dev/null | tail -n1 | cut -d' ' -f2-)
}
hold_stop() {
  exec 7>&- # the holder exits at EOF, closing its connections
  stop_pid "$HOLD_PID" 10
  wait "$HOLD_PID" 2>/dev/null || true
  untrack_pid "$HOLD_PID"
  HOLD_PID=""
}
