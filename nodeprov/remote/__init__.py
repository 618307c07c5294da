"""The remote layer: everything that talks to a node over SSH, and nothing above it."""
