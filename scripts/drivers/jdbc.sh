#!/usr/bin/env bash
# MariaDB Connector/J (Debian's libmariadb-java) through our own program, jdbc/Checks.java:
# ~20 behaviours, each with the driver's default (client-side prepared) path and with
# useServerPrepStmts=true. The direct side's output is the reference for the sluice side.
#   jdbc.sh check | server-sql | setup-sql | schemas | run SIDE HOST PORT DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
jar=${MARIADB_JDBC_JAR:-/usr/share/java/mariadb-java-client.jar}

case ${1:-} in
check)
  [ -f "$jar" ] || { echo "jdbc: apt-get install libmariadb-java (or set MARIADB_JDBC_JAR)" >&2; exit 1; }
  command -v javac >/dev/null || { echo "jdbc: apt-get install default-jdk-headless" >&2; exit 1; }
  ;;
server-sql) ;;
setup-sql) echo "CREATE DATABASE IF NOT EXISTS jdbc;" ;;
schemas) echo "jdbc" ;;
run)
  side=$2 host=$3 port=$4 dir=$5
  mkdir -p "$dir/classes"
  javac -d "$dir/classes" -cp "$jar" "$here/jdbc/Checks.java"
  java -cp "$jar:$dir/classes" Checks "$host" "$port" jdbc root "" | tee "$dir/checks.out"
  ;;
*) sed -n '5,6p' "$0"; exit 2 ;;
esac
