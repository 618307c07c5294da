"""Text files as the tasks edit them: pure functions from text to text, no node in sight.

- ``blocks``: nodeprov's managed blocks (``# BEGIN nodeprov NAME`` ... ``# END``) in any file,
  and the unified diffs of the changes;
- ``sysctl_conf``: the sysctl.d files, their order at boot, and what each sets;
- ``envfile``: /etc/environment and nccl.conf as pam_env and NCCL read them.

They import only ``nodeprov.errors`` and ``nodeprov.util`` (tests/test_layering.py), so every
task can use them; what reads a node's files is ``remote.reader``.
"""
