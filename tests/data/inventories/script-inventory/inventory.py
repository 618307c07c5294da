#!/usr/bin/env python3
"""A dynamic inventory script, as cloud and CMDB exporters write them."""
import json
import sys

INVENTORY = {
    "gpu": {"hosts": ["g1", "g2"], "vars": {"rdzv_port": 29900}},
    "cpu": {"hosts": ["c1"]},
    "cluster": {"children": ["gpu", "cpu"], "vars": {"node_subnet": "10.8.0.0/24"}},
    "_meta": {"hostvars": {"g1": {"ansible_host": "10.8.0.11"},
                           "g2": {"ansible_host": "10.8.0.12"},
                           "c1": {"ansible_host": "10.8.0.21"}}},
}
if sys.argv[1:] == ["--list"]:
    print(json.dumps(INVENTORY))
else:
    print("{}")
