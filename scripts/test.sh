#!/usr/bin/env bash
# The test command: set up, lint, type-check, then every test (integration tests need root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/hadolint Dockerfile
.venv/bin/pytest "$@"
