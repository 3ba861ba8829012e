#!/usr/bin/env bash
# Put the pinned suites' sources under $DRIVERS_SRC (default /work/drivers/src) and install
# what they need from the package registries (Debian, PyPI, npm).
#
#   scripts/drivers/get-sources.sh
#
# The sources come from git directories of the upstream repositories (a snapshot from the
# workplace's `fetch` tool, or any clone that has the pinned tags):
#   PYMYSQL_GIT   default /work/.mirror/PyMySQL+PyMySQL/repo          tag v1.2.0
#   MYSQL2_GIT    default /work/.mirror/sidorares+node-mysql2/repo    tag v3.23.4
#   GO_MYSQL_GIT  default /work/.mirror/go-sql-driver+mysql/repo      tag v1.8.1
# (PyMySQL's sdist on PyPI has no tests; go-sql-driver v1.8.1 is the newest whose go.mod
# accepts Debian bookworm's Go 1.19.)
set -euo pipefail
src=${DRIVERS_SRC:-/work/drivers/src}
die() { echo "get-sources: $*" >&2; exit 1; }

if [ "$(id -u)" -eq 0 ]; then
  pkgs=(golang-go golang-filippo-edwards25519-dev libmariadb-java default-jdk-headless python3-pip)
  # A Node from elsewhere (nodesource, nvm) conflicts with Debian's nodejs/npm packages:
  # only install them when there is no node/npm at all.
  command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
  command -v npm >/dev/null 2>&1 || pkgs+=(npm)
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${pkgs[@]}" >/dev/null
fi
python3 -m pip install -q pytest cryptography PyNaCl

mkdir -p "$src"
extract() { # NAME GIT_DIR TAG
  local name=$1 git=$2 tag=$3
  [ -d "$git" ] || die "no git directory $git for $name (fetch it, or set the variable above)"
  git --git-dir="$git" rev-parse -q --verify "$tag^{commit}" >/dev/null || die "$git has no tag $tag"
  rm -rf "${src:?}/$name" && mkdir -p "$src/$name"
  git --git-dir="$git" archive "$tag" | tar -x -C "$src/$name"
  echo "get-sources: $name $tag ($(git --git-dir="$git" rev-parse "$tag^{commit}")) in $src/$name"
}
extract pymysql "${PYMYSQL_GIT:-/work/.mirror/PyMySQL+PyMySQL/repo}" v1.2.0
extract mysql2 "${MYSQL2_GIT:-/work/.mirror/sidorares+node-mysql2/repo}" v3.23.4
extract go-mysql "${GO_MYSQL_GIT:-/work/.mirror/go-sql-driver+mysql/repo}" v1.8.1
(cd "$src/mysql2" && npm ci --no-audit --no-fund)
