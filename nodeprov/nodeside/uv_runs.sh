# uv_runs UV: true when uv runs; false, silently, where it is not there; else its first line
# of error goes to UV's folder/failed (the next plans read it and say "with pip (uv failed:
# ...)") and to stderr. uv_failed UV WHY writes that line. nodeprov.wheels.installer puts
# these functions before install.sh and seed.sh.
uv_runs() {
  [ -x "$1" ] || return 1
  why=$("$1" --version 2>&1 >/dev/null) && return 0
  status=$? why=${why%%
*}
  why=${why:-"$1 --version exited $status"}
  uv_failed "$1" "$why"
  echo "nodeprov: installed with pip: uv failed: $why" >&2
  return 1
}
uv_failed() {
  { printf '%s\n' "$2" > "$1.failed" && mv -f -- "$1.failed" "${1%/*}/failed"; } || :
}
