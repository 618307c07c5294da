"""The floor of a no-change run: a bare Fabric script that connects once to every host, all in
parallel, and runs ONE command. No tool can do less over SSH.

    python tests/bench/floor.py SSH_CONFIG HOST [HOST ...]

Connects as the ssh_config says (address, user, key) and checks host keys against its
UserKnownHostsFile, as nodeprov does; exits 1 when a host failed.
"""

from __future__ import annotations

import sys

from fabric import Config, Connection, ThreadingGroup
from paramiko import RejectPolicy


def connection(host: str, config: Config) -> Connection:
    conn = Connection(host, config=config)
    conn.client.load_host_keys(conn.ssh_config["userknownhostsfile"])
    conn.client.set_missing_host_key_policy(RejectPolicy())
    return conn


def main(argv: list[str]) -> int:
    ssh_config, *hosts = argv
    config = Config(runtime_ssh_path=ssh_config)
    config.load_ssh_config()
    group = ThreadingGroup.from_connections([connection(host, config) for host in hosts])
    try:
        results = group.run("true", hide=True, warn=True)
    except Exception as error:  # fabric.exceptions.GroupException: some host failed
        print(f"floor: {error}", file=sys.stderr)
        return 1
    finally:
        group.close()
    return 0 if all(result.exited == 0 for result in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
