"""SSH keys and configs: the testbed makes every key itself, so no host key is trusted on use.

    generate_keys({layout.client_key: "nodeprov-testbed", host_key: "node1"})
    ssh_config(layout, [("node1", "10.77.3.2")])   # `ssh -F DIR/ssh_config node1` and Fabric
    known_hosts([("node1", "10.77.3.2", "ssh-ed25519 AAAA... node1")])
    sshd_config("10.77.3.2", host_key)
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from nodeprov.errors import NodeprovError
from nodeprov.testbed.layout import Layout
from nodeprov.util import validate

# OpenSSH's default hybrid post-quantum key exchange costs ~70 ms of client CPU per connection;
# the testbed's nodes offer only curve25519, which is enough for a local test cluster.
KEX_ALGORITHMS = "curve25519-sha256,curve25519-sha256@libssh.org"


def generate_keys(keys: Mapping[Path, str]) -> None:
    """Make an ed25519 key pair at each path (comment as value), all ssh-keygens at once."""
    started = [(path, subprocess.Popen(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        for path, comment in keys.items()]
    failures = []
    for path, process in started:
        output, _ = process.communicate()
        if process.returncode != 0:
            failures.append(f"{path}: {output.strip()}")
    if failures:
        raise NodeprovError("testbed: ssh-keygen failed: " + "; ".join(failures))


def sshd_config(address: str, host_key: Path, settings: Mapping[str, str] | None = None) -> str:
    """A node's sshd: key-only root login on port 22 of its address; PAM reads /etc/environment.
    ``settings`` replace the defaults of the same keyword (a test's ``MaxStartups``)."""
    lines = {
        "ListenAddress": f"{address}:22",
        "HostKey": str(host_key),
        "PidFile": "none",
        "PermitRootLogin": "prohibit-password",
        "PubkeyAuthentication": "yes",
        "AuthorizedKeysFile": ".ssh/authorized_keys",
        "PasswordAuthentication": "no",
        "KbdInteractiveAuthentication": "no",
        "UsePAM": "yes",
        "PrintMotd": "no",
        "X11Forwarding": "no",
        "AcceptEnv": "LANG LC_*",
        "Subsystem": "sftp internal-sftp",
        "KexAlgorithms": KEX_ALGORITHMS,
        # A test may open many sessions to one node at once.
        "MaxStartups": "100:30:200",
        "MaxSessions": "100",
    }
    for keyword, value in (settings or {}).items():
        if not keyword.isalpha():
            raise ValueError(f"{keyword!r} is not an sshd_config keyword")
        lines[keyword] = validate.text_value(value)
    return "\n".join(["# written by `nodeprov testbed up`",
                      *(f"{keyword} {value}" for keyword, value in lines.items()), ""])


def ssh_config(layout: Layout, nodes: Sequence[tuple[str, str]]) -> str:
    """One ``Host`` block per node, matching its name and its address (Fabric looks up the
    address it connects to, nodeprov the inventory's ``ansible_host``)."""
    blocks = ["# written by `nodeprov testbed up`; use: ssh -F "
              f"{layout.ssh_config} node1\n"]
    for name, address in nodes:
        blocks.append("\n".join([
            f"Host {name} {address}",
            f"  HostName {address}",
            "  User root",
            "  Port 22",
            f"  IdentityFile {layout.client_key}",
            "  IdentitiesOnly yes",
            f"  UserKnownHostsFile {layout.known_hosts}",
            "  GlobalKnownHostsFile /dev/null",
            "  StrictHostKeyChecking yes",
            "  BatchMode yes",
            "  ConnectTimeout 10",
            f"  KexAlgorithms {KEX_ALGORITHMS}",
            "",
        ]))
    return "\n".join(blocks)


def known_hosts(nodes: Sequence[tuple[str, str, str]]) -> str:
    """``name,address keytype key`` for each (name, address, public key line)."""
    lines = []
    for name, address, public_key in nodes:
        key_type, key = public_key.split()[:2]
        lines.append(f"{name},{address} {key_type} {key}\n")
    return "".join(lines)
