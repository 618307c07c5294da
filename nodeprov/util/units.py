"""Amounts as people read them: a message size in the sweep's table, chart and verdicts.

    >>> human_bytes(64 * 1024 * 1024)
    '64 MiB'
"""

from __future__ import annotations


def human_bytes(size: int) -> str:
    """The exact size in the largest binary unit that divides it.

    >>> human_bytes(8), human_bytes(2048), human_bytes(64 * 1024 * 1024), human_bytes(1000)
    ('8 B', '2 KiB', '64 MiB', '1000 B')
    """
    for unit in ("B", "KiB", "MiB"):
        if size < 1024 or size % 1024:
            return f"{size} {unit}"
        size //= 1024
    return f"{size} GiB"
