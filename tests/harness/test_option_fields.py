"""The option schema's mapping onto ``RunConfig`` (``engine/options.py`` ``config_fields``):
a front end reads its options into values keyed by ``Option.key`` and hands them down; the
engine calls nothing a front end defines."""

from __future__ import annotations

import argparse

import pytest

from conformance.commands.launch import run_config
from conformance.engine.options import CONTRACT, RUN, config_fields, pytest_config_fields

pytestmark = pytest.mark.clause()


def test_each_field_comes_from_its_key_and_a_missing_key_reads_as_the_default() -> None:
    fields = config_fields({"jobs": 3, "level": "reference", "not_an_option": 1}, RUN)
    assert fields["jobs"] == 3 and fields["level"] == "reference"
    rest = {o.field: o.default for o in RUN if o.field and o.key not in ("jobs", "level")}
    assert {k: fields[k] for k in rest} == rest
    assert set(fields) == {o.field for o in RUN if o.field}


def test_the_command_line_and_the_plugin_fill_the_same_field_alike() -> None:
    config = run_config(argparse.Namespace(seed=7, spec="memory"), corpus=True, machines=False)
    assert (config.seed, config.spec, config.machines) == (7, "memory", False)
    assert config.contract == CONTRACT.default
    assert pytest_config_fields({"seed": 7, "spec": "memory"})["seed"] == 7
