"""What a node prints, read with a limit: a node could print without end (a 10 GB /etc/hosts, a
probe that never stops), and Fabric keeps every byte in memory. A round trip whose output is
hidden (every one but a job's live output) is cut off past ``OUTPUT_LIMIT`` characters per
stream: its channel is closed, the command ends, and the session says so in one line.

    Config(overrides={"runners": {"remote": BoundedRemote}})   # hostkeys.SshFiles.config
    result = connection.run(command, hide=True)
    result.over_limit   # True: the output was cut off
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from fabric.runners import Remote

from nodeprov.remote.options import OUTPUT_LIMIT


class BoundedRemote(Remote):  # type: ignore[misc]
    """Fabric's remote runner, keeping at most OUTPUT_LIMIT characters of a hidden stream, and
    reading in large chunks: invoke joins everything read so far after each chunk (for its
    watchers: the sudo prompt's), which its 1,000-byte chunks made quadratic. Its watchers see
    stderr only: what a command prints on stdout can never make one answer (remote/sudo.py)."""

    over_limit = False
    read_chunk_size = 65536

    def respond(self, buffer_: list[str]) -> None:
        # the join costs as much without a watcher to show it to, or once every watcher (sudo's
        # Answer) saw its command start: a command's own megabytes of stderr stay linear
        if buffer_ is self.stderr and not all(getattr(watcher, "started", True)
                                              for watcher in self.watchers):
            super().respond(buffer_)

    def read_proc_output(self, reader: Callable[[int], bytes]) -> Iterator[str]:
        limit = OUTPUT_LIMIT if self.opts.get("hide") else None  # echoed: the job's own output
        kept = 0
        for data in super().read_proc_output(reader):
            kept += len(data)
            if limit is not None and kept > limit:
                self.over_limit = True
                self.channel.close()  # the command ends (SIGPIPE); the connection stays
                return
            yield data

    def generate_result(self, **kwargs: Any) -> Any:
        result = super().generate_result(**kwargs)
        result.over_limit = self.over_limit
        return result
