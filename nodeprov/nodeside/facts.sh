# nodeprov facts: everything nodeprov reads about a node, in one round trip.
# Usage: sh facts.sh TOKEN   (prints sections, each after a line "@@TOKEN name")
# Read-only. Runs with POSIX sh on any Linux; missing tools leave their section empty.
# Small files are read with shell builtins: every program started costs the node ~1 ms.
token=$1
section() { printf '\n@@%s %s\n' "$token" "$1"; }
show() { while IFS= read -r line || [ -n "$line" ]; do printf '%s\n' "$line"; done < "$1"; }
section hostname; show /proc/sys/kernel/hostname 2>/dev/null || hostname
section fqdn; timeout 5 hostname -f 2>/dev/null
# what DNS alone answers for the node's hostname, /etc/hosts left out: tasks/hostnames.py lists
# a name a node reports only where it does not already name another machine
section names_dns; if { read -r own_name < /proc/sys/kernel/hostname; } 2>/dev/null; then
  timeout 3 getent -s dns ahosts "$own_name" 2>/dev/null | while read -r address _; do
    printf '%s %s\n' "$own_name" "$address"; done
fi
section os_release; show /etc/os-release 2>/dev/null
section kernel; show /proc/sys/kernel/osrelease 2>/dev/null || uname -r
section arch; show /proc/sys/kernel/arch 2>/dev/null || uname -m  # the file: Linux 6.1+
section python; command -v python3 && python3 --version 2>&1  # exits before the interpreter starts: ~1 ms
# versioned interpreters beside it (RHEL 9's python3 is 3.9; `dnf install python3.12` adds one),
# but python3 itself (Debian's python3 is a link to one): each costs a program start
section pythons; python3=$(command -v python3)
for python in /usr/bin/python3.[0-9]* /usr/local/bin/python3.[0-9]*; do
  case ${python##*/} in
    python3.[0-9] | python3.[0-9][0-9])
      # shellcheck disable=SC3013 # -ef, not POSIX: dash, bash and busybox sh all have it
      [ ! -x "$python" ] || [ "$python" -ef "$python3" ] || printf '%s %s\n' "$python" "$("$python" --version 2>&1)" ;;
  esac
done
section interfaces; ip -j addr show 2>/dev/null
# Mb/s as the kernel reports each link (a down or virtual one without a speed: no line); sysfs
# serves a byte at a time as asked, so sh's read needs no cat
section link_speeds; for dev in /sys/class/net/*; do
  { read -r speed < "$dev/speed"; } 2>/dev/null && printf '%s %s\n' "${dev##*/}" "$speed"
done
# cat: a number sysctl reads as EOF past its first read(2), and sh's read takes a byte each
section ephemeral_ports; cat /proc/sys/net/ipv4/ip_local_port_range
# active = ENABLED=yes and ufw's chains loaded (iptables asked only then)
section ufw; if command -v ufw; then
  enabled=
  while IFS= read -r line || [ -n "$line" ]; do
    case $line in ENABLED=*) printf '%s\n' "$line"; [ "$line" != ENABLED=yes ] || enabled=1 ;; esac
  done 2>/dev/null < /etc/ufw/ufw.conf
  if [ -z "$enabled" ]; then :
  elif iptables -w 5 -n -L ufw-user-input >/dev/null 2>&1; then echo chains=yes
  else echo chains=no; fi
  # Fedora's and EPEL's ufw keep the user rules here, not in /etc/ufw
  [ ! -e /var/lib/ufw/user.rules ] || echo rules=/var/lib/ufw
fi
section systemd; [ -d /run/systemd/system ] && echo yes
# firewalld (a Python script: its process is named after it) filters beside ufw; asked only
# where its package is (pgrep costs ~7 ms); without pgrep (procps), systemd is asked
section firewalld; if [ ! -e /etc/firewalld/firewalld.conf ]; then :
elif pgrep -x firewalld >/dev/null 2>&1; then echo running
elif ! command -v pgrep >/dev/null && systemctl is-active --quiet firewalld 2>/dev/null; then echo running
fi
section package_manager; for tool in apt-get dnf yum zypper; do command -v "$tool" && break; done
# A hung nvidia-smi must not pass for "no GPU": say so, and the parser refuses it.
gpu() { timeout 20 nvidia-smi "$@" 2>&1; [ $? -ne 124 ] || echo "nvidia-smi timed out after 20 s"; }
# WSL2 keeps the Windows driver's nvidia-smi in /usr/lib/wsl/lib, not on every login's PATH
[ ! -x /usr/lib/wsl/lib/nvidia-smi ] || command -v nvidia-smi >/dev/null 2>&1 || PATH=$PATH:/usr/lib/wsl/lib
section nvidia_smi; command -v nvidia-smi >/dev/null 2>&1 && gpu
# compute_cap: drivers >= 510; older ones reject the whole query, so ask again without it, and
# ask the driver API instead (cuda_capability.py, as $nodeprov_cuda_probe): only then
ask_cuda=  # never from the environment the login gave
section nvidia_query; if command -v nvidia-smi >/dev/null 2>&1; then
  query=$(gpu --query-gpu=index,name,uuid,memory.total,driver_version,compute_cap --format=csv,noheader)
  case $query in
    *'not a valid field'*) gpu --query-gpu=index,name,uuid,memory.total,driver_version --format=csv,noheader
      ask_cuda=1 ;;
    *) printf '%s\n' "$query" ;;
  esac
