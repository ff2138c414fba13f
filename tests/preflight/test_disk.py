"""Disk: free space where the Hugging Face cache and docker's data live covers what is still to be written there
(the model's missing bytes, the image if it is not loaded) and a margin; one shard read with direct I/O per node, warned
when a node reads more than twice as slowly as the fastest or would load the model past the distributed timeout."""

import pytest

from gb10check import gather
from gb10check.checks import disk, model
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


def image_bytes(node, cluster) -> int | None:
    """The deployment image's size on the node (docker image inspect's Size), or None when it is not loaded there."""
    out = gather.result(node, gather.image_inspect(cluster.deploy.image))
    image, _ = gather.parse_or_error("docker_image_inspect", out.stdout) if out.rc == 0 else (None, None)
    return int(image.size_gib * disk.GIB) if image is not None and image.size_gib is not None else None


def model_total(node, cluster) -> int | None:
    out = gather.result(node, gather.snapshot_file(cluster, "model.safetensors.index.json"))
    return disk.index_total_size(out.stdout) if out.rc == 0 else None


def test_disk_space(node, head, cluster):
    paths = {"the Hugging Face cache": cluster.deploy.hf_cache, "docker's data": gather.DOCKER_ROOT}
    rows = gather.parsed(node, "df", gather.disk_free(list(paths.values())))
    by_path = {r.path: r for r in rows if r.avail_bytes is not None}
    free = {what: (by_path[p].target, by_path[p].avail_bytes) for what, p in paths.items() if p in by_path}
    if not free:
        pytest.skip(f"{node.name}: df reported no free space for {', '.join(paths.values())}")
    total = model_total(node, cluster) or model_total(head, cluster)  # a follower without the model: rank 0's index
    listing = gather.result(node, gather.model_listing(cluster))
    present = disk.blob_bytes(model.parse_listing(listing.stdout if listing.rc == 0 else ""))
    mine, heads = image_bytes(node, cluster), image_bytes(head, cluster)
    needs = {"the Hugging Face cache": max(0, (total or 0) - present), "docker's data": (heads or 0) if mine is None else 0}
    report(disk.judge_disk(node.name, free, needs, (total or 0) + (mine or heads or 0)))


def test_shard_read_rate(node, cluster):
    shard, direct, mine, why = gather.shard_read_rate(node)
    if shard is None:
        pytest.skip(f"{node.name}: no safetensors shard of {cluster.deploy.model_id} to read (see test_model_artifacts)")
    if mine is None:
        pytest.skip(f"{node.name}: dd gave no rate reading {shard}: {why}")
    # The others' direct reads (a cached read measures memory); a node that cannot be read fails its own checks, not this one.
    rates = [(n.name, r[2]) for n in cluster.by_rank() if (r := gather.peer_shard_read_rate(node, n.name)) and r[1] and r[2] is not None]
    report(disk.judge_read_rate(node.name, mine, max(rates, key=lambda x: x[1]) if rates else None, model_total(node, cluster),
                                cluster.deploy.distributed_timeout_s, direct))
