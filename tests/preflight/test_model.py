"""Model artifacts and unified memory: the checkpoint is complete and alike on every node, and it fits."""

import json

import pytest

from gb10check.checks import model
from gb10check.facts import parse
from gb10check.sizing import SizingError, fit
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


def listing(node, cluster):
    d = model.model_dir(cluster.deploy.hf_cache, cluster.deploy.model_id)
    out = node.run(model.LISTING.format(dir=d))
    return model.parse_listing(out.stdout if out.rc == 0 else ""), d


def snapshot_file(node, d, name) -> str | None:
    out = node.run(f"cat {d}/snapshots/*/{name}")
    return out.stdout if out.rc == 0 else None


def test_model_artifacts(node, cluster):
    files, d = listing(node, cluster)
    report(model.judge_cache(node.name, cluster.deploy.model_id, files, snapshot_file(node, d, "model.safetensors.index.json")))


def test_model_same_as_head(follower, head, cluster):
    mine, heads = listing(follower, cluster)[0].snapshot(), listing(head, cluster)[0].snapshot()
    report(model.judge_same_files(follower.name, head.name, mine, heads))


def node_fit(node, cluster):
    d = model.model_dir(cluster.deploy.hf_cache, cluster.deploy.model_id)  # only two small files: no listing needed
    config, index = snapshot_file(node, d, "config.json"), snapshot_file(node, d, "model.safetensors.index.json")
    if config is None or index is None:
        pytest.skip(f"{node.name}: no config.json and index for {cluster.deploy.model_id} to size (see test_model_artifacts)")
    dep = cluster.deploy
    try:
        return fit(json.loads(config), json.loads(index), dep.tensor_parallel_size, dep.max_model_len, dep.max_num_seqs,
                   dep.gpu_memory_utilization, cluster.expect.memory_gib, dep.container_memory_limit)
    except (SizingError, ValueError) as exc:
        pytest.fail(f"{node.name}: cannot size {dep.model_id}: {exc}", pytrace=False)


def test_memory_fit(node, cluster, measurements):
    f = node_fit(node, cluster)
    measurements("memory need per rank", node.name, f.need_gib, "GiB")
    report(model.judge_fit(node.name, cluster.deploy.model_id, f))


def test_memory_available(node, cluster):
    f = node_fit(node, cluster)
    if not f.ok:
        pytest.skip(f"{node.name}: {cluster.deploy.model_id} does not fit this node at all; free memory will not help "
                    "(see test_memory_fit)")
    meminfo = parse("meminfo", node.output("cat /proc/meminfo"))
    report(model.judge_available(node.name, meminfo, f.need_gib, cluster.expect.memory_margin_gib))
