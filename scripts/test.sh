#!/usr/bin/env bash
# The test command: set up, lint, type-check, then every test. The integration tests need root:
# run by a user, it runs itself again with sudo.
set -euo pipefail
source "$(dirname "$0")/become-root.sh"
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/hadolint Dockerfile
.venv/bin/pytest "$@"
