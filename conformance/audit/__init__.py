"""The memory-off audit: record what a system sends its model provider, and prove it.

``capture`` (a loopback recording stand-in for the provider), ``diff`` (two captures, byte
for byte, explained in JSON terms), ``memory_on`` (memory on changes only the advisory block),
``report`` (JSON + Markdown reports), ``jsonscan`` (a span-keeping JSON scanner) and
``sample_client`` (a toy agent).  The CLI is ``memspec audit``; see ``docs/audit.md``.
"""
