"""What every layer uses and that knows nothing of nodes, tasks or commands: validators for
values that reach a node (``validate``), YAML with line numbers (``yamlfile``), the one way to
work on every host at once (``fanout``), and Jinja2 in its sandbox (``jinja``).

These modules import only ``nodeprov.errors`` (tests/test_layering.py keeps it so).
"""
