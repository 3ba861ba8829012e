#!/usr/bin/env bash
# go-sql-driver/mysql's own tests (go test), pinned to v1.8.1 (the newest release whose
# go.mod accepts Debian bookworm's Go 1.19). No module proxy: its one dependency,
# filippo.io/edwards25519, comes from Debian's golang-filippo-edwards25519-dev.
#   go.sh check | server-sql | setup-sql | schemas | run SIDE HOST PORT DIR
set -euo pipefail
src=${GO_MYSQL_SRC:-${DRIVERS_SRC:-/work/drivers/src}/go-mysql}
edwards=${GO_EDWARDS25519_SRC:-/usr/share/gocode/src/filippo.io/edwards25519}

case ${1:-} in
check)
  [ -f "$src/driver_test.go" ] || { echo "go: no sources in $src" >&2; exit 1; }
  command -v go >/dev/null || { echo "go: apt-get install golang-go" >&2; exit 1; }
  [ -f "$edwards/go.mod" ] || { echo "go: apt-get install golang-filippo-edwards25519-dev" >&2; exit 1; }
  ;;
server-sql) ;;
setup-sql) echo "CREATE DATABASE IF NOT EXISTS gotest;" ;;
schemas) echo "gotest" ;;
run)
  side=$2 host=$3 port=$4 dir=$5
  # Build the test binary once per run directory from a copy of the sources whose go.mod
  # points at Debian's edwards25519 (the sources themselves stay untouched).
  build=$dir/build
  rm -rf "$build" && mkdir -p "$build" && cp -r "$src"/. "$build"/
  # The one test that dials outside 127.0.0.0/8 (1.1.1.1, expecting a connect timeout) is
  # skipped on both sides; Go 1.19's test binary has no -test.skip, so the copy says so.
  grep -q '^func TestConnectorReturnsTimeout(t \*testing.T) {$' "$build/connector_test.go" ||
    { echo "go: TestConnectorReturnsTimeout not found: check for remote dials again" >&2; exit 1; }
  sed -i 's|^func TestConnectorReturnsTimeout(t \*testing.T) {$|&\n\tt.Skip("sluice drivers harness: dials 1.1.1.1, outside 127.0.0.0/8")|' \
    "$build/connector_test.go"
  (cd "$build" && go mod edit -replace "filippo.io/edwards25519=$edwards" && rm -f go.sum &&
    GOPROXY=off GOFLAGS=-mod=mod GOCACHE=${GOCACHE:-$HOME/.cache/go-build} go test -c -o "$dir/mysql.test" .)
  # MYSQL_TEST_CONCURRENT stays off (the suite's default); its DSN is built from these.
  cd "$build"
  MYSQL_TEST_USER=root MYSQL_TEST_PASS="" MYSQL_TEST_PROT=tcp MYSQL_TEST_ADDR="$host:$port" \
    MYSQL_TEST_DBNAME=gotest "$dir/mysql.test" -test.v -test.timeout 20m
  ;;
*) sed -n '5,6p' "$0"; exit 2 ;;
esac
