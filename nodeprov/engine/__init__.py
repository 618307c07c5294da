"""What runs a playbook on the nodes: the only code that acts on them.

- ``runner``: every host's tasks in parallel, planned just before each runs, one round trip a
  change; one result per host, a failure never stopping the others;
- ``rolling``: a play's batches (``serial:``), stopping as ``max_fail_percentage:`` says;
- ``outcome``: what a run reports (per task, per host, the whole playbook) and Ctrl-C's end;
- ``node_address``: each node's address in node_subnet, read from the node where the inventory
  does not give it;
- ``handlers``: the table of the rooms' own action kinds (the wheels'), each with its state for
  the run.
"""
