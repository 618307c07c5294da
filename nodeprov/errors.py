"""Every error nodeprov raises on purpose, and the exit code each one maps to.

    NodeprovError                 root; ``exit_code`` says how the CLI exits (cli.exits)
    ├── InputError                bad inventory, playbook or parameter (exit 2, nothing touched)
    │   └── StricterThanAnsible   what Ansible reads (at most warning) but nodeprov refuses on
    │                             purpose (a vault no password opens, a duplicate key, ...)
    ├── EnvironmentProblem        this machine lacks something (root, a tool) (exit 2)
    ├── HostError                 something failed on one host (exit 1); carries node and task
    │   ├── Unreachable           no SSH session could be opened
    │   ├── CommandFailed         a remote command exited non-zero
    │   └── InstallFailed         nothing could install: one line, the tool's lines below
    │                             (wheels.peer_exec)
    ├── TaskFailed                a task's plan: the node cannot get there (exit 1; tasks.base)
    ├── UnknownHostKey            a host key not in known_hosts (remote.hostkeys)
    ├── ProxyCommandFailed        a ProxyCommand did not start or ended (remote.proxycommand;
    │                             remote.dial turns it into Unreachable)
    ├── ReportNotWritten          a report file could not be written after the run
    │                             (util.reportfile; its path was checked before the run)
    ├── NotStarted                Ctrl-C came before this host's work (util.fanout)
    ├── Interrupted               Ctrl-C stopped a run (exit 130; engine.outcome; a
    │                             KeyboardInterrupt too)
    └── caught where raised and turned into one of the above, each also what it was before
        (exit 2 should one escape): ParamError (a ValueError; tasks.params), JobPlanError and
        NoVariant (ValueErrors; job.launch, variants.choose), YamlTooBig (a yaml.YAMLError;
        util.yamlfile), TemplateLimit and TemplateLoop (Jinja2 errors; util.jinja,
        inventory.templating), IndexUnreadable and NotPublished (variants.index: the torch
        choice falls back to nodeprov's table, saying why), BadValue (a ValueError;
        config.convert), VaultFormatError (a ValueError; inventory.vaultformat), DownloadFailed
        (this machine's pip; wheels.wheelhouse: a warning where what failed was only a faster
        way, else a HostError)

Each error prints as one line a person can act on::

    >>> str(CommandFailed("node3", "firewall", "ufw enable", 1, "ERROR: ...", hint="is IPV6=yes?"))
    "node3: firewall: 'ufw enable' exited 1: ERROR: ... (is IPV6=yes?)"
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_HOST_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_SLOWER_PATH = 3  # nodeprov fabric: NCCL took a slower path than the nodes have
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT
EXIT_OUTPUT_CLOSED = 141  # stdout's reader went away (`| head`), as shells report SIGPIPE


class NodeprovError(Exception):
    """Root of nodeprov's errors."""

    exit_code = EXIT_HOST_FAILED


class InputError(NodeprovError):
    """Invalid input: names the file, the line or field, and what would be valid."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, *, source: str = "", line: int | None = None,
                 field: str = "") -> None:
        self.message = message
        self.source = source
        self.line = line
        self.field = field
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.source
        if self.line is not None:
            where = f"{where}:{self.line}" if where else f"line {self.line}"
        if self.field:
            where = f"{where}: {self.field}" if where else self.field
        return f"{where}: {self.message}" if where else self.message


class StricterThanAnsible(InputError):
    """Input Ansible reads (at most with a warning) that nodeprov refuses on purpose: a
    duplicate key, bytes that are not UTF-8, a size or depth limit, vault. Never skipped, not
    even where Ansible skips a file it cannot parse (an inventory folder's members)."""


class EnvironmentProblem(NodeprovError):
    """This machine cannot do what was asked (not root, a tool missing)."""

    exit_code = EXIT_BAD_INPUT


class HostError(NodeprovError):
    """A failure on one host, rendered as ``node: task: what (hint)``."""

    def __init__(self, node: str, task: str, message: str, *, hint: str = "") -> None:
        self.node = node
        self.task = task
        self.message = message
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        text = f"{self.node}: {self.task}: {self.message}" if self.task else (
            f"{self.node}: {self.message}")
        return f"{text} ({self.hint})" if self.hint else text


class Unreachable(HostError):
    """No SSH session to the host could be opened."""


class CommandFailed(HostError):
    """A remote command exited non-zero; keeps the command, exit code and output tail."""

    def __init__(self, node: str, task: str, command: str, exit_code: int, output: str,
                 *, hint: str = "") -> None:
        self.command = command
        self.returncode = exit_code
        self.output = output
        tail = " ".join(output.strip().splitlines()[-3:])[-300:]
        message = f"{command!r} exited {exit_code}" + (f": {tail}" if tail else "")
        super().__init__(node, task, message, hint=hint)
