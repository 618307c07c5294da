"""The proof that the cluster trains: ``prove`` (the connectivity matrix, then the verification
job, then the bandwidth baseline: how apply ends and verify checks), ``connectivity`` and
``matrix``, ``launch``, ``results``, ``baseline``; the job itself, ``allreduce/``, runs on the
nodes with torch and the standard library only.
"""
