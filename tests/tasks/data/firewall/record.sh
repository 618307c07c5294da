#!/bin/sh
# Re-record the probe outputs the firewall tests parse: real ufw, run in throwaway network+mount
# namespaces (never the machine's own firewall). Needs root, ufw and util-linux.
#   sh tests/tasks/data/firewall/record.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
probe=$(cd "$here/../../../.." && .venv/bin/python -c \
  'import shlex; from nodeprov.tasks import firewall; print(shlex.join(firewall.probe(None).argv))')
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# record NAME SCRIPT [COMMAND EXT]: run SCRIPT (ufw commands) in a fresh namespace, save the
# probe's output as NAME.probe (COMMAND's as NAME.EXT)
record() {
  mkdir -p "$scratch/$1/upper" "$scratch/$1/work"
  unshare --net --mount --fork sh -c '
    set -e
    mount --make-rprivate /
    mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/upper,workdir=$1/work" /etc
    mount -t tmpfs tmpfs /run
    mount -t tmpfs tmpfs /var/lib
    ip link set lo up
    eval "$2" >/dev/null
    eval "$3"' record "$scratch/$1" "$2" "${3:-$probe}" > "$here/$1.${4:-probe}"
}

ours='ufw allow proto tcp from any to any port 22 comment "nodeprov: ssh"
ufw allow proto tcp from 10.0.0.0/24 to any port 32768:60999 comment "nodeprov: nccl ephemeral"
ufw allow proto tcp from 10.0.0.0/24 to any port 29500 comment "nodeprov: rdzv"'
record fresh 'true'
record in-sync "$ours
ufw --force enable"
record stale-subnet "$(printf '%s\n' "$ours" | sed s/10.0.0.0/10.9.0.0/)
ufw allow 8080/tcp
ufw allow from 10.1.0.0/16
ufw --force enable"
record ssh-cidr "$(printf '%s\n' "$ours" | sed 's/from any to any port 22/from 192.168.7.0\/24 to any port 22/')
ufw --force enable"
record ipv6-off "sed -i s/^IPV6=yes/IPV6=no/ /etc/default/ufw
sysctl -q -w net.ipv6.conf.all.disable_ipv6=1
$ours
ufw --force enable"
record reverted "$ours
ufw --force enable
ufw --force disable
mkdir -p /var/lib/nodeprov && echo 'Sat Nov 22 13:30:00 UTC 2025' > /var/lib/nodeprov/ufw-reverted"
mixed="ufw allow proto tcp from any to any port 22 comment 'nodeprov: ssh'
ufw limit ssh/tcp
ufw allow 53
ufw deny from 10.2.0.5 to any port 25 proto tcp
ufw allow in on eth0 log proto udp from 10.0.0.0/8 port 53 to any port 5353 comment 'nodeprov: odd'
ufw route allow in on eth0 out on eth1 to any port 80 proto tcp
ufw allow OpenSSH
ufw allow out 443/tcp comment 'out web'
ufw allow proto udp from fd00::/64 to any port 4000:4010 comment 'v6 only'
ufw allow proto tcp from 10.0.0.5/32 to any port 2222
ufw default reject incoming"
record mixed "$mixed"
# the ipv6 task's part done, ufw untouched: what the fast path starts from
record fresh-ipv6-off "sed -i s/^IPV6=yes/IPV6=no/ /etc/default/ufw
sysctl -q -w net.ipv6.conf.all.disable_ipv6=1"
# what the firewall task's commands make of mixed (its plan as if ufw's command line did it all)
record mixed-enabled "$mixed
ufw allow proto tcp from 10.0.0.0/24 to any port 32768:60999 comment 'nodeprov: nccl ephemeral'
ufw allow proto tcp from 10.0.0.0/24 to any port 29500 comment 'nodeprov: rdzv'
ufw delete allow in on eth0 log proto udp from 10.0.0.0/8 port 53 to 0.0.0.0/0 port 5353
ufw default deny incoming
ufw --force enable"
# every log level, and default policies that change what is logged
record logging-off "ufw logging off
$ours
ufw --force enable"
record logging-medium "ufw logging medium
$ours
ufw --force enable"
record logging-high "ufw logging high
ufw default allow routed
$ours
ufw --force enable"
record logging-full "ufw logging full
ufw default reject outgoing
$ours
ufw --force enable"
# a user's deny of the subnet inserted above ours; a later sysctl file moving the range at boot
record deny-above "$ours
ufw --force enable
ufw insert 1 deny from 10.0.0.0/24
ufw insert 1 deny from 10.2.0.5 to any port 25 proto tcp"
record deny-above "$ours
ufw --force enable
ufw insert 1 deny from 10.0.0.0/24
ufw insert 1 deny from 10.2.0.5 to any port 25 proto tcp" "ufw status numbered" status
record range-moved "$ours
ufw --force enable
echo 'net.ipv4.ip_local_port_range = 40000 50000' > /etc/sysctl.d/99-zz-ports.conf"
ls -l "$here"
