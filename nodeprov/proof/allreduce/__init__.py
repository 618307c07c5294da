"""nodeprov's verification job: one DDP step, then an all-reduce sweep with every result checked.

nodeprov copies this package to every node (as ``/var/lib/nodeprov/job/nodeprov_allreduce/``)
and starts it there with the venv's torchrun as a module. It imports only torch and the standard
library, so a person can run it by hand the same way, from the folder that holds it::

    cd /var/lib/nodeprov/job && torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d \\
        --rdzv-endpoint node1:29500 --rdzv-id check1 \\
        -m nodeprov_allreduce --backend nccl --result /tmp/nodeprov-job.json

``--help`` lists the other options (message sizes, iterations, --timeout).

First every rank runs a small kernel on its share of the node's GPUs (local ranks take turns,
so together they cover each GPU once) and compares it with the CPU result: a build without
kernels for the GPU ("no kernel image is available") or a dead GPU stops the job there, with a
``NODEPROV_GPU_CHECK`` line naming the GPU. Nodes without a usable GPU skip it.

Local rank 0 of every node writes the same JSON result to --result and prints it as one line,
``NODEPROV_RESULT {...}``. Bus bandwidth is nccl-tests' definition: algbw * 2(n-1)/n.
Exit status: 0 when every check passed, 1 when one failed (a wrong sum, or DDP replicas that
differ); an exception exits non-zero with its traceback and writes no result.

Modules: ``sweep`` (the all-reduce measurement), ``steps`` (the GPU check, the DDP step, the
hostnames), ``__main__`` (options, the result).
"""

import warnings

# torch warns on import when numpy is missing, which the job does not need; that line would only
# clutter the output tail nodeprov shows when the job fails. Imported here first, quietly, the
# modules' own ``import torch`` finds it loaded.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch  # noqa: F401
