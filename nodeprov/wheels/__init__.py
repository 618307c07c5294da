"""Getting wheels onto the nodes: where they come from and how they travel.

- ``wheelhouse``: pip's source options, and the wheelhouse this machine fills once per variant
  (``python -m nodeprov.wheels.wheelhouse``, run by the torch task);
- ``pipconfig``: the node's own pip configuration, read as pip reads it;
- ``installer``: uv pushed once per node, pip where uv cannot run;
- ``peers``: which node seeds each wheel set for the others (one upload per run);
- ``peer_exec``: runs a task's actions where one is a peer copy (``nodeside/peer_scripts.py``
  serves, fetches and lists on the nodes);
- ``handler``: those actions and the run's ``Distribution`` as one handler, which the engine
  runs (``tasks/registry.py`` lists it).
"""
