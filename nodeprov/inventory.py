"""Ansible-format YAML inventories: load, merge vars, validate before any connection."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Host:
    """One node: where to reach it and its merged vars (host > group > all > defaults)."""

    name: str
    address: str
    port: int = 22
    user: str | None = None
    key_file: str | None = None
    become: bool = False
    become_password: str | None = field(default=None, repr=False)
    groups: tuple[str, ...] = ()
    vars: Mapping[str, Any] = field(default_factory=dict)
