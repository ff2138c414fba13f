"""The pytest11 entry point: every pytest in the environment loads this module, so it registers gb10check's plugin
(gb10check.plugin: --cluster, --report-dir, the parametrization, the report) only for a run of the suite's own checks,
and only where that is safe. Elsewhere it does nothing: another project's `--cluster` option, `node` fixture or an
exported GB10CHECK_CLUSTER naming a missing file never reach its runs.

A run of the suite: its ini is the suite's pytest.ini (gb10check.suite), an argument names the suite's tests (a path
under them, or `--pyargs gb10check.tests...`), or the arguments give --cluster or --report-dir that nothing else defines.
Safe: no plugin or conftest already defines --cluster or --report-dir.
A run that loads the plugin itself (`-p gb10check.plugin`, the clone's conftest.py) is left to it.
This module imports nothing heavy: it is imported by every pytest start in the environment.
"""

from pathlib import Path

import pytest

PLUGIN = "gb10check.plugin"
OPTIONS = ("--cluster", "--report-dir")


def _defined_options(parser: pytest.Parser) -> set[str]:
    groups = [parser._anonymous, *parser._groups]  # pytest keeps no public list of the options added so far
    return {name for group in groups for option in group.options for name in option.names()}


def is_suite_run(config: pytest.Config, args: list[str]) -> bool:
    from . import suite

    try:
        ini, tests = suite.ini().resolve(), suite.tests().resolve()
    except suite.SuiteMissing:
        return False
    if config.inipath is not None and Path(config.inipath).resolve() == ini:
        return True
    for arg in args:
        if arg.split("=", 1)[0] in OPTIONS:
            return True
        if arg.startswith("-"):
            continue
        name = arg.split("::", 1)[0]
        if name == "gb10check.tests" or name.startswith("gb10check.tests."):
            return True
        path = Path(config.invocation_params.dir, name).resolve()
        if path == tests or tests in path.parents:
            return True
    return False


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]):
    # After the conftests next to the arguments (and the plugins) have added their options, before the arguments are
    # parsed for good: the plugin's options added now are parsed as if it had been there from the start.
    result = yield
    manager = early_config.pluginmanager
    if manager.has_plugin(PLUGIN) or manager.is_blocked(PLUGIN) or _defined_options(parser) & set(OPTIONS):
        return result
    if is_suite_run(early_config, args):
        manager.import_plugin(PLUGIN)
    return result
