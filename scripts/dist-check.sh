#!/usr/bin/env bash
# The release artifacts as CI checks them (docs/deploy.md):
#   1. `cargo package --workspace` (every crate, the unpublished ones too) and `cargo xtask dist`;
#   2. the CLI: newest GLIBC symbol version <= 2.17, no libgcc_s, `--version` names the version;
#   3. the wheel: `auditwheel show` says manylinux_2_17_x86_64; the wheel and sdist carry both
#      licences and no placeholder URL;
#   4. the wheel in a fresh venv with no cargo or rustc on PATH (`env -i`): import, __version__,
#      the console command on the quick-start fixture, the package's pytest suite;
#   5. a Debian 11 root (glibc 2.31, Python 3.9; scripts/debian11-chroot.sh, cached): the CLI's
#      output is byte for byte the host's, the wheel installs and imports, the .deb installs
#      with dpkg -i and puts the man page and completions where Debian looks, and the fleet
#      recipes (contrib/slurm/, deploy/, their documents) under /usr/share/mps-preflight/.
# Prints the artifacts' sizes, the newest glibc version and each step's time.
#
# Usage: scripts/dist-check.sh
#   MPS_PREFLIGHT_MPS_CONTROLS  the real daemons for the pytest run, joined by `:` (default: the
#                               caches of scripts/fetch-mps-control.sh)
#   MPS_PREFLIGHT_PYTEST_NO_SKIPS=1  any skipped test fails the run
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
dist="$root/target/dist"
work="$root/target/dist-check"
rm -rf "$work"
mkdir -p "$work"
started=$SECONDS
step() { echo "dist-check: [$((SECONDS - started)) s] $*"; }
fail() { echo "dist-check: FAIL: $*" >&2; exit 1; }

version=$(cargo metadata --format-version 1 --no-deps --offline |
  python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "mps-preflight"))')
fixture="$root/fixtures/hosts/healthy-socket-with-server.json"
check_args=(check --snapshot "$fixture" --request mps --learner-device cuda:0 --collector-device cuda:0)

# --- 1. packages and artifacts -------------------------------------------------------------
step "cargo package --workspace (no verify: cargo xtask package verifies the library crates)"
dirty=(--allow-dirty)
[ -n "${CI:-}" ] && dirty=()
CARGO_TARGET_DIR="$root/target/package-all" cargo package --workspace --locked --no-verify \
  "${dirty[@]}" --quiet 2>/dev/null || {
  CARGO_TARGET_DIR="$root/target/package-all" cargo package --workspace --locked --no-verify "${dirty[@]}"
  fail "cargo package --workspace"
}
step "cargo xtask dist"
cargo xtask dist
cli="$dist/mps-preflight-$version-x86_64-linux-gnu"
wheel="$dist/mps_preflight-$version-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
sdist="$dist/mps_preflight-$version.tar.gz"
tarball="$cli.tar.gz"
deb="$dist/mps-preflight_${version}_amd64.deb"
for artifact in "$cli" "$wheel" "$sdist" "$tarball" "$deb" "$dist/SHA256SUMS"; do
  [ -s "$artifact" ] || fail "no $artifact"
done
(cd "$dist" && sha256sum --check --quiet SHA256SUMS) || fail "SHA256SUMS does not match"

# --- 2. the CLI ----------------------------------------------------------------------------
step "the CLI's glibc floor"
newest=$(objdump -T "$cli" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -Vu | tail -n 1)
[ -n "$newest" ] || fail "objdump found no GLIBC symbol version in $cli"
[ "$(printf '%s\n2.17\n' "$newest" | sort -V | tail -n 1)" = "2.17" ] ||
  fail "the CLI needs GLIBC_$newest (> 2.17)"
if objdump -p "$cli" | grep -q 'NEEDED.*libgcc_s'; then fail "the CLI needs libgcc_s"; fi
echo "dist-check: newest glibc symbol: GLIBC_$newest; NEEDED: $(objdump -p "$cli" | awk '/NEEDED/ {print $2}' | tr '\n' ' ')"
shown=$("$cli" --version)
[[ "$shown" =~ ^mps-preflight\ $version\ \(([0-9a-f]{7}|unknown\ commit),\ x86_64-unknown-linux-gnu\.2\.17\)$ ]] ||
  fail "--version printed: $shown"