fi
section cuda_probe; if [ -n "$ask_cuda" ] && command -v python3 >/dev/null 2>&1; then
  # shellcheck disable=SC2154  # remote/facts.py's read_script sets it before this script
  timeout 20 python3 -I -c "$nodeprov_cuda_probe" 2>&1
fi
# a GPU driver's files, seen when nvidia-smi cannot speak: device nodes, WSL2's paravirtual GPU
section gpu_files; for path in /dev/nvidiactl /dev/nvidia0 /dev/dxg /usr/lib/wsl/lib/libcuda.so.1; do
  [ ! -e "$path" ] || printf '%s\n' "$path"
done
section nvidia_proc; show /proc/driver/nvidia/version 2>/dev/null
# Jetson's board support package (L4T): "# R36 (release), REVISION: 4.3, ..."
section tegra; [ ! -e /etc/nv_tegra_release ] || { read -r line < /etc/nv_tegra_release; printf '%s\n' "$line"; }
# Every PCI function (slot vendor device class), so a GPU is seen without any driver (gpu/pci.py).
section pci_devices; for dev in /sys/bus/pci/devices/*; do
  [ -r "$dev/class" ] || continue
  read -r vendor < "$dev/vendor"; read -r device < "$dev/device"; read -r class < "$dev/class"
  printf '%s %s %s %s\n' "${dev##*/}" "$vendor" "$device" "$class"
done
# ROCm >= 7.x native packages keep it under core/
section rocm_version; show /opt/rocm/.info/version 2>/dev/null || show /opt/rocm/core/.info/version 2>/dev/null
section amd_smi; command -v amd-smi >/dev/null 2>&1 && timeout 20 amd-smi version 2>&1
# -- fast fabric (issue #36): RDMA ports, what the job's user may use, NCCL's settings --------
# Read as facts run: the login, or root under become. Programs start only where
# /sys/class/infiniband lists a device, so a node without RDMA pays a few builtins.
rdma=
for dev in /sys/class/infiniband/*; do [ -e "$dev" ] && rdma=1 && break; done
# "DEV PORT KEY VALUE" from each port's files; a GID as "DEV PORT gid INDEX GID TYPE NETDEV"
# (the all-zero ones, unused, left out: a port has 128 or more)
section rdma_ports; [ -z "$rdma" ] || for port in /sys/class/infiniband/*/ports/*; do
  dev=${port%/ports/*}; dev=${dev##*/}; number=${port##*/}
  for key in state phys_state link_layer rate; do
    { read -r value < "$port/$key"; } 2>/dev/null && printf '%s %s %s %s\n' "$dev" "$number" "$key" "$value"
  done
  for gid in "$port"/gids/*; do
    { read -r value < "$gid"; } 2>/dev/null || continue
    case $value in 0000:0000:0000:0000:0000:0000:0000:0000 | fe80:0000:0000:0000:0000:0000:0000:0000) continue ;; esac
    index=${gid##*/}; type=; ndev=
    { read -r type < "$port/gid_attrs/types/$index"; } 2>/dev/null
    { read -r ndev < "$port/gid_attrs/ndevs/$index"; } 2>/dev/null
    printf '%s %s gid %s %s %s|%s\n' "$dev" "$number" "$index" "$value" "$type" "$ndev"
  done
done
# "DEV NETDEV PCI-PATH": the netdev a NIC carries, and where it sits on the PCI tree (cd -P: no
# program started)
section rdma_devices; [ -z "$rdma" ] || for dev in /sys/class/infiniband/*; do
  pci=$(cd -P "$dev/device" 2>/dev/null && pwd)
  nets=; for net in "$dev"/device/net/*; do [ ! -e "$net" ] || nets="$nets${nets:+,}${net##*/}"; done
  printf '%s %s %s\n' "${dev##*/}" "${nets:--}" "${pci:--}"
