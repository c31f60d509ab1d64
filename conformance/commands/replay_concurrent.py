"""``memspec replay-concurrent``: re-run a concurrent counterexample (see
conformance.concurrent)."""

from conformance.concurrent.command import register, replay_command

__all__ = ["register", "replay_command"]