echo "dist-check: $shown"
"$cli" "${check_args[@]}" >"$work/host.json" || fail "the CLI does not validate the fixture"
# The ordinary host build (`cargo test --workspace` built it in CI) prints the same bytes.
if [ -x "$root/target/debug/mps-preflight" ]; then
  "$root/target/debug/mps-preflight" "${check_args[@]}" >"$work/host-cargo.json"
  cmp "$work/host.json" "$work/host-cargo.json" || fail "the 2.17 CLI and the host build differ"
fi
tar -tzf "$tarball" | sed 's|^[^/]*/||' | sort >"$work/tarball.txt"
for member in mps-preflight doc/mps-preflight.1 complete/mps-preflight.bash complete/_mps-preflight \
    complete/mps-preflight.fish README.md LICENSE-MIT LICENSE-APACHE doc/fleet.md doc/node-health.md \
    deploy/node-problem-detector/mps-preflight-monitor.json deploy/prometheus/mps-preflight-rules.yml; do
  grep -qx "$member" "$work/tarball.txt" || fail "the tar.gz lacks $member"
done
# The fleet recipes (docs/deploy.md): every Slurm script of contrib/slurm/, executable.
tar -tvzf "$tarball" >"$work/tarball-modes.txt"
for recipe in contrib/slurm/*; do
  grep -q "^-rwxr-xr-x .*/$recipe\$" "$work/tarball-modes.txt" || fail "the tar.gz lacks an executable $recipe"
done

# --- 3. the wheel and the sdist --------------------------------------------------------------
step "auditwheel show"
tools="$root/target/dist-tools/bin"
"$tools/auditwheel" show "$wheel" >"$work/auditwheel.txt"
# auditwheel wraps its sentences: compare with the line breaks folded into spaces.
tr -s ' \n' '  ' <"$work/auditwheel.txt" |
  grep -q 'consistent with the following platform tag: "manylinux_2_17_x86_64"' ||
  { cat "$work/auditwheel.txt"; fail "auditwheel: not manylinux_2_17_x86_64"; }
python3 - "$wheel" "$sdist" <<'EOF' || fail "the wheel's or sdist's metadata"
import sys, tarfile, zipfile
wheel, sdist = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    names = z.namelist()
    meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    for licence in ("LICENSE-MIT", "LICENSE-APACHE"):
        assert any(n.endswith(f".dist-info/licenses/{licence}") for n in names), (wheel, licence)
with tarfile.open(sdist) as t:
    members = t.getnames()
    pkg = t.extractfile(next(m for m in members if m.endswith("/PKG-INFO") and m.count("/") == 1)).read().decode()
    for licence in ("LICENSE-MIT", "LICENSE-APACHE"):
        assert any(m.count("/") == 1 and m.endswith("/" + licence) for m in members), (sdist, licence)
for text in (meta, pkg):
    assert "License-Expression: MIT OR Apache-2.0" in text, text[:400]
    assert "License-File: LICENSE-MIT" in text and "License-File: LICENSE-APACHE" in text
    assert "example.invalid" not in text, "a placeholder URL in the metadata"
EOF

# --- 4. the wheel with no Rust on PATH -----------------------------------------------------
step "the wheel in a fresh venv, env -i PATH=/usr/bin:/bin"
python_bin=$(command -v python3)
[ "$python_bin" = /usr/bin/python3 ] || echo "dist-check: note: using /usr/bin/python3, not $python_bin"
venv="$work/venv"
# The real daemons for the real-daemon tests: as given, else the fetch script's caches (env -i
# below hides $HOME from the tests).
controls="${MPS_PREFLIGHT_MPS_CONTROLS:-}"
if [ -z "$controls" ]; then
  for cache in "$HOME/.cache/mps-preflight" "$HOME/.cache/mps-preflight-550"; do
    daemon="$cache/nvidia-cuda-mps/usr/bin/nvidia-cuda-mps-control"
    [ -x "$daemon" ] && controls="${controls:+$controls:}$daemon"
  done
fi
env -i PATH=/usr/bin:/bin HOME="$work" \
  MPS_PREFLIGHT_MPS_CONTROLS="$controls" \
  MPS_PREFLIGHT_PYTEST_NO_SKIPS="${MPS_PREFLIGHT_PYTEST_NO_SKIPS:-}" \
  PIP_CACHE_DIR="${PIP_CACHE_DIR:-$HOME/.cache/pip}" \
  bash -euo pipefail -c '
  venv=$1 wheel=$2 version=$3 fixture=$4 tests=$5 expected=$6; shift 6
  if command -v cargo || command -v rustc; then echo "cargo or rustc on PATH" >&2; exit 1; fi
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel" pytest mypy
  cd "$(dirname "$venv")" # away from the source tree: the installed package is imported
  "$venv/bin/python" -c "
