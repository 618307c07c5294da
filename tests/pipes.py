"""A file without end, as /dev/zero is, that a bounded reader can be tested on: a named pipe a
thread fills with far more than any limit (the reader stops at its limit; the writer then
meets a closed pipe and ends).

    feeding(tmp_path / "inventory.yaml", b"# padding\\n", 5 << 20)
"""

from __future__ import annotations

import os
import threading
from pathlib import Path


def feeding(path: Path, line: bytes, size: int) -> None:
    """Make ``path`` a named pipe that gives ``size`` bytes of ``line`` to its reader."""
    os.mkfifo(path)

    def fill() -> None:
        try:
            with path.open("wb") as pipe:
                pipe.write(line * (size // len(line)))
        except BrokenPipeError:
            pass  # the reader stopped at its limit

    threading.Thread(target=fill, daemon=True).start()
