"""A file-like object that hands each whole line written to it to a callback: what a command's
output is echoed to as it arrives (``remote.channel`` and invoke's runner call ``write`` and
``flush`` only), for whoever reads it line by line.

    >>> lines = LineWriter(print)
    >>> _ = lines.write("a\\nb")
    a
    >>> _ = lines.write("c\\n")
    bc
    >>> _ = lines.write("end")
    >>> lines.close()       # a last line without its newline
    end
"""

from __future__ import annotations

from collections.abc import Callable


class LineWriter:
    def __init__(self, line: Callable[[str], object]) -> None:
        self._line = line
        self._partial = ""

    def write(self, text: str) -> int:
        *lines, self._partial = (self._partial + text).split("\n")
        for line in lines:
            self._line(line)
        return len(text)

    def flush(self) -> None:
        """A line is handed on only once it is whole."""

    def close(self) -> None:
        if self._partial:
            self._line(self._partial)
            self._partial = ""
