# An install into a venv, uv first, pip where uv cannot (nodeprov.wheels.installer.install;
# uv_runs.sh comes first). argv: uv ("": pip only), the venv, "reinstall" or "install",
# uv's cache, the folder of this machine's wheels ("": none), the CA bundle pip verifies with
# ("": the system's), uv's bundle of certificates (written there where pip has one; removed
# after), then sources, "--", specs.
# system_store prints the store OpenSSL (so pip) reads: SSL_CERT_FILE, else the first there
# (installer.SYSTEM_STORES, in its order). certs_bundle writes $bundle, privately: pip's
# cert, the system store, pip's certifi roots.
system_store() {
  for store in "${SSL_CERT_FILE-}" /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/ca-bundle.pem /etc/ssl/cert.pem; do
    [ -n "$store" ] && [ -s "$store" ] && printf '%s\n' "$store" && return 0
  done
  return 0
}
certs_bundle() {
  store=$(system_store)
  roots=$("$venv/bin/python" -c 'from pip._vendor import certifi; print(certifi.where())' \
    2>/dev/null) || roots=
  set -- "$cert"
  [ -z "$store" ] || set -- "$@" "$store"
  [ -z "$roots" ] || [ ! -s "$roots" ] || set -- "$@" "$roots"
  rm -f -- "$bundle" && (umask 077 && cat -- "$@" > "$bundle")
}
uv=$1 venv=$2 mode=$3 cache=$4 wheels=$5 cert=$6 bundle=$7
shift 7
if [ -n "$wheels" ] && [ -d "$wheels" ]; then
  while [ "$#" -gt 0 ] && [ "$1" != -- ]; do shift; done
  set -- --no-index --find-links "$wheels" "$@"
  PIP_CONFIG_FILE=/dev/null; export PIP_CONFIG_FILE
fi
uv_install() {
  [ "$mode" = install ] || set -- --reinstall --no-deps "$@"
  if [ -n "$cert" ]; then
    certs_bundle || return
    set -- --cert "$bundle" "$@"
  elif [ -n "$(system_store)" ]; then
    set -- --system-certs "$@"
  fi
  UV_CACHE_DIR=$cache "$uv" pip install --no-config --no-progress --python "$venv/bin/python" \
    --index-strategy unsafe-best-match "$@"
}
uv_error=
if uv_runs "$uv"; then
  status=0
  out=$(uv_install "$@" 2>&1) || status=$?
  rm -rf -- "$cache" "$bundle"
  printf '%s\n' "$out" >&2
  [ "$status" -ne 0 ] || exit 0
  uv_error=$(printf '%s\n' "$out" | sed -n '/^error:/{p;q;}')
  uv_cause=$(printf '%s\n' "$out" | sed -n 's/^ *\(cause\|Caused by\): //p' | tail -n 1)
  uv_error=${uv_error:-"uv exited $status"}${uv_cause:+" ($uv_cause)"}
  echo "nodeprov: uv failed ($uv_error): trying pip" >&2
fi
[ "$mode" = install ] || set -- --force-reinstall --no-deps "$@"
tmp=$venv.pip-tmp
rm -rf -- "$tmp" && mkdir -m 0700 -- "$tmp" || exit
status=0
TMPDIR=$tmp "$venv/bin/python" -m pip install --no-input --disable-pip-version-check \
  --progress-bar off --no-cache-dir "$@" || status=$?
rm -rf -- "$tmp"
[ "$status" -eq 0 ] || exit "$status"
[ -z "$uv_error" ] || uv_failed "$uv" "could not install what pip then did: $uv_error"
