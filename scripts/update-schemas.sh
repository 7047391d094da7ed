#!/usr/bin/env bash
# Regenerates the committed JSON Schemas in docs/schemas/ from the Rust types.
# Run it after changing a snapshot, evidence, doctor or merge type (the test
# `schemas::the_committed_schemas_are_what_the_types_generate` fails until then), and commit
# the result.
set -euo pipefail
cd "$(dirname "$0")/.."
for kind in snapshot evidence doctor merge attestation cases attest-snapshot; do
  cargo run -q -p mps-preflight -- schema "$kind" > "docs/schemas/$kind.schema.json"
done
echo "docs/schemas/ regenerated"
