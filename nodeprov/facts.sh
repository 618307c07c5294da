# nodeprov facts: everything nodeprov reads about a node, in one round trip.
# Usage: sh facts.sh TOKEN   (prints sections, each after a line "@@TOKEN name")
# Read-only. Runs with POSIX sh on any Linux; missing tools leave their section empty.
token=$1
section() { printf '\n@@%s %s\n' "$token" "$1"; }
section hostname; hostname 2>/dev/null || cat /proc/sys/kernel/hostname
section fqdn; timeout 5 hostname -f 2>/dev/null
section os_release; cat /etc/os-release 2>/dev/null
section kernel; uname -r
section arch; uname -m
section python; command -v python3 && python3 --version 2>&1  # exits before the interpreter starts: ~1 ms
section interfaces; ip -j addr show 2>/dev/null
section ephemeral_ports; cat /proc/sys/net/ipv4/ip_local_port_range
section ufw; command -v ufw && grep -s '^ENABLED=' /etc/ufw/ufw.conf \
  && { iptables -w 5 -n -L ufw-user-input >/dev/null 2>&1 && echo chains=yes || echo chains=no; }
section systemd; [ -d /run/systemd/system ] && echo yes
section package_manager; for tool in apt-get dnf yum zypper; do command -v "$tool" && break; done
# A hung nvidia-smi must not pass for "no GPU": say so, and the parser refuses it.
gpu() { timeout 20 nvidia-smi "$@" 2>&1; [ $? -ne 124 ] || echo "nvidia-smi timed out after 20 s"; }
section nvidia_smi; command -v nvidia-smi >/dev/null 2>&1 && gpu
section nvidia_query; command -v nvidia-smi >/dev/null 2>&1 && gpu \
  --query-gpu=index,name,uuid,memory.total,driver_version --format=csv,noheader
true
