"""The node side of ``nodeprov run --sync``: list a folder's files, receive the changed ones.

nodeprov runs this file's text with the node's python3 (standard library only, any python3 from
3.8), as the job's user, values as arguments::

    python3 -I -c SYNCNODE manifest /home/me/train
    {"train.py": [1834, "9f86d0..."], "conf/base.yaml": [210, "2c26b4..."]}
    python3 -I -c SYNCNODE receive /home/me/train TOKEN  < frames
    {"received": 2}

Nothing is written through a symbolic link and no folder is trusted that someone else could
write: the folder, its parents and everything in it are checked (``refusal``), and every path is
opened from the folder's own descriptor with O_NOFOLLOW. ``manifest`` prints each regular file's
size and sha256 (``{}`` when the folder is missing), but not under ``.git`` or ``__pycache__``.
``receive`` says TOKEN on stderr (sudo is done), then reads frames from stdin: per file a JSON
line ``[path, size, mode]`` and its bytes; an empty line ends them. Each file goes to a new
temporary file beside its target; once all arrived, each is renamed into place, its mode
without setuid, setgid or sticky bits. A path that is absolute, climbs out or names ``.`` is
refused, and nothing is renamed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import secrets
import stat
import sys
from typing import NoReturn

SKIPPED = (".git", "__pycache__")  # not listed (nor sent); __pycache__ is still checked
NOT_WALKED = (".git",)
CHUNK = 1 << 20
DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
REFUSED = 3


def refuse(why: str) -> NoReturn:
    """End here: the folder is not safe to write as this user, or a frame is wrong (exit
    REFUSED; what is half received is removed on the way out)."""
    print(why, file=sys.stderr)
    raise SystemExit(REFUSED)


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def trusted() -> set[int]:
    """Who may own what the job reads: root, the job's user, the login user sudo came from."""
    return {0, os.geteuid(), int(os.environ.get("SUDO_UID", os.geteuid()))}


def refusal(path: str, found: os.stat_result, *, parent: bool) -> str | None:
    """Why the job's user must not trust ``path``: a link, someone else's, writable by others
    (group too when the job is root); a parent may be writable by others if sticky (/tmp)."""
    mode = found.st_mode
    if found.st_uid not in trusted():
        return (f"{path} belongs to {_owner(found.st_uid)}, not to the job's user or root: "
                "someone else could have put a file there that the job would run")
    if stat.S_ISLNK(mode):
        return (f"{path} is a symbolic link on the node; nodeprov writes through none "
                "(give the real path, or remove the link)")
    if stat.S_ISDIR(mode):
        others = mode & stat.S_IWOTH or os.geteuid() == 0 and mode & stat.S_IWGRP
        if others and not (parent and mode & stat.S_ISVTX):
            who = "every user" if mode & stat.S_IWOTH else "its group"
            return (f"{path} is writable by {who} (mode {stat.S_IMODE(mode):o}): someone "
                    f"else could put a module there that the job would import (chmod go-w)")
    return None


def open_folder(root: str, create: bool) -> int | None:
    """A descriptor of ``root`` reached from / without following links, each folder on the way
    checked; missing ones are made when ``create`` (else None)."""
    if not root.startswith("/"):
        refuse(f"{root} is not an absolute path")
    parts = [part for part in root.split("/") if part]
    handle = os.open("/", DIRECTORY)
    path = ""
    try:
        for index, part in enumerate(parts):
            path += "/" + part
            try:
                found = os.stat(part, dir_fd=handle, follow_symlinks=False)
            except FileNotFoundError:
                if not create:
                    return None
                _make(part, handle, path)
                found = os.stat(part, dir_fd=handle, follow_symlinks=False)
            reason = refusal(path, found, parent=index < len(parts) - 1)
            if reason or not stat.S_ISDIR(found.st_mode):
                refuse(reason or f"{path} is not a folder")
            inner = os.open(part, DIRECTORY, dir_fd=handle)
            os.close(handle)
            handle = inner
        return handle
    except BaseException:
        os.close(handle)
        raise


def _make(name: str, parent: int, path: str) -> None:
    """mkdir, an error naming the whole path and the user who could not make it."""
    try:
        os.mkdir(name, 0o755, dir_fd=parent)
    except OSError as error:
        raise OSError(error.errno, f"{error.strerror} (as {_owner(os.geteuid())})",
                      path) from None


