"""Disk: free space where the Hugging Face cache and docker's data live covers what is still to be written there
(the model's missing bytes, the image if it is not loaded) and a margin."""

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
