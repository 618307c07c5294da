#!/usr/bin/env bash
# Proof of nodeprov's GPU paths on this machine: facts.sh and the CUDA probe on the real driver,
# the torch choice, the verification job (one process per GPU: kernel check, DDP step, NCCL
# all-reduce sweep), a forced failure and its diagnosis. tests/gpuproof.py says what it
# writes. Needs a python with torch (PYTHON=... names another than python3); installs nothing.
#   scripts/gpu-proof.sh [--out DIR] [--stand-in]
# On a lent GPU machine (the device tool):  bash scripts/gpu-proof.sh --out "$OUT"
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
python=${PYTHON:-python3}
exec "$python" -m tests.gpuproof --python "$python" "$@"
