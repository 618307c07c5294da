"""The jobs nodeprov runs across the nodes with torchrun, and what they report on this side.

- the verification job: ``prove`` (the connectivity matrix, then the job, then the bandwidth
  baseline: how apply ends and verify checks), ``connectivity`` and ``matrix``, ``launch``,
  ``results``, ``baseline``; the job itself, ``allreduce/``, runs on the nodes with torch and
  the standard library only;
- ``nodeprov run``'s job, the user's script: ``run``, ``runargs``, ``sync``, ``ranklog``,
  ``runreport``;
- both: ``nodejob`` (one job on every node at once, stopped together), ``failures`` and
  ``diagnose`` (which nodes failed by themselves, and the likely cause).

The scripts these start on the nodes without torch are in nodeprov/nodeside/.
"""
