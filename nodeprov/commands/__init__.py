"""What each ``nodeprov`` subcommand does, one module each (as pip's ``commands/``): load and
check the input, act, print, write the JSON report, and return the exit code. The CLI (cli/)
parses the options, imports a command's module only when that command runs (``nodeprov
--help`` loads none of them), and maps errors to exit codes in one place (cli/exits.py).

- ``apply``, ``facts``, ``verify``, ``run``, ``inventory``: the subcommands;
- ``console``: what a person sees of a run (progress lines or a live table, the recap).
"""
