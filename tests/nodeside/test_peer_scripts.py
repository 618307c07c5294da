"""The peer scripts run for real on this machine: SERVE serves the wheels only, under the run's
token, as nobody, each only as the file this machine hashed (a hard link, a symbolic link or
other bytes are refused, named), and stops by itself; FETCH keeps only a file of the expected
sha256 and never writes more than its expected size, and gives up on a source that trickles."""

from __future__ import annotations

import hashlib
import os
import pwd
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from nodeprov.nodeside.peer_scripts import FETCH, SERVE

TOKEN = "k3Q9-token_of-the-run"
SIX = "six-1.17.0-py2.py3-none-any.whl"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str, int]]:
    """A folder of two wheels and what must not be served, SERVE started on it: (folder, base
    URL with the token, pid)."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    (folder / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"six")
    (folder / "torch-2.13.0+cpu-cp311-none-any.whl").write_bytes(b"t" * 3_000_000)
    (folder / "fetch.log").write_text("pip download --index-url https://ci:s3cret@m/simple\n")
    (folder / ".nodeprov-requirements.txt").write_text("six==1.17.0 --hash=sha256:...\n")
    started = subprocess.run(["python3", "-c", SERVE, str(folder), "127.0.0.1", "60", "5",
                              "nodeprov-serve-test", TOKEN,
                              *hashed("six-1.17.0-py2.py3-none-any.whl", b"six"),
                              *hashed("torch-2.13.0+cpu-cp311-none-any.whl", b"t" * 3_000_000)],
                             capture_output=True, text=True, timeout=30, check=True)
    port, pid = map(int, started.stdout.split())
    yield folder, f"http://127.0.0.1:{port}/{TOKEN}/", pid
    with suppress(ProcessLookupError):
        subprocess.run(["kill", str(pid)], check=False)


def hashed(name: str, data: bytes) -> tuple[str, str]:
    """SERVE's words for a file this machine hashed: its name and sha256."""
    return name, hashlib.sha256(data).hexdigest()


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def test_only_the_wheels_are_served_and_only_under_the_runs_token(
        served: tuple[Path, str, int]) -> None:
    folder, base, _ = served
    assert status(base + "six-1.17.0-py2.py3-none-any.whl") == 200
    assert status(base + "torch-2.13.0%2Bcpu-cp311-none-any.whl") == 200
    root = base.removesuffix(f"{TOKEN}/")
    assert status(root + "six-1.17.0-py2.py3-none-any.whl") == 404  # no token: nothing
    assert status(root + "wrong-token/six-1.17.0-py2.py3-none-any.whl") == 404
    assert status(base + "fetch.log") == 404  # pip's command line, credentials and all
    assert status(base + ".nodeprov-requirements.txt") == 404
    assert status(base + "..%2Fwheels%2Fsix-1.17.0-py2.py3-none-any.whl") == 404
    assert status(base) == 404


def test_it_serves_as_nobody_and_stops_by_itself_when_idle(tmp_path: Path) -> None:
    (tmp_path / "a-1-py3-none-any.whl").write_bytes(b"a")
    started = subprocess.run(["python3", "-c", SERVE, str(tmp_path), "127.0.0.1", "60", "0.5",
                              "mark", TOKEN, *hashed("a-1-py3-none-any.whl", b"a")],
                             capture_output=True, text=True, timeout=30, check=True)
    port, pid = map(int, started.stdout.split())
    # it said it serves only once it had dropped root: read at once, no wait
    uid = next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
               if line.startswith("Uid:"))
    assert int(uid) == pwd.getpwnam("nobody").pw_uid
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists()
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def fetch(base: str, dest: Path, *triples: str, seconds: str = "60"
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["python3", "-c", FETCH, base, str(dest), seconds, *triples],
                          capture_output=True, text=True, timeout=60)


def test_a_fetch_keeps_the_files_of_the_expected_sha256(served: tuple[Path, str, int],
                                                        tmp_path: Path) -> None:
    _, base, _ = served
    dest = tmp_path / "node2"
    dest.mkdir()
    good = fetch(base, dest, "six-1.17.0-py2.py3-none-any.whl",
                 hashlib.sha256(b"six").hexdigest(), "3")
    assert good.returncode == 0, good.stderr
    assert (dest / "six-1.17.0-py2.py3-none-any.whl").read_bytes() == b"six"
    wrong = fetch(base, dest, "torch-2.13.0+cpu-cp311-none-any.whl", "0" * 64, "3000000")
    assert wrong.returncode == 1 and "torch-2.13.0+cpu-cp311-none-any.whl: sha256 " in wrong.stderr
    assert sorted(path.name for path in dest.iterdir()) == ["six-1.17.0-py2.py3-none-any.whl"]


def test_a_fetch_never_writes_through_a_link_planted_in_its_folder(
        served: tuple[Path, str, int], tmp_path: Path) -> None:
    """The upload folder is the login user's, the fetch root's: a link named as its partial
    file must not make root write the wheel over the link's target."""
    _, base, _ = served
    dest, target = tmp_path / "node2", tmp_path / "roots-file"
    dest.mkdir()
    target.write_text("root's own\n")
    (dest / ".six-1.17.0-py2.py3-none-any.whl.part").symlink_to(target)
    planted = fetch(base, dest, "six-1.17.0-py2.py3-none-any.whl",
                    hashlib.sha256(b"six").hexdigest(), "3")
    assert planted.returncode == 1 and "six-1.17.0-py2.py3-none-any.whl: " in planted.stderr
    assert target.read_text() == "root's own\n"
    assert list(dest.iterdir()) == []  # the link removed, nothing kept


