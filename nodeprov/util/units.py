"""Amounts as people read them: a message size in the sweep's table, chart and verdicts, a
count of things in a verdict; a text cut to the length a line has room for.

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


def counted(number: int, noun: str) -> str:
    """
    >>> counted(1, "pair"), counted(2, "pair")
    ('1 pair', '2 pairs')
    """
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def clipped(text: str, most: int) -> str:
    """``text`` when it has at most ``most`` characters, else its start and "..." in that many.

    >>> clipped("sudo -n -- sh -c 'exec ufw'", 12)
    'sudo -n -...'
    """
    return text if len(text) <= most else text[:most - 3] + "..."
