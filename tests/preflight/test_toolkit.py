"""The NVIDIA Container Toolkit: no known-bad release (gb10check/advisories.py), a CDI spec generated for the driver the
node has loaded, and the same toolkit version and mode on every node as on rank 0."""

import pytest

from gb10check.checks import toolkit
from gb10check.gather import read, reads
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


@reads("toolkit_version", "toolkit_config")
def test_container_toolkit(node, versions):
    for what, value in toolkit.toolkit_identity(read(node, "toolkit_version"), read(node, "toolkit_config")).items():
        versions(node.name, what, value)  # the toolkit's release and CDI mode, in the run history's manifest
    report(toolkit.judge_toolkit_advisories(node.name, read(node, "toolkit_version"), read(node, "toolkit_config")))


@reads("cdi_specs", "loaded_driver", "toolkit_config")
def test_cdi_spec(node):
    report(toolkit.judge_cdi_spec(node.name, read(node, "cdi_specs"), read(node, "loaded_driver"), read(node, "toolkit_config")))


@reads("toolkit_version", "toolkit_config")
def test_toolkit_same_as_head(follower, head):
    mine, heads = (toolkit.toolkit_identity(read(n, "toolkit_version"), read(n, "toolkit_config")) for n in (follower, head))
    report(toolkit.judge_toolkit_same(follower.name, head.name, mine, heads))
