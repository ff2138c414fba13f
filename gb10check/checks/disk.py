"""Disk: where the Hugging Face cache and docker's data live, free space covers what is still to be written there
(the model's missing bytes, the image if it is not loaded) and a margin (seed: the fuller, slower disk made one
node load in 850 s against 300 s; a full one stops rsync with "No space left on device")."""

import json

from ..remedies import Code
from ..verdict import Finding

GIB = 2**30
MARGIN_FRACTION = 0.10  # of the model and image together: logs, compile caches (vLLM, flashinfer, Triton), a re-download
MARGIN_MIN = 2 * GIB


def index_total_size(index_text: str | None) -> int | None:
    """model.safetensors.index.json's metadata.total_size (bytes of all shards), or None."""
    try:
        size = json.loads(index_text or "")["metadata"]["total_size"]
    except (ValueError, KeyError, TypeError):
        return None
    return int(size) if isinstance(size, (int, float)) and size > 0 else None


def blob_bytes(listing) -> int:
    """Bytes already in the model's cache folder (its blobs; snapshots only link into them)."""
    return sum(size for path, (_, size) in listing.files.items() if path.startswith("./blobs/"))


def gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"


def judge_disk(node: str, free: dict[str, tuple[str, int]], needs: dict[str, int], totals: int) -> list[Finding]:
    """free: what -> (mount point, bytes free); needs: what -> bytes still to write there. What shares a filesystem
    adds up. Below the need fails; below the need plus the margin warns."""
    margin = max(MARGIN_MIN, int(totals * MARGIN_FRACTION))
    by_mount: dict[str, tuple[int, list[str], int]] = {}
    for what, (mount, avail) in free.items():
        need, names, _ = by_mount.get(mount, (0, [], avail))
        by_mount[mount] = (need + needs.get(what, 0), names + [what], avail)
    found = []
    for mount, (need, names, avail) in by_mount.items():
        where = " and ".join(names)
        seen = f"{gib(avail)} free on {mount} ({where})"
        if avail < need:
            found.append(Finding(Code.DISK_FULL, node, seen, f"at least {gib(need)} for what is still to be written there",
                                 mount=mount, need=gib(need)))
        elif avail < need + margin:
            found.append(Finding(Code.DISK_LOW, node, seen, f"{gib(need)} still to write + {gib(margin)} margin", warning=True,
                                 mount=mount, need=gib(need + margin)))
    return found
