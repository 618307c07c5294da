"""The local package mirrors of this machine that tests install torch from (``pip_find_links``,
``pip_index_url``): testbed nodes see them read-only, and nothing else of this machine's but its
system trees (issue #22 point 8).

    with temporary(nodes=2, shared=LOCAL_MIRRORS) as bed: ...
"""

from __future__ import annotations

from pathlib import Path

LOCAL_MIRRORS = tuple(path for path in ("/opt/wheels", "/opt/pypi", "/opt/pypi-more")
                      if Path(path).is_dir())
