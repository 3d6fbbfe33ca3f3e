"""mailnode: a self-hosted mail node (see README.md and docs/)."""

__version__ = "0.1.0"
