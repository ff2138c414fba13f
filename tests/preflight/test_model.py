"""Model artifacts and unified memory: the checkpoint is complete and alike on every node, and it fits."""

import pytest

from gb10check import gather
from gb10check.checks import model
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


def snapshot_file(node, cluster, name) -> str | None:
    out = gather.result(node, gather.snapshot_file(cluster, name))
    return out.stdout if out.rc == 0 else None


def listing(node, cluster) -> model.CacheListing:
    out = gather.result(node, gather.model_listing(cluster))
    return model.parse_listing(out.stdout if out.rc == 0 else "")


def test_model_artifacts(node, cluster):
    report(model.judge_cache(node.name, cluster.deploy.model_id, listing(node, cluster),
                             snapshot_file(node, cluster, "model.safetensors.index.json")))


def test_model_same_as_head(follower, head, cluster):
    report(model.judge_same_files(follower.name, head.name, listing(follower, cluster).snapshot(), listing(head, cluster).snapshot()))


def sized(node, cluster):
    config, index = snapshot_file(node, cluster, "config.json"), snapshot_file(node, cluster, "model.safetensors.index.json")
    if config is None or index is None:
        pytest.skip(f"{node.name}: no config.json and index for {cluster.deploy.model_id} to size (see test_model_artifacts)")
    return model.size(config, index, cluster)


def test_memory_fit(node, cluster, measurements):
    fit, error = sized(node, cluster)
    if fit is not None:
        measurements("memory need per rank", node.name, fit.need_gib, "GiB")
    report(model.judge_fit(node.name, cluster.deploy.model_id, fit, error))


def test_memory_available(node, cluster):
    fit, _ = sized(node, cluster)
    if fit is None or not fit.ok:
        pytest.skip(f"{node.name}: {cluster.deploy.model_id} does not fit this node at all; free memory will not help "
                    "(see test_memory_fit)")
    meminfo = gather.parsed(node, "meminfo", gather.MEMINFO)
    report(model.judge_available(node.name, meminfo, fit.need_gib, cluster.expect.memory_margin_gib))
