"""What every job nodeprov starts across the nodes shares: ``nodejob`` (one job on every node
at once, stopped together) and the narration of its failures, ``failures`` and ``diagnose``
(which nodes failed by themselves, and the likely cause, by the rules of ``causes``).

The proof's job is in nodeprov/proof/, ``nodeprov run``'s in nodeprov/userjob/; the scripts
they start on the nodes without torch are in nodeprov/nodeside/.
"""
