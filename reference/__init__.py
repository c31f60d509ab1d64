"""memspec reference models: the two memory specifications as pure, runnable functions.

Nothing in this package performs I/O, reads a clock, or draws randomness: every function that
depends on time takes ``now`` (integer milliseconds since the Unix epoch) from its caller.
"""
