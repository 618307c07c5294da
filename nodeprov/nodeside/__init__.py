"""What runs on the nodes, as this machine sends it: each file's text goes over SSH and runs
with the node's own ``sh`` or system ``python3`` (``resources.files("nodeprov.nodeside")``).

- ``facts.sh``: everything nodeprov reads about a node, in one round trip (remote.facts), with
  ``cuda_capability.py`` where nvidia-smi cannot say a GPU's compute capability;
- ``launcher.py``: one job per node that never outlives nodeprov, and ``lockholder.py``: who
  holds a busy node's job lock (job.nodejob);
- ``ufw-helper.sh``: the firewall task's commands and its lockout guard (tasks.firewall);
- ``netcheck.py``: the connectivity matrix's listeners and probes (proof.connectivity);
- ``syncnode.py``: ``nodeprov run --sync``'s listing and receiving end (userjob.sync);
- ``peer_scripts.py``: the wheel seeds' server, fetch and listing (wheels.peer_exec);
- ``written.py``: the bytes an install has written so far, for its progress (wheels.written);
- ``install.sh`` and ``seed.sh``, each after ``uv_runs.sh``: an install into the venv, uv first
  and pip where uv cannot, and pip put into a new venv (wheels.installer).

The rule, kept by tests/nodeside/test_nodeside.py: Python here parses as Python 3.8 (the oldest
python3 nodeprov runs these with: ``tasks.venv.SCRIPTS_PYTHON``) and imports only its standard
library, nothing of nodeprov; the shell scripts pass ``sh -n`` and shellcheck as POSIX sh.
tests/nodeside/test_inline_scripts.py holds the scripts other modules keep as strings (probes,
the batch, the locks) to the same rule.
"""
