"""Model artifacts and unified memory: the checkpoint is complete and alike on every node, and it fits."""

import pytest

from gb10check.checks import model
from gb10check.gather import read, reads
from gb10check.remedies import Code
from gb10check.verdict import not_checked, report

pytestmark = pytest.mark.preflight


@reads("model_listing", "model_index")
def test_model_artifacts(node, cluster):
    report(model.judge_cache(node.name, cluster.deploy.model_id, read(node, "model_listing"), read(node, "model_index"),
                             cluster.head.name))


@reads("model_listing")
def test_model_same_as_head(follower, head, cluster):
    mine, heads = read(follower, "model_listing").snapshot(), read(head, "model_listing").snapshot()
    if not mine or not heads:  # nothing to compare: the model's own check fails for the node without it
        not_checked(Code.PREREQUISITE, follower.name if not mine else head.name, f"no snapshot of {cluster.deploy.model_id}",
                    "the model on both nodes to compare", check="test_model_artifacts")
    report(model.judge_same_files(follower.name, head.name, mine, heads))


def sized(node, cluster):
    return model.size(*read(node, "model_sizing_files"), cluster)


@reads("model_sizing_files")
def test_memory_fit(node, cluster, measurements):
    fit, error = sized(node, cluster)
    if fit is not None:
        measurements("memory need per rank", node.name, fit.need_gib, "GiB")
    report(model.judge_fit(node.name, cluster.deploy.model_id, fit, error))


@reads("model_sizing_files", "meminfo")
def test_memory_available(node, cluster):
    fit, _ = sized(node, cluster)
    if fit is None or not fit.ok:  # free memory will not help a model that does not fit the node at all
        not_checked(Code.PREREQUISITE, node.name, f"{cluster.deploy.model_id} does not fit this node at all",
                    "a model that fits the node", check="test_memory_fit")
    report(model.judge_available(node.name, read(node, "meminfo"), fit.need_gib, cluster.expect.memory_margin_gib))
