"""ssh_config files, each parsed once per run and only when a connection needs one: parsing
runs nothing, but a lookup may (``Match exec``), so lookups happen when connecting, after
every check has passed.

    SshConfigs().parsed("/home/me/cluster/ssh_config")   # paramiko SSHConfig or None
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from paramiko import SSHConfig

USER_SSH_CONFIG = "~/.ssh/config"


class SshConfigs:
    def __init__(self) -> None:
        self._parsed: dict[Path, SSHConfig | None] = {}
        self._lock = threading.Lock()

    def parsed(self, ssh_config_file: str | None) -> SSHConfig | None:
        """The file parsed, None when it does not exist (``os.devnull``: none, ssh's -F none)."""
        from paramiko import SSHConfig  # lazy: slow to import, and not every run needs it

        path = Path(ssh_config_file or os.path.expanduser(USER_SSH_CONFIG))
        with self._lock:
            if path not in self._parsed:
                self._parsed[path] = (SSHConfig.from_path(str(path))
                                      if path.is_file() or str(path) == os.devnull else None)
            return self._parsed[path]
