"""The become password answers sudo's own prompt, once, before the command starts, and never
later output (issue #23): unit cases of the watcher, then a real sudo on a testbed node, where
a command that prints sudo's prompt (read from sudo's own argv, or the old fixed one) and reads
its stdin must not receive the password, through Session.run or Session.converse."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from invoke.exceptions import ResponseNotAccepted

from nodeprov.errors import HostError
from nodeprov.inventory import Host
from nodeprov.remote.channel import Terms
from nodeprov.remote.options import SshOptions
from nodeprov.remote.session import Session
from nodeprov.remote.sudo import Answer, SudoGate, SudoPrompt, SudoRefused, as_root
from tests.conftest import MakeTestbed

PASSWORD = "Sudo-Canary-4d1e"  # noqa: S105 - the test's own canary
PROMPT = SudoPrompt.new()
TOKEN = "nodeprov-test-started"  # what a converse command says once it runs


def test_each_session_has_its_own_prompt_and_mark() -> None:
    other = SudoPrompt.new()
    assert PROMPT.text != other.text and PROMPT.mark != other.mark
    host = Host("n", "10.0.0.1", "10.0.0.1", become=True, become_password=PASSWORD)
    argv = as_root(host, ["true"], PROMPT)
    assert argv[:5] == ["sudo", "-S", "-p", PROMPT.text, "--"] and PASSWORD not in argv
    assert argv[-2:] == [PROMPT.mark, "true"]
    assert as_root(Host("n", "10.0.0.1", "10.0.0.1", become=True), ["true"], PROMPT) == [
        "sudo", "-n", "--", "true"]


def test_the_password_answers_the_prompt_before_the_mark_once() -> None:
    answer = Answer(PROMPT, PASSWORD)
    lecture = "We trust you have received the usual lecture...\n"
    assert answer.submit(lecture) == []
    assert answer.submit(lecture + PROMPT.text[:5]) == []
    assert answer.submit(lecture + PROMPT.text) == [PASSWORD + "\n"]
    assert answer.submit(lecture + PROMPT.text) == []  # once
    after = f"{lecture}{PROMPT.text}\n{PROMPT.mark}\n{PROMPT.text}"
    assert answer.submit(after) == [] and answer.started
    assert answer.submit(after + PROMPT.text) == []  # the command's own output: never


def test_a_prompt_after_the_mark_is_never_answered() -> None:
    answer = Answer(PROMPT, PASSWORD)  # sudo asked nothing (NOPASSWD), the command prints it
    assert answer.submit(f"{PROMPT.mark}\n{PROMPT.text}") == [] and not answer.gate.answered


def test_the_gate_without_a_mark_stops_where_its_caller_saw_the_command_start() -> None:
    # the run lock's holder says "started" on stdout: the caller tells the gate
    gate = SudoGate(PROMPT.text, PASSWORD)
    assert gate.reply(f"lecture\n{PROMPT.text}") == PASSWORD + "\n"
    gate.started = True
    assert gate.reply(f"lecture\n{PROMPT.text}\n{PROMPT.text}") == ""  # the command's own


def test_a_prompt_with_no_password_to_give_is_a_refusal() -> None:
    with pytest.raises(SudoRefused):
        SudoGate(PROMPT.text, "", mark=PROMPT.mark + "\n").reply(PROMPT.text)
    assert SudoGate("", "", mark=PROMPT.mark + "\n").reply(PROMPT.text) == ""  # no become


def test_a_second_prompt_is_a_refused_password() -> None:
    answer = Answer(PROMPT, PASSWORD)
    assert answer.submit(PROMPT.text) == [PASSWORD + "\n"]
    with pytest.raises(ResponseNotAccepted):
        answer.submit(f"{PROMPT.text}\nSorry, try again.\n{PROMPT.text}")


def test_what_sudo_says_is_kept_off_the_command_stderr() -> None:
    assert PROMPT.command_stderr(f"lecture\n{PROMPT.text}\n{PROMPT.mark}\nreal\n") == "real\n"
    assert PROMPT.command_stderr(f"{PROMPT.text}\nSorry\n{PROMPT.text}") == "\nSorry\n"


# a command that learns the prompt from its sudo's argv, prints it (and nodeprov's old fixed
# one) on stdout and stderr, and reads its stdin
THIEF = r"""p=$(tr '\0' '\n' < /proc/$PPID/cmdline | sed -n '/^-p$/{n;p;q}')
for text in "$p" '[nodeprov: sudo password]'; do printf '%s' "$text"; printf '%s' "$text" >&2
sleep 1; done
got=$(timeout 3 head -n 1)
echo "stdin:[$got]"
"""
ADD_USER = """id alice >/dev/null 2>&1 || useradd -m -s /bin/sh alice
echo "alice:$1" | chpasswd
echo "alice ALL=(ALL:ALL) $2ALL" > /etc/sudoers.d/alice && chmod 440 /etc/sudoers.d/alice
install -d -o alice -g alice -m 700 /home/alice/.ssh
install -o alice -g alice -m 600 /root/.ssh/authorized_keys /home/alice/.ssh/
"""


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("sudo") is None, reason="needs sudo on this machine (the "
                    "testbed's nodes share its /usr): apt-get install sudo")
def test_a_command_that_prints_the_prompt_never_receives_the_password(
        make_testbed: MakeTestbed, tmp_path: Path) -> None:
    bed = make_testbed(nodes=1)
    for nopasswd in ("", "NOPASSWD: "):
        bed.exec("node1", "sh", "-c", ADD_USER, "add-user", PASSWORD, nopasswd, check=True)
        host = Host("node1", bed.address("node1"), bed.address("node1"), user="alice",
                    key_file=str(bed.layout.client_key), become=True, become_password=PASSWORD,
                    vars={"ssh_config_file": str(bed.ssh_config_path)})
        with Session(host, SshOptions()) as session:
            stolen = session.run(["sh", "-c", THIEF])
            assert stolen.stdout.endswith("stdin:[]\n"), (nopasswd, stolen)
            assert PASSWORD not in stolen.stdout + stolen.stderr
            # on a channel of its own (converse) too, where its stdin reaches it once it said
            # its token, after sudo took its password
            stolen = session.converse(["sh", "-c", f"echo {TOKEN} >&2; {THIEF}"], TOKEN,
                                      Terms(), task="sudo")
            assert stolen.stdout.endswith("stdin:[]\n"), (nopasswd, stolen)
            assert PASSWORD not in stolen.stdout + stolen.stderr
            fed = session.converse(["sh", "-c", f"echo {TOKEN} >&2; cat"], TOKEN,
                                   Terms(send=lambda write: write(b"to the command\n")),
                                   task="sudo")
            assert fed.stdout == "to the command\n"
            assert session.run(["id", "-u"]).stdout == "0\n"
    bed.exec("node1", "sh", "-c", ADD_USER, "add-user", PASSWORD, "", check=True)
    wrong = Host("node1", bed.address("node1"), bed.address("node1"), user="alice",
                 key_file=str(bed.layout.client_key), become=True, become_password="Wrong-1",
                 vars={"ssh_config_file": str(bed.ssh_config_path)})
    with Session(wrong, SshOptions()) as session:
        with pytest.raises(HostError, match="sudo refused the password"):
            session.run(["true"])
        with pytest.raises(HostError, match="sudo refused the password"):
            session.converse(["sh", "-c", f"echo {TOKEN} >&2; cat"], TOKEN,
                             Terms(send=lambda write: write(b"never to sudo\n")), task="sudo")
