"""The node-side scripts of ``installer``, run by a local sh with a fake uv and a fake venv
python that record their arguments: uv when it runs, pip (saying so) when it does not."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from nodeprov.remote.actions import Run
from nodeprov.wheels import installer
from nodeprov.wheels.installer import Origin
from nodeprov.wheels.sources import Sources

# Records its arguments (and uv's cache folder) in $0.log; fails when $0.fail exists.
RECORDER = """#!/bin/sh
if [ "$1" = --version ] && [ -e "$0.broken" ]; then
  echo "uv: /lib64/ld-linux-x86-64.so.2: bad ELF interpreter" >&2; echo "second line" >&2; exit 126
fi
[ "$1" != --version ] || exit 0
[ "$1" != -c ] || { echo "$FAKE_WHEELS"; exit 0; }
printf '%s\\n' "${UV_CACHE_DIR:-no-cache-dir}" "$@" > "$0.log"
[ -z "${UV_CACHE_DIR:-}" ] || [ -d "$UV_CACHE_DIR" ] || mkdir "$UV_CACHE_DIR"
[ ! -e "$0.fail" ]
"""


@pytest.fixture
def fakes(tmp_path: Path) -> tuple[Path, Path]:
    """A fake uv and a venv whose bin/python is a fake."""
    uv, python = tmp_path / "uv", tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    for path in (uv, python):
        path.write_text(RECORDER)
        path.chmod(0o755)
    return uv, tmp_path / "venv"


def run(action: Run, uv: Path, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    argv = [str(uv) if arg == installer.UV else arg for arg in action.argv]
    return subprocess.run(argv, capture_output=True, text=True, check=False,
                          env={**os.environ, **(env or {})})


def logged(program: Path) -> list[str]:
    return Path(f"{program}.log").read_text().splitlines()


def test_uv_installs_with_the_given_sources_and_its_cache_beside_the_venv(
        fakes: tuple[Path, Path]) -> None:
    uv, venv = fakes
    done = run(installer.install(str(venv), ["torch==2.13.0"],
                                 Origin(("--find-links", "/opt/wheels"))), uv)
    assert done.returncode == 0, done.stderr
    assert logged(uv) == [f"{venv}.uv-cache", "pip", "install", "--no-config", "--no-progress",
                          "--python", f"{venv}/bin/python", "--index-strategy",
                          "unsafe-best-match", *SYSTEM_CERTS, "--find-links", "/opt/wheels",
                          "--", "torch==2.13.0"]
    assert not Path(f"{venv}.uv-cache").exists()  # removed after the install
    run(installer.install(str(venv), ["torch"], reinstall=True), uv)
    assert logged(uv)[9:] == [*SYSTEM_CERTS, "--reinstall", "--no-deps", "--", "torch"]


# what uv is told on this machine: trust the system store, where there is one (a site's CA)
SYSTEM_CERTS = ["--system-certs"] if any(Path(store).is_file() and Path(store).stat().st_size
                                         for store in installer.SYSTEM_STORES) else []


@pytest.mark.parametrize("fails", [False, True])
def test_uv_trusts_pips_ca_bundle_with_the_system_store_and_pips_roots_else_the_store(
        fakes: tuple[Path, Path], tmp_path: Path, fails: bool) -> None:
    # pip adds its cert to the system store and its certifi roots; uv's --cert replaces uv's
    # roots: so uv gets all three in one private file beside the venv, removed after
    uv, venv = fakes
    uv.write_text(RECORDER.replace("printf", '[ "$9" != --cert ] || { stat -c %a "${10}" > '
                                             '"$0.mode"; cp "${10}" "$0.bundle"; }\nprintf'))
    sources = ("--index-url", "https://mirror.site/simple")
    assert run(installer.install(str(venv), ["six"], Origin(sources)), uv).returncode == 0
    assert logged(uv)[9:] == [*SYSTEM_CERTS, *sources, "--", "six"]
    assert SYSTEM_CERTS or not Path("/etc/ssl/certs/ca-certificates.crt").exists()
    files = {name: tmp_path / f"{name}.pem" for name in ("site", "store", "certifi")}
    for name, path in files.items():
        path.write_text(f"-- {name} --\n")
    env = {"SSL_CERT_FILE": str(files["store"]), "FAKE_WHEELS": str(files["certifi"])}
    assert run(installer.install(str(venv), ["six"], Origin(sources)), uv, env).returncode == 0
    assert logged(uv)[9:] == ["--system-certs", *sources, "--", "six"]  # SSL_CERT_FILE's
    if fails:
        Path(f"{uv}.fail").touch()
    done = run(installer.install(str(venv), ["six"], Origin(sources, cert=str(files["site"]))),
               uv, env)
    bundle = f"{venv}{installer.UV_CERTS}"
    assert done.returncode == 0 and logged(uv)[9:] == ["--cert", bundle, *sources, "--", "six"]
    assert Path(f"{uv}.bundle").read_text() == "-- site --\n-- store --\n-- certifi --\n"
    assert Path(f"{uv}.mode").read_text() == "600\n" and not Path(bundle).exists()
    uv.unlink()  # pip reads its own configuration (cert included): nothing added for it
    assert run(installer.install(str(venv), ["six"], Origin(sources, cert=str(files["site"]))),
               uv).returncode == 0
    assert logged(venv / "bin" / "python")[-4:] == [*sources, "--", "six"]
    assert str(files["site"]) not in logged(venv / "bin" / "python")


def test_a_uv_failure_is_recorded_with_its_last_cause(fakes: tuple[Path, Path]) -> None:
    uv, venv = fakes
    uv.write_text(RECORDER.replace('[ ! -e "$0.fail" ]', """echo "error: Failed to fetch: \
https://10.0.0.1:8443/simple/six/" >&2
echo "  cause: client error (Connect)" >&2
echo "  cause: invalid peer certificate: UnknownIssuer" >&2; exit 2"""))
    done = run(installer.install(str(venv), ["six"],
                                 Origin(("--index-url", "https://10.0.0.1:8443/simple"))), uv)
    assert done.returncode == 0, done.stderr  # pip installed
    assert installer.parse_uv_line(uv_line(uv)).failed == (
        "could not install what pip then did: error: Failed to fetch: "
        "https://10.0.0.1:8443/simple/six/ (invalid peer certificate: UnknownIssuer)")


def test_a_failed_uv_install_is_tried_again_with_pip_and_uv_set_aside_if_pip_succeeds(
        fakes: tuple[Path, Path]) -> None:
    uv, venv = fakes
    Path(f"{uv}.fail").touch()
    done = run(installer.install(str(venv), ["six"], Origin(("--index-url", "http://m/simple"))),
               uv)
    assert done.returncode == 0 and not Path(f"{venv}.uv-cache").exists()
    assert "nodeprov: uv failed (uv exited 1): trying pip" in done.stderr
    assert logged(venv / "bin" / "python")[-4:] == ["--index-url", "http://m/simple", "--", "six"]
    assert (uv.parent / "failed").read_text() == (
        "could not install what pip then did: uv exited 1\n")
    assert installer.parse_uv_line(uv_line(uv)).failed == (
        "could not install what pip then did: uv exited 1")


def test_when_uv_and_pip_both_fail_the_install_fails_and_uv_is_not_blamed(
        fakes: tuple[Path, Path]) -> None:
    uv, venv = fakes
    Path(f"{uv}.fail").touch()
    Path(f"{venv}/bin/python.fail").touch()
    done = run(installer.install(str(venv), ["six"]), uv)
    assert done.returncode == 1 and not (uv.parent / "failed").exists()


def test_without_uv_pip_installs_and_nothing_is_recorded_against_uv(
        fakes: tuple[Path, Path]) -> None:
    uv, venv = fakes
    uv.unlink()  # uv could not be had: not there at all
    done = run(installer.install(str(venv), ["six"]), uv)
    assert done.returncode == 0 and done.stderr == ""
    assert logged(venv / "bin" / "python")[1:4] == ["-m", "pip", "install"]
    assert not (uv.parent / "failed").exists()
    uv.write_text(RECORDER)  # uv runs, but the plan said pip (uv_unusable): pip
    uv.chmod(0o755)
    assert run(installer.install(str(venv), ["six"], with_uv=False), uv).returncode == 0
    assert not Path(f"{uv}.log").exists()


@pytest.mark.parametrize("fails", [False, True])
def test_pip_downloads_into_a_private_folder_beside_the_venv_removed_after(
        fakes: tuple[Path, Path], fails: bool) -> None:
    # beside the venv: on its filesystem, not a small /tmp; and where wheels.written counts
    uv, venv = fakes
    uv.unlink()
    python = venv / "bin" / "python"
    python.write_text('#!/bin/sh\nstat -c "%n %a" "$TMPDIR" > "$0.tmp"\n'
                      f'exit {1 if fails else 0}\n')
    Path(f"{venv}.pip-tmp").mkdir()  # a killed run's leftovers: emptied first
    Path(f"{venv}.pip-tmp/stale.whl").write_text("x")
    done = run(installer.install(str(venv), ["six"]), uv)
    assert done.returncode == (1 if fails else 0)
    assert Path(f"{python}.tmp").read_text() == f"{venv}.pip-tmp 700\n"
    assert not Path(f"{venv}.pip-tmp").exists()


def test_this_machines_wheels_are_all_that_is_installed_where_they_arrived(
        fakes: tuple[Path, Path], tmp_path: Path) -> None:
    uv, venv = fakes
    wheels = tmp_path / "wheelhouse"
    step = installer.install(str(venv), ["torch"],
                             Origin(("--index-url", "http://m/simple"), wheels=str(wheels)))
    assert run(step, uv).returncode == 0  # no folder (its copy failed): the sources
    assert logged(uv)[-4:] == ["--index-url", "http://m/simple", "--", "torch"]
    wheels.mkdir()
    recorded = uv.with_name("env")
    uv.write_text(RECORDER.replace('[ ! -e "$0.fail" ]',
                                   f'echo "$PIP_CONFIG_FILE" > {recorded}; [ ! -e "$0.fail" ]'))
    assert run(step, uv).returncode == 0
    assert logged(uv)[-5:] == ["--no-index", "--find-links", str(wheels), "--", "torch"]
    assert recorded.read_text() == "/dev/null\n"  # nor the node's pip.conf
    assert str(step) == "install torch"


def test_uv_comes_from_this_machine_like_the_wheels(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    sources = Sources(index_url="file:///mirror/simple")
    copy = installer.uv_copy(installer.UvState(False, (2, 28)), "aarch64", "/usr/bin/python3",
                             sources)
    assert copy is not None and copy.optional == installer.WITHOUT_UV
    assert copy.local_path == str(tmp_path / "nodeprov" / "uv" / "uv-0.13.9-aarch64-glibc2.28")
    assert copy.fill is not None and copy.fill.sources == sources
    assert copy.fill.specs == (f"uv=={installer.UV_VERSION}",)
    assert copy.fill.platform[:3] == ("--no-deps", "--platform", "manylinux_2_28_aarch64")
    assert copy.then == ("/usr/bin/python3", "-c", installer._UNPACK, copy.staged,
                         installer.UV, copy.remote_path)  # root's checked copy: wheels.staged
    assert installer.uv_copy(installer.UvState(True), "x86_64", "/p", sources) is None


def uv_line(uv: Path) -> str:
    """UV_PROBE's line on this machine, for a uv at ``uv`` (its folder as uv's)."""
    probe = installer.UV_PROBE.replace(installer.UV_DIR, str(uv.parent))
    return subprocess.run(["sh", "-c", probe], capture_output=True, text=True,
                          check=True).stdout


def test_pip_installs_where_uv_does_not_run_and_says_so(fakes: tuple[Path, Path]) -> None:
    uv, venv = fakes
    assert uv_line(uv) == "uv\n"
    Path(f"{uv}.broken").touch()
    done = run(installer.install(str(venv), ["torch"], Origin(("--index-url", "http://m/simple")),
                                 reinstall=True), uv)
    why = "uv: /lib64/ld-linux-x86-64.so.2: bad ELF interpreter"
    assert done.returncode == 0 and f"installed with pip: uv failed: {why}\n" in done.stderr
    # kept on the node: the next plans (the torch task's, read right after the venv task's
    # change) say pip, and why
    assert (uv.parent / "failed").read_text() == why + "\n"
    state = installer.parse_uv_line(uv_line(uv))
    assert state == installer.UvState(False, None, why)
    assert installer.uv_unusable(state, "x86_64") == (
        f"uv failed: {why}; remove {installer.UV_FAILED} to try uv again")
    assert installer.uv_copy(state, "x86_64", "/usr/bin/python3", Sources()) is None
    python = venv / "bin" / "python"
    assert logged(python) == ["no-cache-dir", "-m", "pip", "install", "--no-input",
                              "--disable-pip-version-check", "--progress-bar", "off",
                              "--no-cache-dir", "--force-reinstall", "--no-deps", "--index-url",
                              "http://m/simple", "--", "torch"]


def test_pip_is_seeded_from_the_nodes_own_wheel_by_uv_else_by_ensurepip(
        fakes: tuple[Path, Path]) -> None:
    uv, venv = fakes
    create, seed = installer.create_venv("/usr/bin/python3", str(venv), with_uv=True)
    assert create.argv == ("/usr/bin/python3", "-m", "venv", "--without-pip", "--", str(venv))
    assert run(seed, uv, {"FAKE_WHEELS": "/usr/share/python-wheels"}).returncode == 0
    assert logged(uv)[1:] == ["pip", "install", "--no-config", "--no-progress", "--no-cache",
                              "--python", f"{venv}/bin/python", "--no-index", "--find-links",
                              "/usr/share/python-wheels", "pip"]
    assert run(seed, uv, {"FAKE_WHEELS": ""}).returncode == 0  # no wheel found: ensurepip
    assert logged(venv / "bin" / "python")[1:] == ["-m", "ensurepip", "--default-pip"]
    assert not (uv.parent / "failed").exists()
    Path(f"{uv}.broken").touch()  # uv does not run: ensurepip, and the reason kept
    (venv / "bin" / "python.log").unlink()
    done = run(seed, uv, {"FAKE_WHEELS": "/usr/share/python-wheels"})
    assert done.returncode == 0 and "installed with pip: uv failed: uv: " in done.stderr
    assert logged(venv / "bin" / "python")[1:] == ["-m", "ensurepip", "--default-pip"]
    assert (uv.parent / "failed").read_text().startswith("uv: /lib64/")


def test_the_pip_wheel_is_found_where_this_python_keeps_it() -> None:
    found = subprocess.run([sys.executable, "-c", installer._FIND_PIP_WHEEL],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert found and list(Path(found).glob("pip-*.whl"))


def test_uv_is_unpacked_from_its_wheel_atomically(tmp_path: Path) -> None:
    upload, staged = tmp_path / "upload", tmp_path / "upload.root"
    upload.mkdir()
    staged.mkdir()
    with zipfile.ZipFile(staged / "uv-0.13.9-py3-none-manylinux_2_17_x86_64.whl", "w") as wheel:
        wheel.writestr("uv/__init__.py", "")
        wheel.writestr("uv-0.13.9.data/scripts/uvx", "not this one")
        wheel.writestr("uv-0.13.9.data/scripts/uv", "#!/bin/sh\necho uv 0.13.9\n")
    dest = tmp_path / "uv-0.13.9" / "uv"
    subprocess.run([sys.executable, "-c", installer._UNPACK, str(staged), str(dest), str(upload)],
                   check=True)
    assert subprocess.run([str(dest)], capture_output=True, text=True).stdout == "uv 0.13.9\n"
    assert not upload.exists() and not staged.exists() and not Path(f"{dest}.tmp").exists()


def test_uv_line_and_when_uv_cannot_be_had() -> None:
    assert installer.parse_uv_line("uv") == installer.UvState(True)
    assert installer.parse_uv_line("no-uv glibc 2.17") == installer.UvState(False, (2, 17))
    assert installer.parse_uv_line("no-uv ") == installer.UvState(False, None)
    assert installer.uv_unusable(installer.UvState(False, (2, 17)), "aarch64") is None
    assert installer.uv_unusable(installer.UvState(False, None), "x86_64") == (
        "the node has no glibc ('getconf GNU_LIBC_VERSION' printed nothing)")
    assert installer.uv_unusable(installer.UvState(False, (2, 36)), "riscv64") == (
        "no uv build for riscv64")
    probe = subprocess.run(["sh", "-c", installer.UV_PROBE], capture_output=True, text=True,
                           check=True).stdout
    assert installer.parse_uv_line(probe).present == os.access(installer.UV, os.X_OK)


@pytest.mark.parametrize("script", [installer.MAKE_UPLOAD_DIR, installer.MAKE_ROOT_DIR])
def test_the_upload_folder_starts_empty(tmp_path: Path, script: str) -> None:
    # a failed run's wheels left in the folder must not join the next run's set
    folder = tmp_path / "wheels"
    folder.mkdir()
    (folder / "six-1.0.0-py3-none-any.whl").write_text("stale")
    login = "nobody" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
    subprocess.run(["sh", "-c", script, "mkdir", str(folder)], check=True,
                   env={**os.environ, "SUDO_USER": login})  # as if run under sudo
    assert folder.is_dir() and list(folder.iterdir()) == []
    assert folder.stat().st_mode & 0o777 == 0o700
    # the upload folder is the login user's (SFTP writes it), root's folder root's alone
    owner = pwd.getpwnam(login).pw_uid if script == installer.MAKE_UPLOAD_DIR else os.geteuid()
    assert folder.stat().st_uid == owner


def test_the_install_script_uses_the_stores_and_the_pip_folder_named_here() -> None:
    # nodeside/install.sh writes them as words; SYSTEM_STORES and PIP_TMP say them to Python
    assert f'for store in "${{SSL_CERT_FILE-}}" {" ".join(installer.SYSTEM_STORES)}; do' in (
        installer._INSTALL)
    assert f"\ntmp=$venv{installer.PIP_TMP}\n" in installer._INSTALL
