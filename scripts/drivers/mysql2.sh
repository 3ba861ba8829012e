#!/usr/bin/env bash
# mysql2's own test suite (poku), pinned to mysql2 v3.23.4; npm dependencies from
# `npm ci` in the sources (its package-lock.json).
#   mysql2.sh check | server-sql | setup-sql | schemas | run SIDE HOST PORT DIR
set -euo pipefail
src=${MYSQL2_SRC:-${DRIVERS_SRC:-/work/drivers/src}/mysql2}

case ${1:-} in
check)
  [ -f "$src/poku.config.js" ] || { echo "mysql2: no sources in $src" >&2; exit 1; }
  [ -x "$src/node_modules/.bin/poku" ] || { echo "mysql2: run 'npm ci' in $src" >&2; exit 1; }
  ;;
# Its CI runs the server with MYSQL_DATABASE=test and root without a password.
server-sql) ;;
setup-sql) echo "CREATE DATABASE IF NOT EXISTS test;" ;;
schemas) echo "test" ;;
run)
  side=$2 host=$3 port=$4 dir=$5
  cd "$src"
  # No TLS, no compression (the CI's first matrix entry); no MYSQL_CONNECTION_URL, so no
  # test dials a hosted database.
  env -u MYSQL_CONNECTION_URL MYSQL_HOST="$host" MYSQL_PORT="$port" MYSQL_USER=root MYSQL_PASSWORD="" \
    MYSQL_DATABASE=test MYSQL_USE_TLS=0 MYSQL_USE_COMPRESSION=0 NO_COLOR=1 FORCE_COLOR=0 \
    node_modules/.bin/poku
  ;;
*) sed -n '2,4p' "$0"; exit 2 ;;
esac
