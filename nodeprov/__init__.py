"""nodeprov: provision multi-node PyTorch clusters over SSH.

Where things are, one folder per concern, from the bottom layer up (a module imports only its
own folder and the layers below it: tests/test_layering.py's LAYERS table):

    errors.py        every error nodeprov raises on purpose, and its exit code
    nodeside/        what runs on the nodes: facts.sh, ufw-helper.sh, netcheck.py, ...
    util/            validate, yamlfile, fanout (every host at once), jinja (the sandbox)
    jsonreport.py    the --json report's schema (report.schema.json) and writer
    gpu/, variants/  a node's GPUs; which torch build serves the whole cluster
    htmlreport/      the --html page, drawn from the JSON report alone
    config/          ansible.cfg and ANSIBLE_* read as Ansible reads them
    inventory/       Ansible inventories as Ansible resolves them, nodeprov's own variables
    remote/          everything that crosses SSH: sessions, facts, host keys, locks
    wheels/          how wheels reach the nodes: sources, wheelhouse, uv, peer seeds
    tasks/           facts read, tasks decide: one module (or folder) per task
    playbook/        plays, tags and batches, checked before any connection
    playbooks/       site.yaml, the playbook nodeprov ships
    engine/          the runner: the only code that acts on the nodes
    job/, checks/    the torchrun jobs (verification, nodeprov run); verify's checks
    commands/        one module per subcommand: apply, facts, verify, run, inventory, ...
    cli/             the command line (the Typer app): options, exit codes
    __main__.py      the entry point (nodeprov, python -m nodeprov): the app, and the process's ends
    testbed/         a local test cluster in network namespaces (nodeprov testbed)

Each module, one line each: docs/where-things-are.md.
"""

__version__ = "0.1.0"
