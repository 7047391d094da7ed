#!/usr/bin/env bash
# The project's policy suites through `mps-preflight test`, as CI runs them:
# fixtures/cases must pass, fixtures/failing-cases must fail (exit 1) with its FAIL line, and
# both JUnit reports must parse with a real XML parser (Python's) and count what stdout counted.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build -q -p mps-preflight --locked
bin=target/debug/mps-preflight
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$bin" test fixtures/cases --junit "$out/cases.xml" | tee "$out/cases.txt" | tail -n 1

code=0
"$bin" test fixtures/failing-cases --junit "$out/failing.xml" >"$out/failing.txt" 2>"$out/failing.err" || code=$?
cat "$out/failing.txt"
fail_line='FAIL fixtures/failing-cases/deliberately-failing.cases.json: frozen daemon is unreachable: rejected: expected daemon-unreachable, got daemon-timed-out'
if [ "$code" != 1 ] || ! grep -qxF "$fail_line" "$out/failing.txt" || ! grep -qxF '1 passed, 1 failed' "$out/failing.txt"; then
  echo "policy-suites: the deliberately failing suite exited $code without its FAIL line" >&2
  cat "$out/failing.err" >&2
  exit 1
fi

python3 - "$out" <<'PY'
import re, sys, xml.etree.ElementTree as ET
out = sys.argv[1]
for name in ("cases", "failing"):
    root = ET.parse(f"{out}/{name}.xml").getroot()
    last = open(f"{out}/{name}.txt").read().splitlines()[-1]
    passed, failed = map(int, re.fullmatch(r"(\d+) passed, (\d+) failed", last).groups())
    cases = root.findall("./testsuite/testcase")
    assert root.tag == "testsuites", root.tag
    assert int(root.get("tests")) == len(cases) == passed + failed, (name, root.attrib)
    assert int(root.get("failures")) == len(root.findall("./testsuite/testcase/failure")) == failed
    print(f"policy-suites: {name}.xml: {len(cases)} testcases, {failed} failures: valid JUnit XML")
PY
