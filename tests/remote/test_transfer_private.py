"""A staged file is private from its creation (issue #34): paramiko's open sent no mode, so
sftp-server made the --env file 0644 and nodeprov's chmod came a round trip later; another
user watching /tmp read HF_TOKEN in 2 of 3 runs. The test stats the file right after the SFTP
open request is answered, before any other request, as a watcher would see it then."""

from __future__ import annotations

import stat
from typing import Any

import pytest
from paramiko.sftp import CMD_OPEN

from nodeprov.inventory import Host
from nodeprov.remote.actions import Write
from nodeprov.remote.options import SshOptions
from nodeprov.remote.session import Session
from tests.conftest import MakeTestbed


@pytest.mark.integration
def test_a_staged_file_is_0600_from_the_moment_it_exists(make_testbed: MakeTestbed) -> None:
    bed = make_testbed(nodes=1)
    host = Host("node1", bed.address("node1"), bed.address("node1"),
                key_file=str(bed.layout.client_key),
                vars={"ssh_config_file": str(bed.ssh_config_path)})
    with Session(host, SshOptions()) as session:
        sftp = session._connection.sftp()
        request = sftp._request
        born: list[tuple[str, int]] = []

        def watched(kind: int, *args: Any) -> Any:
            answer = request(kind, *args)
            if kind == CMD_OPEN:  # the file now exists; nothing else has been asked yet
                path = args[0].decode() if isinstance(args[0], bytes) else args[0]
                born.append((path, stat.S_IMODE(sftp.lstat(path).st_mode)))
            return answer

        sftp._request = watched
        staged = session.stage("env", Write("env", '{"HF_TOKEN": "hf_secret"}'))
        sftp._request = request
        assert born == [(staged, 0o600)]
        assert session.run(["cat", staged]).stdout == '{"HF_TOKEN": "hf_secret"}'
        session.run(["rm", "-f", staged])
