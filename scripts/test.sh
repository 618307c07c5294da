#!/usr/bin/env bash
# The test command: set up, lint, type-check, build the docs, then every test. The integration
# tests need root: run by a user, it runs itself again with sudo.
set -euo pipefail
source "$(dirname "$0")/become-root.sh"
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/hadolint Dockerfile
# The docs/ pages: a link to a missing page or anchor, or a page outside mkdocs.yml's nav, fails.
# Not --quiet: it drops the warnings before --strict counts them, and the build passes.
site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
.venv/bin/mkdocs build --strict --site-dir "$site"
.venv/bin/pytest "$@"
