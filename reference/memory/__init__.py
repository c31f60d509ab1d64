"""Reference model of cross-session memory (seed 000_8e81c92b6ab8d572, ``specs/memory.md``).

Plain functions over frozen dataclasses; no I/O, no clock, no randomness.  Modules:
``records`` (shapes), ``scoring`` (tokenize, keyword match, recency, score), ``containment``
(sanitize and render), ``budget`` (token estimate, hard budget), ``injection`` (fold the block
onto a provider request), ``engine`` (rank, plan writes, mint, plan eviction, allowed-answer
helpers), ``store`` (in-process and null store models), ``scopes`` (scope keys), ``pool`` (the
multi-scope read).
"""
