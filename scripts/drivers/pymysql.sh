#!/usr/bin/env bash
# PyMySQL's own test suite (pytest), pinned to PyMySQL v1.2.0.
#   pymysql.sh check | server-sql | setup-sql | schemas | run SIDE HOST PORT DIR
# Sources: $PYMYSQL_SRC (default $DRIVERS_SRC/pymysql); needs pytest, cryptography, PyNaCl.
set -euo pipefail
src=${PYMYSQL_SRC:-${DRIVERS_SRC:-/work/drivers/src}/pymysql}

case ${1:-} in
check)
  [ -f "$src/pymysql/tests/base.py" ] || { echo "pymysql: no sources in $src" >&2; exit 1; }
  python3 -c 'import pytest, cryptography, nacl' || { echo "pymysql: pip install pytest cryptography PyNaCl" >&2; exit 1; }
  ;;
server-sql)
  # ci/docker-entrypoint-initdb.d/mariadb.sql's INSTALL SONAME, which the binlog does not
  # carry: the replica needs the plugin before testAuthEd25519's CREATE USER ... ed25519.
  echo 'INSTALL SONAME "auth_ed25519";'
  ;;
setup-sql)
  # What PyMySQL's CI runs (ci/docker-entrypoint-initdb.d), MariaDB parts only.
  cat "$src/ci/docker-entrypoint-initdb.d/init.sql" "$src/ci/docker-entrypoint-initdb.d/mariadb.sql"
  echo "SET GLOBAL local_infile=ON;"
  ;;
schemas) echo "test1 test2" ;;
run)
  side=$2 host=$3 port=$4 dir=$5
  # ci/docker.json without its unix-socket entry (sluice listens on TCP only, and the
  # direct side must use the same connections).
  cat >"$src/pymysql/tests/databases.json" <<JSON
[
  {"host": "$host", "port": $port, "user": "root", "password": "", "database": "test1", "use_unicode": true, "local_infile": true},
  {"host": "$host", "port": $port, "user": "test2", "password": "some password", "database": "test2"}
]
JSON
  cd "$src"
  # -p no:cacheprovider: leave nothing behind in the sources.
  python3 -m pytest -p no:cacheprovider -v -rs --junitxml="$dir/junit.xml" pymysql
  ;;
*) sed -n '2,4p' "$0"; exit 2 ;;
esac