def manifest(root: str) -> dict[str, list[object]]:
    """Size and sha256 of each regular file under ``root``; everything under it checked."""
    handle = open_folder(root, create=False)
    if handle is None:
        return {}
    found: dict[str, list[object]] = {}
    try:
        for folder, subfolders, files, folder_fd in os.fwalk(".", dir_fd=handle):
            subfolders[:] = [name for name in subfolders if name not in NOT_WALKED]
            listed = not set(folder.split("/")) & set(SKIPPED)
            for name in subfolders + files:
                entry = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
                shown = os.path.normpath(os.path.join(root, folder, name))
                reason = refusal(shown, entry, parent=False)
                if reason and not (stat.S_ISLNK(entry.st_mode) and entry.st_uid in trusted()):
                    refuse(reason)  # the user's own links stay, never followed
                if listed and name in files and stat.S_ISREG(entry.st_mode):
                    found[os.path.normpath(os.path.join(folder, name))] = [
                        entry.st_size, _sha256(name, folder_fd)]
    finally:
        os.close(handle)
    return found


def _sha256(name: str, folder_fd: int) -> str:
    digest = hashlib.sha256()
    handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder_fd)
    with os.fdopen(handle, "rb") as data:
        for block in iter(lambda: data.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


class Receiver:
    """Temporary files first, renamed into place together (``commit``) or removed (``abort``)."""

    def __init__(self, root: int, shown: str) -> None:
        self.root, self.shown = root, shown
        self.folders: dict[str, int] = {"": root}
        self.pending: list[tuple[int, str, str]] = []

    def folder(self, relative: str) -> int:
        """The descriptor of a folder under the root, made if missing, each step checked."""
        if relative not in self.folders:
            parent, _, name = relative.rpartition("/")
            above = self.folder(parent)
            try:
                found = os.stat(name, dir_fd=above, follow_symlinks=False)
            except FileNotFoundError:
                _make(name, above, f"{self.shown}/{relative}")
                found = os.stat(name, dir_fd=above, follow_symlinks=False)
            shown = f"{self.shown}/{relative}"
            reason = refusal(shown, found, parent=False)
            if reason or not stat.S_ISDIR(found.st_mode):
                refuse(reason or f"{shown} is not a folder on the node")
            self.folders[relative] = os.open(name, DIRECTORY, dir_fd=above)
        return self.folders[relative]

    def receive(self, path: str, size: int, mode: int, source: object) -> None:
        parts = path.split("/")
        if path.startswith("/") or "\0" in path or any(p in ("", ".", "..") for p in parts):
            refuse(f"refused {path!r}: not a plain relative path")
        folder = self.folder("/".join(parts[:-1]))
        temporary = f".nodeprov-{secrets.token_hex(8)}"
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600,
                         dir_fd=folder)
        self.pending.append((folder, temporary, parts[-1]))
        with os.fdopen(handle, "wb") as written:
            left = size
            while left:
                block = source.read(min(left, CHUNK))  # type: ignore[attr-defined]
                if not block:
                    refuse(f"the stream ended inside {path}")
                written.write(block)
                left -= len(block)
            os.fchmod(written.fileno(), mode & 0o777)  # never setuid, setgid or sticky

    def commit(self) -> int:
        for folder, temporary, name in self.pending:
            os.rename(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
        return len(self.pending)

    def abort(self) -> None:
        for folder, temporary, _ in self.pending:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder)

    def close(self) -> None:
        for handle in self.folders.values():
            os.close(handle)


def receive(root: str, source: object) -> int:
    handle = open_folder(root, create=True)
    assert handle is not None
    receiver = Receiver(handle, root.rstrip("/"))
    try:
        while True:
            line = source.readline()  # type: ignore[attr-defined]
            if line in (b"\n", b""):
                if not line:
                    refuse("the stream ended before its last file")
                return receiver.commit()
            path, size, mode = json.loads(line)
            receiver.receive(str(path), int(size), int(mode), source)
    except BaseException:
        receiver.abort()
        raise
    finally:
        receiver.close()


def main(argv: list[str]) -> int:
    try:
        if len(argv) == 2 and argv[0] == "manifest":
            print(json.dumps(manifest(argv[1])))
            return 0
        if len(argv) == 3 and argv[0] == "receive":
            sys.stderr.write(argv[2] + "\n")
            sys.stderr.flush()
            print(json.dumps({"received": receive(argv[1], sys.stdin.buffer)}))
            return 0
    except OSError as error:
        print(f"{error.filename or argv[1]}: {error.strerror}", file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
