"""The remote layer: everything that crosses SSH to a node. It imports nothing above it (wheels,
tasks, engine, job, checks, commands); they import from it.

    session = Session(host, SshOptions())                    # session.py, options.py
    facts, observed = session.gather([probe_a, probe_b])     # one round trip
    session.execute("hosts", [Write("/etc/hosts", text)])    # one round trip per batch

The wire format: every command is an argv list joined by ``shlex.join`` (scripts are fixed
text, values travel as their arguments), run by the node user's shell, under
``sudo -S -p PROMPT --`` with become (sudo.py: the password typed at that prompt only).

**A read** (``gather``; facts.py, reader.py) is ONE command, ``sh -c SCRIPT nodeprov-facts
TOKEN``: SCRIPT is facts.sh, then each probe as a section, then ``section end``. TOKEN is 16
random hex digits, new per round trip; the output is framed as sections, each a line
``@@TOKEN name`` after a newline, then its text (``split_sections``)::

    \\n@@3f9c... hostname\\nnode1\\n@@3f9c... probe.0\\n<probe 0's stdout>\\n@@3f9c... end\\n

A probe ``sh -c PROBE NAME ARGS..`` runs as a shell function in a subshell; its stdout is its
section ``probe.N``, which the task's ``plan`` gets as ``observed``. A probe that reads files
embeds ``nodeprov_read`` (reader.py), whose output is framed by a random ROOT no file can forge.
With a lock wait (apply), the same script runs inside the run-lock holder (nodelock.py) on a
channel held open until ``unlock``; heartbeat bytes on its stdin keep the lock.

**Actions** (``execute``; actions.py, batch.py, transfer.py): consecutive Runs and Writes go
as ONE ``sh -c BATCH nodeprov TOKEN`` under the batch lock (``flock`` on LOCK_PATH). Each action
is a step announcing itself on stderr (``\\n@@TOKEN step N``), so a non-zero exit names the
action that failed; a Write is ``nodeprov_write PATH CONTENT MODE`` (temp file, owner and mode
kept, rename), its content inline up to 64 KiB a batch, else staged first by SFTP. With
``then_read``, a last step prints a read as above, saving the round trip that would follow.
An Upload goes by SFTP; a Local runs on this machine; ConfirmNewConnection opens a second
session and runs ``true``. No action has stdin: invoke pumps it a byte per 10 ms. Bulk data to
a command's stdin, and a job's heartbeat, go by ``Session.converse`` (channel.py): a channel of
its own, written in large blocks once the command says it runs (after sudo's prompt).

Modules: actions (what may be done), options (SshOptions), session (Session), channel
(converse: a command on a channel of its own, for bulk stdin or a heartbeat), connect
(connect_all: every host at once), dial (a connection tried again while sshd turns it away),
hostkeys (ssh_config, known_hosts, jump hosts), proxycommand (a ProxyCommand that says why it
failed), capture (a node's output read with a limit), sudo (the one rule for the become
password), batch, transfer, nodelock (the run and batch locks, keepalive), facts (what a node
is, as nodeside/facts.sh reads it) and factcheck (each fact held to a pattern), reader (exact
file contents).
"""
