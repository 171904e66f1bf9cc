#!/bin/sh
# Installs traced's Debian build and test dependencies when any is missing.
# Needs root (or sudo) only when something has to be installed. chromium is
# for the dashboard test (headless), wrk for bench/bench_api.sh,
# libiberty-dev for its kernel-name demangler (index/agg/family.c), systemd for
# systemd-analyze (tests/test_unit.py rates systemd/traced.service): on a
# Debian machine it is there already (Priority: important); in a container
# its postinst touches no running system (its systemctl calls are guarded
# by /run/systemd/system, the rest is machine-id, sysusers, tmpfiles);
# libpq-dev for the fleet's PostgreSQL (fleet/), and postgresql for the
# fleet's tests, which start throwaway clusters of their own
# (tests/pgtest.py; the package's own cluster is not used).
# With HTA's source named (TRACED_HTA_SRC or TRACED_HTA_REPO, never in the
# tree), what HTA imports, so that tests/test_cpath_hta.py runs rather than
# skips.
set -eu
PKGS="build-essential cmake pkg-config libuv1-dev libmicrohttpd-dev
libcurl4-openssl-dev libjansson-dev libsqlite3-dev zlib1g-dev libisal-dev
libiberty-dev libpq-dev
isal clang libclang-rt-14-dev python3 curl wrk sqlite3 procps chromium
systemd postgresql"
if [ -n "${TRACED_HTA_SRC:-}${TRACED_HTA_REPO:-}" ]; then
  PKGS="$PKGS python3-pandas python3-networkx python3-plotly python3-psutil
python3-yaml"
fi
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
