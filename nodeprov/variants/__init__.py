"""Choosing the torch variant: which build of a torch release (``cpu``, ``cu130``,
``rocm7.1``) serves every node of a cluster, from each node's GPUs, driver and ROCm.

- ``published``: what PyTorch built for each release (variants, architecture lists, platforms);
- ``drivers``: which CUDA runtimes an NVIDIA driver runs (NVIDIA's tables);
- ``fit``: whether one build serves one node;
- ``choose``: the one build for the whole cluster, and the wheel spec and index it comes from;
- ``index``: the variants an index lists, for releases newer than the table.

Pure data and functions: nothing here connects to a node (the torch task reads the facts).
"""
