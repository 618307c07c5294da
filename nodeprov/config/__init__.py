"""Ansible's own configuration, read as Ansible reads it, for the settings nodeprov honours:
``ansible.cfg`` (``$ANSIBLE_CONFIG``, ``./ansible.cfg``, ``~/.ansible.cfg``,
``/etc/ansible/ansible.cfg``: the first found) and the ``ANSIBLE_*`` variables, which win.

    settings = read_settings(os.environ, Path.cwd())
    settings.get("remote_user"), settings.origin("remote_user")

``search`` finds the file, ``definitions`` lists the settings as ansible-core defines them,
``convert`` types their text as Ansible does, ``settings`` resolves them with their origins,
``defaults`` turns them (and the command line) into defaults of the inventory variables they
stand for (``ssh_args`` is read as ``inventory.sshargs`` reads ``ansible_ssh_args``).
"""

from __future__ import annotations

from nodeprov.config.settings import Setting, Settings, read_settings

__all__ = ["Setting", "Settings", "read_settings"]
