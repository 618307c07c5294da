#!/usr/bin/env bash
# Install what nodeprov's tests and the local test cluster need, then nodeprov itself into .venv.
# Idempotent; run as root on Debian/Ubuntu (the test cluster needs root and namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium: headless, it opens the HTML reports in tests/htmlreport/test_browser.py
packages=(openssh-server openssh-client ufw iptables iproute2 procps util-linux iperf3 python3-venv
  iputils-ping sudo shellcheck chromium)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if ((${#missing[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
# A failed install stops here (set -e), never later as a missing module.
.venv/bin/pip install -q --upgrade pip
# torch runs the verification job's local tests; the CPU build of the pinned release.
.venv/bin/pip install -q -e '.[test]' 'torch==2.13.0'
.venv/bin/nodeprov --help >/dev/null
