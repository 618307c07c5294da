"""pyinfra twin of the venv task of tests/bench/nodeprov/playbook.yaml: a bare venv.

    pyinfra -y --parallel N INVENTORY venv.py network.py
"""

from pyinfra.operations import pip

pip.venv(name="Python venv", path="/opt/nodeprov/venv", python="python3")
