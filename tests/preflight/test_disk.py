"""Disk: free space where the Hugging Face cache and docker's data live covers what is still to be written there
(the model's missing bytes, the image if it is not loaded) and a margin; one shard read with direct I/O per node, warned
when a node reads more than twice as slowly as the fastest or would load the model past the distributed timeout."""

import pytest

from gb10check.checks import disk
from gb10check.gather import DOCKER_ROOT, own_shard_read_rate, peer_shard_read_rate, read, reads
from gb10check.remedies import Code
from gb10check.verdict import not_checked, report

pytestmark = pytest.mark.preflight


def image_bytes(node) -> int | None:
    """The deployment image's size on the node (docker image inspect's Size), or None when it is not loaded there."""
    image = read(node, "image").info
    return int(image.size_gib * disk.GIB) if image is not None and image.size_gib is not None else None


@reads("disk_free", "model_index", "model_listing", "image")
def test_disk_space(node, head, cluster):
    paths = {"the Hugging Face cache": cluster.deploy.hf_cache, "docker's data": DOCKER_ROOT}
    by_path = {r.path: r for r in read(node, "disk_free") if r.avail_bytes is not None}
    missing = [p for p in paths.values() if p not in by_path]
    if missing:
        not_checked(Code.GARBLED, node.name, f"df reported no free space for {', '.join(missing)}", "df's figure for each path",
                    command="df -B1 --output=target,avail PATH", kind="df")
    free = {what: (by_path[p].target, by_path[p].avail_bytes) for what, p in paths.items()}
    # A follower without the model: rank 0's index says how much is still to come.
    total = disk.index_total_size(read(node, "model_index")) or disk.index_total_size(read(head, "model_index"))
    present = disk.blob_bytes(read(node, "model_listing"))
    mine, heads = image_bytes(node), image_bytes(head)
    needs = {"the Hugging Face cache": None if total is None else max(0, total - present),
             "docker's data": 0 if mine is not None else heads}
    unknown = {"the Hugging Face cache": (f"the size of {cluster.deploy.model_id} is unknown (no model.safetensors.index.json "
                                          f"with its total_size on {node.name} or {head.name})",
                                          "download the model, or at least its model.safetensors.index.json, to the cache"),
               "docker's data": (f"{cluster.deploy.image} is neither on {node.name} nor on {head.name}: its size is unknown",
                                 f"load {cluster.deploy.image} on {head.name} (see test_image)")}
    report(disk.judge_disk(node.name, free, needs, (total or 0) + (mine or heads or 0), unknown))


@reads("model_index")
def test_shard_read_rate(node, cluster):
    model_total = disk.index_total_size(read(node, "model_index"))
    direct, mine = own_shard_read_rate(node)
    # The others' direct reads (a cached read measures memory); a node that cannot be read fails its own checks, not this one.
    rates = [(n.name, r[2]) for n in cluster.by_rank() if (r := peer_shard_read_rate(node, n.name)) and r[1] and r[2] is not None]
    report(disk.judge_read_rate(node.name, mine, max(rates, key=lambda x: x[1]) if rates else None, model_total,
                                cluster.deploy.distributed_timeout_s, direct))
