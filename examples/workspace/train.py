"""The trainer of examples/workspace.yaml: imports the workspace's own package."""

import os

import mylib

print(mylib.greeting(), "on node", os.environ.get("PET_NODE_RANK", "0"))
