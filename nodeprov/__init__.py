"""nodeprov: provision multi-node PyTorch clusters over SSH."""

__version__ = "0.1.0"
