# Sourced first by the scripts that need root (the local test cluster uses namespaces):
#   source "$(dirname "$0")/become-root.sh"
# As root it does nothing (a fresh root machine has no sudo); otherwise it runs the calling
# script again through sudo, with the same arguments.
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    exec sudo -- bash "$0" "$@"
  fi
  echo "$0: needs root (namespaces for the local test cluster): run it as root, or install sudo" >&2
  exit 1
fi