import sys, mps_preflight
assert mps_preflight.__version__ == sys.argv[1], mps_preflight.__version__
assert mps_preflight.__file__.startswith(sys.prefix), mps_preflight.__file__
" "$version"
  "$venv/bin/mps-preflight" "$@" >console.json
  cmp console.json "$expected"
  # The pytest executable, not python -m pytest: the source tree must not come first on sys.path.
  "$venv/bin/pytest" "$tests" -q -p no:cacheprovider
' _ "$venv" "$wheel" "$version" "$fixture" "$root/crates/mps-preflight-py/tests" "$work/host.json" \
  "${check_args[@]}" || fail "the wheel in a fresh venv"

# --- 5. Debian 11 ----------------------------------------------------------------------------
step "Debian 11 root"
chroot_root=$(bash scripts/debian11-chroot.sh | tail -n 1)
inside=/tmp/mps-preflight-dist-check
rm -rf "$chroot_root$inside"
mkdir -p "$chroot_root$inside"
cp "$cli" "$wheel" "$deb" "$fixture" "$chroot_root$inside/"
in_chroot() {
  # A private mount namespace: /proc is mounted for the root's tools and gone when it exits.
  unshare --mount --propagation private sh -c 'mount -t proc proc "$1/proc" && shift && exec chroot "$@"' \
    _ "$chroot_root" "$chroot_root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"
}
echo "dist-check: Debian 11: $(in_chroot /usr/bin/ldd --version | head -n 1), $(in_chroot /usr/bin/python3 --version)"
snap="$inside/$(basename "$fixture")"
in_chroot "$inside/$(basename "$cli")" check --snapshot "$snap" --request mps \
  --learner-device cuda:0 --collector-device cuda:0 >"$work/debian11.json" ||
  fail "the CLI does not validate the fixture on Debian 11"
cmp "$work/debian11.json" "$work/host.json" || fail "Debian 11 output differs from the host's"
in_chroot sh -euc '
  cd "$1"; rm -rf venv
  python3 -m venv venv
  venv/bin/pip install -q --no-index --disable-pip-version-check ./"$2"
  venv/bin/python -c "import mps_preflight; print(\"dist-check: Debian 11 wheel imports\", mps_preflight.__version__)"
  venv/bin/mps-preflight check --snapshot "$3" --request mps --learner-device cuda:0 --collector-device cuda:0 >wheel.json
' _ "$inside" "$(basename "$wheel")" "$snap" || fail "the wheel on Debian 11"
cmp "$chroot_root$inside/wheel.json" "$work/host.json" || fail "the Debian 11 wheel's output differs"
in_chroot sh -euc '
  dpkg -i "$1" >/dev/null
  trap "dpkg --purge mps-preflight >/dev/null" EXIT # keeps the cached root clean
  /usr/bin/mps-preflight --version
  for f in /usr/share/man/man1/mps-preflight.1.gz /usr/share/bash-completion/completions/mps-preflight \
      /usr/share/zsh/vendor-completions/_mps-preflight /usr/share/fish/vendor_completions.d/mps-preflight.fish \
      /usr/share/doc/mps-preflight/copyright /usr/share/mps-preflight/doc/fleet.md \
      /usr/share/mps-preflight/doc/node-health.md \
      /usr/share/mps-preflight/deploy/node-problem-detector/mps-preflight-monitor.json; do
    [ -s "$f" ] || { echo "missing $f" >&2; exit 1; }
  done
  for recipe in prolog.sh task-prolog.sh srun-probe.sh; do
    f=/usr/share/mps-preflight/contrib/slurm/$recipe
    [ -x "$f" ] && sh -n "$f" || { echo "missing or not executable: $f" >&2; exit 1; }
  done
  zcat /usr/share/man/man1/mps-preflight.1.gz | grep -q "^\.TH"
' _ "$inside/$(basename "$deb")" || fail "the .deb on Debian 11"
rm -rf "$chroot_root$inside"

step "sizes"
(cd "$dist" && for f in *; do printf 'dist-check: %10d B  %s\n' "$(stat -c %s "$f")" "$f"; done)
step "ok (newest glibc GLIBC_$newest)"
