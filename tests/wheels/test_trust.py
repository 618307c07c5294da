"""A certificate pip or uv refused, told from their recorded output (tests/data/tls), and said
as such in the line of a failed install on a node and of a failed download on this machine."""

from __future__ import annotations

from pathlib import Path

from nodeprov.errors import CommandFailed
from nodeprov.wheels import installer, trust
from nodeprov.wheels.installer import Origin
from nodeprov.wheels.peer_exec import install_failed
from nodeprov.wheels.wheelhouse import pip_reason

DATA = Path(__file__).parents[1] / "data" / "tls"
PIP = (DATA / "pip-26.3-untrusted.txt").read_text()
UV = (DATA / "uv-0.13.9-untrusted.txt").read_text()
NOT_FOUND = "ERROR: No matching distribution found for six\n"


def test_pip_and_uv_refusals_are_recognised_and_other_failures_are_not() -> None:
    assert trust.untrusted(PIP) == "certificate verify failed: unable to get local issuer " \
                                   "certificate"
    assert trust.untrusted(UV) == "invalid peer certificate: UnknownIssuer"
    assert trust.untrusted(NOT_FOUND) is None
    assert trust.untrusted("Connection refused") is None


def test_this_machine_says_the_certificate_where_pip_said_no_matching_distribution() -> None:
    assert pip_reason(PIP, 1) == ("certificate verify failed: unable to get local issuer "
                                  f"certificate; {trust.HERE}")
    assert pip_reason(NOT_FOUND, 1) == "No matching distribution found for six"


def test_a_node_that_trusts_no_certificate_of_the_index_is_told_to_install_the_ca() -> None:
    origin = Origin(("--index-url", "https://ci:s3cret@10.9.8.1:44321/simple"),
                    source="https://ci:***@10.9.8.1:44321/simple",
                    hint="set pip_index_url or pip_find_links to an index it reaches, or "
                         "wheelhouse: true")
    step = installer.install("/opt/venv", ["torch==2.13.0+cpu", "numpy"], origin)
    output = f"{UV}nodeprov: uv failed (error: Failed to fetch): trying pip\n{PIP}"
    failed = install_failed(CommandFailed("node1", "torch", str(step), 1, output), step)
    first, *details = str(failed).splitlines()
    assert first.startswith("node1: torch: could not install torch==2.13.0+cpu and 1 more from "
                            "https://ci:***@10.9.8.1:44321/simple (set pip_index_url")
    assert first.endswith("(set pip_index_url or pip_find_links to an index it reaches, or "
                          "wheelhouse: true; certificate not trusted: install the site's CA on "
                          "the node, or set pip's cert)")  # the action's advice stays
    assert "s3cret" not in str(failed)
    assert details[-1] == "  ERROR: No matching distribution found for six"
    other = install_failed(CommandFailed("node1", "torch", str(step), 1, NOT_FOUND), step)
    assert str(other).splitlines()[0].endswith("(set pip_index_url or pip_find_links to an "
                                               "index it reaches, or wheelhouse: true)")


def test_uvs_refusal_is_not_why_pip_failed_after_it() -> None:
    # uv refused the certificate, pip then reached the index and found nothing: pip's reason
    step = installer.install("/opt/venv", ["six"], Origin(("--index-url", "https://10.9.8.1/simple"),
                                                          source="https://10.9.8.1/simple",
                                                          hint="set pip_index_url"))
    output = (f"{UV}nodeprov: uv failed (error: Failed to fetch: https://10.9.8.1/simple/six/ "
              f"(invalid peer certificate: UnknownIssuer)): trying pip\n{NOT_FOUND}")
    failed = install_failed(CommandFailed("node1", "torch", str(step), 1, output), step)
    assert str(failed).splitlines()[0] == ("node1: torch: could not install six from "
                                           "https://10.9.8.1/simple (set pip_index_url)")
    alone = install_failed(CommandFailed("node1", "torch", str(step), 1, UV), step)
    assert str(alone).splitlines()[0].endswith(f"(set pip_index_url; {trust.ON_NODE})")
