"""The torchrun verification job, and reading what it reports on the admin side."""