def test_a_source_sending_more_than_the_size_known_is_cut_off(
        served: tuple[Path, str, int], tmp_path: Path) -> None:
    """The torch stand-in is 3 MB; told to expect 1,000 bytes, the fetch reads 1,001 at most
    and writes 1,000 at most, before any hash check."""
    _, base, _ = served
    dest = tmp_path / "node2"
    dest.mkdir()
    written: list[int] = []
    stop = threading.Event()

    def watch() -> None:  # the partial file's sizes seen while the fetch runs
        while not stop.is_set():
            written.extend(path.stat().st_size for path in dest.glob(".*.part"))
            time.sleep(0.001)

    watcher = threading.Thread(target=watch)
    watcher.start()
    big = fetch(base, dest, "torch-2.13.0+cpu-cp311-none-any.whl",
                hashlib.sha256(b"t" * 3_000_000).hexdigest(), "1000")
    stop.set()
    watcher.join()
    assert big.returncode == 1
    assert "torch-2.13.0+cpu-cp311-none-any.whl: the source sent more than 1000 bytes" in big.stderr
    assert max(written, default=0) <= 1000 and list(dest.iterdir()) == []


def test_a_source_that_never_stops_is_cut_off_at_the_size_not_at_the_deadline(
        tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()

        def flood() -> None:  # 2,000 bytes at once, then it holds the line open
            connection, _ = listener.accept()
            with connection, suppress(OSError):
                connection.sendall(b"HTTP/1.0 200 OK\r\n\r\n" + b"x" * 2000)
                time.sleep(20)

        server = threading.Thread(target=flood, daemon=True)
        server.start()
        started = time.monotonic()
        cut = fetch(f"http://127.0.0.1:{listener.getsockname()[1]}/", tmp_path, "a.whl",
                    "0" * 64, "1000", seconds="15")
    assert cut.returncode == 1 and "a.whl: the source sent more than 1000 bytes" in cut.stderr
    assert time.monotonic() - started < 5 and list(tmp_path.iterdir()) == []


def test_a_source_that_trickles_is_given_up(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()

        def trickle() -> None:
            connection, _ = listener.accept()
            with connection, suppress(OSError):  # the fetch hangs up first
                connection.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 100\r\n\r\n")
                for _ in range(40):  # one byte each 0.1 s: never stalls 60 s, never ends
                    time.sleep(0.1)
                    connection.sendall(b"x")

        server = threading.Thread(target=trickle)
        server.start()
        port = listener.getsockname()[1]
        started = time.monotonic()
        slow = fetch(f"http://127.0.0.1:{port}/", tmp_path, "a.whl", "0" * 64, "100",
                     seconds="1")
        server.join()
    assert slow.returncode == 1 and "a.whl: too slow, gave up after 1 seconds" in slow.stderr
    assert time.monotonic() - started < 4 and list(tmp_path.iterdir()) == []


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file only root reads, as /etc/shadow is."""
    path = tmp_path / "shadow"
    path.write_text("root:$6$secret:19000:0:99999:7:::\n")
    path.chmod(0o600)
    return path


def serve(folder: Path, *wanted: tuple[str, bytes]) -> subprocess.CompletedProcess[str]:
    """SERVE on loopback for the files ``wanted`` (name, the contents this machine hashed)."""
    words = [word for name, data in wanted for word in hashed(name, data)]
    return subprocess.run(["python3", "-c", SERVE, str(folder), "127.0.0.1", "60", "5", "mark",
                           TOKEN, *words], capture_output=True, text=True, timeout=60)


def test_a_hard_link_to_another_file_of_the_node_is_refused_before_anything_listens(
        tmp_path: Path, secret: Path) -> None:
    folder = tmp_path / "wheelhouse"
    folder.mkdir()
    os.link(secret, folder / SIX)
    refused = serve(folder, (SIX, b"six"))
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.strip() == (
        f"{SIX}: not served: a hard link (2 names): it may be another file of this node, which "
        "its peers must not be sent")
    # the same bytes as this machine's, through a second name, are refused all the same
    (folder / SIX).unlink()
    (folder / "original").write_bytes(b"six")
    os.link(folder / "original", folder / SIX)
    assert serve(folder, (SIX, b"six")).returncode == 1


@pytest.mark.parametrize(("make", "why"), [
    (lambda path, secret: path.symlink_to(secret), "a symbolic link"),
    (lambda path, secret: os.mkfifo(path), "not a regular file"),
    (lambda path, secret: path.write_bytes(secret.read_bytes()), "its sha256 "),
    (lambda path, secret: None, "No such file or directory"),
])
def test_anything_but_this_machines_file_is_refused_and_named(
        tmp_path: Path, secret: Path, make: Callable[[Path, Path], None], why: str) -> None:
    folder = tmp_path / "wheelhouse"
    folder.mkdir()
    make(folder / SIX, secret)
    refused = serve(folder, (SIX, b"six"))
    assert refused.returncode == 1 and refused.stderr.startswith(f"{SIX}: not served: {why}")


def test_this_machines_files_are_served_from_the_descriptor_that_was_hashed(
        tmp_path: Path) -> None:
    folder = tmp_path / "wheelhouse"
    folder.mkdir()
    (folder / SIX).write_bytes(b"six")
    (folder / ".fetch.log").write_text("not asked for: not served\n")
    started = serve(folder, (SIX, b"six"))
    assert started.returncode == 0, started.stderr
    port, pid = map(int, started.stdout.split())
    try:
        (folder / SIX).unlink()  # its server holds the file it hashed open
        (folder / SIX).write_bytes(b"new")
        url = f"http://127.0.0.1:{port}/{TOKEN}/"
        with urllib.request.urlopen(url + SIX, timeout=10) as response:
            assert response.read() == b"six"
        assert status(url + ".fetch.log") == 404
    finally:
        os.kill(pid, 15)
