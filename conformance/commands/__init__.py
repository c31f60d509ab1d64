"""Subcommands of ``memspec``; each module exposes ``register(subparsers)``."""
