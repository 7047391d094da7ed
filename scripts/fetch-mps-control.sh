#!/bin/sh
# Fetch the real NVIDIA MPS control daemon front-end (`nvidia-cuda-mps-control`) from Debian's
# `nvidia-cuda-mps` package (bookworm, non-free) into a cache folder, for mps-host's
# real-daemon tests. Nothing is installed system-wide and the system's apt sources, lists and
# caches are left alone: apt runs with a temporary sources list and temporary state/cache dirs,
# and the package is unpacked with `dpkg -x`.
#
# Usage: scripts/fetch-mps-control.sh
#   MPS_PREFLIGHT_CACHE   cache root (default: $HOME/.cache/mps-preflight)
#   MPS_PREFLIGHT_DEBIAN_MIRROR   mirror (default: http://deb.debian.org/debian)
#   MPS_PREFLIGHT_DEBIAN_SUITE    suite (default: bookworm)
#
# On success prints the binary's path on stdout (last line) and exits 0.
# Exits 1 with a message on stderr when the package cannot be had (no network, no apt, ...).
set -eu

cache_root="${MPS_PREFLIGHT_CACHE:-${HOME:-/root}/.cache/mps-preflight}"
mirror="${MPS_PREFLIGHT_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
suite="${MPS_PREFLIGHT_DEBIAN_SUITE:-bookworm}"
dest="$cache_root/nvidia-cuda-mps"
binary="$dest/usr/bin/nvidia-cuda-mps-control"

say() { printf 'fetch-mps-control: %s\n' "$*" >&2; }
fail() { say "cannot fetch nvidia-cuda-mps: $*"; exit 1; }

# The binary needs only libc (checked with ldd on 535.261.03-1: libpthread, libdl, librt,
# libc), so no other package is fetched. Fail loudly if that ever changes.
check_libraries() {
    if command -v ldd >/dev/null 2>&1; then
        missing="$(ldd "$binary" 2>&1 | grep 'not found' || true)"
        if [ -n "$missing" ]; then
            fail "$binary needs libraries this host lacks: $missing"
        fi
    fi
}

if [ -x "$binary" ]; then
    say "cached: $binary ($(cat "$dest/VERSION" 2>/dev/null || echo 'version unknown'))"
    check_libraries
    printf '%s\n' "$binary"
    exit 0
fi

command -v apt-get >/dev/null 2>&1 || fail "apt-get not found (a Debian-based host is needed)"
command -v dpkg >/dev/null 2>&1 || fail "dpkg not found (a Debian-based host is needed)"

work="$(mktemp -d "${TMPDIR:-/tmp}/fetch-mps-control.XXXXXX")"
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/dl"
printf 'deb %s %s main non-free\n' "$mirror" "$suite" >"$work/sources.list"
: >"$work/status"

# Every path apt would write or read state from points into $work.
set -- \
    -o "Dir::Etc::SourceList=$work/sources.list" \
    -o "Dir::Etc::SourceParts=/dev/null" \
    -o "Dir::State::Lists=$work/lists" \
    -o "Dir::State::status=$work/status" \
    -o "Dir::Cache=$work/cache" \
    -o "Dir::Cache::pkgcache=" \
    -o "Dir::Cache::srcpkgcache=" \
    -o "APT::Get::List-Cleanup=0" \
    -o "Debug::NoLocking=1" \
    -o "Acquire::Languages=none" \
    -o "APT::Architecture=amd64" \
    -o "APT::Architectures=amd64"

case "$(uname -m)" in
    x86_64) ;;
    *) fail "the test binary is amd64-only; this host is $(uname -m)" ;;
esac

say "apt-get update ($mirror $suite main non-free, temporary lists in $work)"
apt-get "$@" -q update >"$work/update.log" 2>&1 \
    || { cat "$work/update.log" >&2; fail "apt-get update failed (network or mirror unreachable?)"; }

say "apt-get download nvidia-cuda-mps"
(cd "$work/dl" && apt-get "$@" -q download nvidia-cuda-mps) >"$work/download.log" 2>&1 \
    || { cat "$work/download.log" >&2; fail "apt-get download nvidia-cuda-mps failed"; }

deb="$(ls "$work"/dl/nvidia-cuda-mps_*.deb 2>/dev/null | head -n 1)"
[ -n "$deb" ] || fail "apt-get download produced no .deb"
version="$(dpkg-deb -f "$deb" Version)"

# Unpack into a staging folder and move it into place, so a half-unpacked cache never looks
# complete.
staging="$work/staging"
dpkg -x "$deb" "$staging" || fail "dpkg -x $deb failed"
[ -x "$staging/usr/bin/nvidia-cuda-mps-control" ] \
    || fail "the package has no usr/bin/nvidia-cuda-mps-control"
printf '%s\n' "$version" >"$staging/VERSION"
mkdir -p "$cache_root"
rm -rf "$dest"
mv "$staging" "$dest"

check_libraries
say "fetched nvidia-cuda-mps $version into $dest"
printf '%s\n' "$binary"
