#!/usr/bin/env bash
# A cached Debian 11 (bullseye, glibc 2.31, Python 3.9) root for scripts/dist-check.sh:
# the oldest suite the Debian mirror still serves (buster and stretch answer 404, see
# shared/notes/dist.md). Built once with debootstrap (about 40 s, plus about 10 s for python3-venv),
# then reused; prints its path on the last line.
#
# Usage: scripts/debian11-chroot.sh
#   MPS_PREFLIGHT_CHROOT_CACHE  where the root lives (default ~/.cache/mps-preflight-dist)
#   MPS_PREFLIGHT_DEBIAN_MIRROR the mirror (default http://deb.debian.org/debian)
set -euo pipefail

cache="${MPS_PREFLIGHT_CHROOT_CACHE:-$HOME/.cache/mps-preflight-dist}"
mirror="${MPS_PREFLIGHT_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
root="$cache/bullseye"
# Written last: a root without it (an interrupted build) is rebuilt from scratch.
stamp="$root/.mps-preflight-ready"

if [ -f "$stamp" ]; then
  echo "$root"
  exit 0
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
fi
rm -rf "$root"
mkdir -p "$cache"
echo "debian11: debootstrap bullseye into $root" >&2
debootstrap --variant=minbase bullseye "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 || {
  tail -n 20 "$cache/debootstrap.log" >&2
  exit 1
}
# python3-venv brings Python 3.9 and ensurepip's bundled pip: the wheel installs with --no-index.
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
  sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-venv >/dev/null && apt-get clean'
touch "$stamp"
echo "$root"
