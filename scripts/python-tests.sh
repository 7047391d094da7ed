#!/usr/bin/env bash
# The Python package (crates/mps-preflight-py), as CI checks it:
#   1. a virtual environment with maturin, pytest and mypy from the Python package registry;
#   2. clippy on the extension's own code (the `python` feature, which the workspace's normal
#      build never turns on);
#   3. `pip install ./crates/mps-preflight-py` (builds the extension from source), then pytest:
#      the native API, the compat API and the real daemons;
#   4. `maturin build --release` (the abi3 wheel), installed into a fresh virtual environment,
#      imported and run; its size and `python -X importtime` are printed. With
#      MPS_PREFLIGHT_WHEEL set (.ci/run: the manylinux2014 wheel of `cargo xtask dist`), that
#      wheel instead of a new build.
#
# Usage: scripts/python-tests.sh
#   PYTHON                      the interpreter to build venvs from (default: python3)
#   MPS_PREFLIGHT_MPS_CONTROLS  the real nvidia-cuda-mps-control binaries, joined by `:`
#                               (default: the caches of scripts/fetch-mps-control.sh)
#   MPS_PREFLIGHT_PYTEST_NO_SKIPS=1  any skipped test fails the run (CI sets it when both real
#                               daemons were fetched)
set -euo pipefail
cd "$(dirname "$0")/.."

python="${PYTHON:-python3}"
work="$PWD/target/python-ci"
venv="$work/venv"
mkdir -p "$work"

if ! "$python" -c 'import ensurepip, venv' >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq python3-venv python3-pip
fi
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q "maturin>=1.9.4,<2" pytest mypy

cargo clippy -p mps-preflight-py --features python --all-targets --locked -- -D warnings

echo "python: pip install ./crates/mps-preflight-py"
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps ./crates/mps-preflight-py

# pytest exits 5 when it collected no test and 1 when one failed: either stops this script
# (set -e), so an empty or red run can never pass here.
echo "python: pytest crates/mps-preflight-py"
"$venv/bin/python" -m pytest crates/mps-preflight-py -q -p no:cacheprovider

if [ -n "${MPS_PREFLIGHT_WHEEL:-}" ]; then
  wheel="$MPS_PREFLIGHT_WHEEL"
  [ -f "$wheel" ] || { echo "python: no wheel at $wheel" >&2; exit 1; }
else
  echo "python: maturin build --release (abi3 wheel)"
  rm -f target/wheels/mps_preflight-*.whl
  "$venv/bin/maturin" build --release --quiet -m crates/mps-preflight-py/Cargo.toml
  wheels=(target/wheels/mps_preflight-*-cp39-abi3-*.whl)
  wheel="$PWD/${wheels[0]}"
  [ -f "$wheel" ] || { echo "python: no abi3 wheel in target/wheels" >&2; exit 1; }
fi

fresh="$work/fresh"
rm -rf "$fresh"
"$python" -m venv "$fresh"
"$fresh/bin/python" -m pip install -q "$wheel"
fixture="$PWD/fixtures/hosts/healthy-socket-with-server.json"
(
  cd "$work" # away from the source tree: the wheel's package, not crates/…/python, is imported
  "$fresh/bin/python" -c "
import sys, mps_preflight
evidence = mps_preflight.check(sys.argv[1], request='mps', learner_device='cuda:0', collector_device='cuda:0', backend='mjwarp')
assert evidence.validated and evidence.server_pid == 4428, evidence
assert mps_preflight.__file__.startswith(sys.prefix), mps_preflight.__file__
print('python: the wheel imports and validates:', evidence.to_dict()['control_pipe'])
" "$fixture"
  "$fresh/bin/mps-preflight" check --snapshot "$fixture" --request mps --learner-device cuda:0 \
    --collector-device cuda:0 --backend mjwarp >/dev/null
  echo "python: wheel $(basename "$wheel"): $(stat -c %s "$wheel") bytes"
  "$fresh/bin/python" -X importtime -c 'import mps_preflight' 2>&1 | grep -E 'mps_preflight|cumulative' | tail -n 4
)
