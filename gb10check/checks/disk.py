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


def judge_disk(node: str, free: dict[str, tuple[str, int]], needs: dict[str, int | None], totals: int,
               unknown: dict[str, tuple[str, str]] | None = None) -> list[Finding]:
    """free: what -> (mount point, bytes free); needs: what -> bytes still to write there, None where unknown (then
    unknown[what] says why and how to make it known). What shares a filesystem adds up. Below the need fails; below the
    need plus the margin warns; a filesystem whose need is partly unknown and not already short is not checked."""
    margin = max(MARGIN_MIN, int(totals * MARGIN_FRACTION))
    by_mount: dict[str, tuple[int, list[str], int]] = {}
    for what, (mount, avail) in free.items():
        need, names, _ = by_mount.get(mount, (0, [], avail))
        by_mount[mount] = (need + (needs.get(what) or 0), names + [what], avail)
    found = []
    for mount, (need, names, avail) in by_mount.items():
        where = " and ".join(names)
        seen = f"{gib(avail)} free on {mount} ({where})"
        blind = [w for w in names if w in needs and needs[w] is None]
        if avail < need:
            found.append(Finding(Code.DISK_FULL, node, seen, f"at least {gib(need)} for what is still to be written there",
                                 mount=mount, need=gib(need)))
        elif blind:
            found += [Finding(Code.UNKNOWN_NEED, node, f"{seen}, but {(unknown or {}).get(w, ('its size is unknown', ''))[0]}",
                              f"the size of what is still to be written for {w}", what=f"the size of {w}",
                              how=(unknown or {}).get(w, ("", "see test_model_artifacts and test_image"))[1]) for w in blind]
        elif avail < need + margin:
            found.append(Finding(Code.DISK_LOW, node, seen, f"{gib(need)} still to write + {gib(margin)} margin", warning=True,
                                 mount=mount, need=gib(need + margin)))
    return found


def rate(bytes_per_s: float) -> str:
    """GB/s from 1 GB/s up, MB/s below: a disk read at 4 MB/s is not "0.00 GB/s"."""
    if bytes_per_s >= 1e9:
        return f"{bytes_per_s / 1e9:.2f} GB/s"
    mb = f"{bytes_per_s / 1e6:.1f}"
    return f"{float(mb):.0f} MB/s" if float(mb) >= 10 else f"{mb} MB/s"


def judge_read_rate(node: str, mine: float, fastest: tuple[str, float] | None, model_bytes: int | None, timeout_s: int,
                    direct: bool = True) -> list[Finding]:
    """One shard read with direct I/O: a warning when this node reads more than twice as slowly as the fastest node
    (among the direct reads: a cached read measures memory, so it is compared with nothing), or when loading the whole
    model at this rate would outlast the distributed timeout (the other ranks wait for it)."""
    load = f"; the model's {gib(model_bytes)} load in about {model_bytes / mine:.0f} s here" if model_bytes and mine > 0 else ""
    how = "direct I/O" if direct else "cached read: the filesystem refused O_DIRECT"
    found = []
    if direct and fastest is not None and fastest[0] != node and mine * 2 < fastest[1]:
        theirs = f", {model_bytes / fastest[1]:.0f} s on {fastest[0]}" if model_bytes else ""
        found.append(Finding(Code.DISK_SLOW, node, f"{rate(mine)} reading a shard ({how}), {fastest[1] / mine:.1f}x slower than "
                             f"{fastest[0]} ({rate(fastest[1])}){load}{theirs}", "within 2x of the fastest node", warning=True))
    elif model_bytes and mine > 0 and model_bytes / mine > timeout_s:
        found.append(Finding(Code.DISK_SLOW, node, f"{rate(mine)} reading a shard ({how}){load}",
                             f"the load within --distributed-timeout-seconds {timeout_s}", warning=True))
    return found
