"""The run's verdict from its unexpected results: CONFORMANT (exit 0), NOT CONFORMANT (exit 1)
or INDETERMINATE (exit 3), shared by the report, the console, the HTML page and the merge of
shards."""

from __future__ import annotations

#: The exit code of a run whose only unexpected results could not be judged (no answer from
#: the target: a lost connection, a timeout): neither conformant (0) nor not (1).
EXIT_INDETERMINATE = 3


def run_exit_code(verdicts: list[str]) -> int:
    """The run's exit code from the verdicts of its unexpected results: 0 none, 1 any failure
    (a divergence, or a deviation at level ``reference``), :data:`EXIT_INDETERMINATE` when every
    one is ``indeterminate`` -- a transport accident never reads as the store's failure."""
    if not verdicts:
        return 0
    return EXIT_INDETERMINATE if all(v == "indeterminate" for v in verdicts) else 1


def verdict_text(exit_code: int) -> str:
    """The run's verdict as the console and the HTML report name it."""
    if exit_code == 0:
        return "CONFORMANT"
    return "INDETERMINATE" if exit_code == EXIT_INDETERMINATE else "NOT CONFORMANT"