done
# each NVIDIA GPU's PCI path: ACS matters on the bridges above it as above its NIC
section rdma_gpu_paths; [ -z "$rdma" ] || for dev in /sys/bus/pci/devices/*; do
  { read -r vendor < "$dev/vendor"; read -r class < "$dev/class"; } 2>/dev/null || continue
  case $vendor:$class in 0x10de:0x0300?? | 0x10de:0x0302??) (cd -P "$dev" 2>/dev/null && pwd) ;; esac
done
# "PATH rw|denied" for what the job opens (present is not enough: its user must open it), or
# "/dev/infiniband absent|empty" (a container without the device list)
section rdma_char_devices; if [ -z "$rdma" ]; then :
elif [ ! -d /dev/infiniband ]; then echo "/dev/infiniband absent"
else
  state=empty
  for path in /dev/infiniband/*; do
    [ -e "$path" ] || continue
    state=
    if [ -r "$path" ] && [ -w "$path" ]; then printf '%s rw\n' "$path"; else printf '%s denied\n' "$path"; fi
  done
  [ -z "$state" ] || echo "/dev/infiniband empty"
fi
# the verbs library, libfabric and NCCL's network plugins as the job's loader finds them
section rdma_libraries; if [ -n "$rdma" ]; then
  ldconfig -p 2>/dev/null | while IFS= read -r line; do
    case $line in *libibverbs.so*|*libfabric.so*|*libnccl-net*) printf '%s\n' "${line##*=> }" ;; esac
  done
  IFS_=$IFS; IFS=:
  for dir in $LD_LIBRARY_PATH; do
    for lib in "$dir"/libibverbs.so* "$dir"/libfabric.so* "$dir"/libnccl-net*.so; do
      [ ! -e "$lib" ] || printf '%s\n' "$lib"
    done
  done
  IFS=$IFS_
fi
# ulimit -l as facts run (KiB, or unlimited): the login's, or root's under become (verify
# checks the login's own over a new session: checks/fresh.py)
section rdma_memlock
# shellcheck disable=SC3045 # -l, not POSIX: dash, bash and busybox sh all have it
ulimit -l 2>/dev/null
# peer-memory modules loaded, and installed where none is (modinfo only then)
section rdma_modules; if [ -n "$rdma" ]; then
  while IFS=' ' read -r name _; do
    case $name in nvidia_peermem | nv_peer_mem | ib_core | ib_uverbs | mlx5_ib | efa) printf 'loaded %s\n' "$name" ;; esac
  done < /proc/modules
  for name in nvidia_peermem nv_peer_mem; do
    file=$(modinfo -F filename "$name" 2>/dev/null) && printf 'installed %s %s\n' "$name" "$file"
  done
fi
# ACS on every bridge (lspci, where it exists): slot lines and their ACSCtl; without root lspci
# prints "<access denied>" in place of the capabilities, so that is kept too
section rdma_acs; if [ -n "$rdma" ]; then
  if command -v lspci >/dev/null 2>&1; then
    timeout 20 lspci -D -vvv 2>/dev/null | while IFS= read -r line; do
      case $line in [0-9a-f][0-9a-f][0-9a-f][0-9a-f]:*|*ACSCtl:*|*'<access denied>'*) printf '%s\n' "$line" ;; esac
    done
  else echo "lspci absent"; fi
fi
section rdma_topology; [ -z "$rdma" ] || ! command -v nvidia-smi >/dev/null 2>&1 || gpu topo -m
# active_mtu per port (ibv_devinfo) and every interface's MTU
section rdma_devinfo; [ -z "$rdma" ] || ! command -v ibv_devinfo >/dev/null 2>&1 || timeout 20 ibv_devinfo 2>&1
section mtus; for dev in /sys/class/net/*; do
  { read -r mtu < "$dev/mtu"; } 2>/dev/null && printf '%s %s\n' "${dev##*/}" "$mtu"
done
# NCCL's settings where NCCL reads them (src/misc/param.cc): this login's environment first, then
# $NCCL_CONF_FILE or else ~/.nccl.conf, then /etc/nccl.conf
section nccl_environment; env | while IFS= read -r line; do
  case $line in NCCL_*=*) printf '%s\n' "$line" ;; esac
done
section nccl_user_conf; if [ -n "${NCCL_CONF_FILE:-}" ]; then printf '# %s\n' "$NCCL_CONF_FILE"; show "$NCCL_CONF_FILE" 2>/dev/null
else printf '# %s\n' "$HOME/.nccl.conf"; show "$HOME/.nccl.conf" 2>/dev/null; fi
section nccl_system_conf; show /etc/nccl.conf 2>/dev/null
true
