# nodeprov's ufw helper (firewall task): sh ufw-helper.sh COMMAND [ARGS]
#   ufw ARGS..      run ufw; when it fails on ip6tables, say how IPv6 is set
#   install ARGV..  run the package manager; when it fails, say what to check
#   need-ip6tables  fail, saying how IPv6 is set, unless ip6tables works
#   start           load ufw's saved rules as the boot service does (ufw-init start)
#   arm SECONDS     start the lockout guard: 'ufw --force disable' after SECONDS
#   disarm SSH      stop the guard; fails, naming the SSH rule, if it already disabled ufw
# Every command runs on the node as `sh ufw-helper.sh ...`: a failure reads as that command and
# ends with a line saying what to check.
dir=$(dirname -- "$0"); pidfile=$dir/ufw-guard.pid; reverted=$dir/ufw-reverted
stop_guard() {
  pid=$(cat -- "$pidfile" 2>/dev/null) || return 1
  rm -f -- "$pidfile"
  # the pid may belong to another process by now: kill only our own revert
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q 'ufw-helper.sh revert' || return 1
  kill -TERM "-$pid"
}
ipv6_hint() {
  off=$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null)
  echo "ufw's IPv6 rules failed: disable_ipv6=$off, $(grep -s '^IPV6=' /etc/default/ufw) in" \
    "/etc/default/ufw; with IPv6 off set IPV6=no (the ipv6 task does)" >&2
}
case $1 in
ufw) output=$("$@" 2>&1); status=$?; printf '%s\n' "$output" >&2
  [ "$status" = 0 ] && exit 0
  case $output in *ip6tables*) ipv6_hint ;; esac; exit "$status" ;;
install) shift; "$@" && exit 0
  echo "cannot install ufw: is the node offline, or its package index stale? Install ufw" \
    "on it by hand, then re-run" >&2; exit 1 ;;
need-ip6tables)
  # ufw-init goes on without IPv6 when ip6tables fails, where ufw's command line refuses
  output=$(ip6tables -w 5 -n -L INPUT 2>&1) && exit 0
  printf '%s\n' "$output" >&2; ipv6_hint; exit 1 ;;
start)
  for init in /lib/ufw/ufw-init /usr/lib/ufw/ufw-init; do
    [ -x "$init" ] && exec "$init" start
  done
  exec ufw --force enable ;;  # ufw-init elsewhere: ufw knows where
arm) stop_guard; rm -f -- "$reverted"
  setsid sh -- "$0" revert "$2" </dev/null >/dev/null 2>&1 &
  # the guard is up within a few ms: poll finely, a first apply waits on this on every node
  i=0; while [ ! -s "$pidfile" ] && [ "$i" -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
  [ -s "$pidfile" ] || { echo "the lockout guard did not start" >&2; exit 1; } ;;
revert)
  # the runner's flock lock (fd 3) must not live on here: it would block the next round trip
  exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
  trap '' HUP; echo $$ > "$pidfile"; sleep "$2"
  # the mark first: a disarm racing with the revert must see it; then finish whatever comes
  date > "$reverted"; trap '' TERM; rm -f -- "$pidfile"; ufw --force disable ;;
disarm) stop_guard
  [ -e "$reverted" ] || exit 0
  echo "the lockout guard disabled ufw at $(cat -- "$reverted") before a new SSH connection" \
    "got through: does SSH on $2 admit nodeprov? (on a slow node raise revert_seconds)" >&2
  exit 1 ;;
esac
