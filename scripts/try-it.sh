#!/usr/bin/env bash
# Try nodeprov end to end on this machine: install, bring up a 3-node local test cluster (plus a
# host outside its subnet), and run the full `nodeprov apply` on it. Needs root (namespaces): run
# by a user, it runs itself again with sudo.
# The cluster stays up to look around, in the testbed's default directory, so that
# `nodeprov testbed exec|status|down` find it without --dir; remove it with:
#   .venv/bin/nodeprov testbed down
set -euo pipefail
source "$(dirname "$0")/become-root.sh"
cd "$(dirname "$0")/.."
bash scripts/setup.sh
dir=${NODEPROV_DEMO_DIR:-/srv/nodeprov-testbed}  # the testbed default (its --dir)
.venv/bin/nodeprov testbed down --dir "$dir" >/dev/null 2>&1 || true
# The nodes are offline, like an air-gapped cluster: this machine downloads the wheels once
# (wheelhouse) and pushes them over SSH.
.venv/bin/nodeprov testbed up --nodes 3 --outsider --dir "$dir" --var wheelhouse=true
# A new cluster each time: the bandwidth baseline a run before left beside its inventory was
# measured on other nodes, so this run records its own (--rebaseline) rather than fail on it.
.venv/bin/nodeprov apply "$dir/inventory.yaml" --rebaseline
