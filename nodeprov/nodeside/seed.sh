# pip into a venv made --without-pip, from the wheel ensurepip would use, by uv where it runs
# (~0.3 s where ensurepip takes ~3 s); uv_runs.sh comes first (nodeprov.wheels.installer).
# argv: uv, the venv, a Python script printing the folder of pip's wheel ("": none).
uv=$1 venv=$2
wheels=$("$venv/bin/python" -c "$3") || wheels=
if [ -n "$wheels" ] && uv_runs "$uv"; then
  exec "$uv" pip install --no-config --no-progress --no-cache --python "$venv/bin/python" \
    --no-index --find-links "$wheels" pip
fi
exec "$venv/bin/python" -m ensurepip --default-pip
