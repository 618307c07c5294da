"""Task types: one module each; ``registry.py`` lists them."""
