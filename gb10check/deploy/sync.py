"""Artifact sync from rank 0 to every other node, over the first QSFP link (as the field report did):

- the image: `docker save IMAGE | ssh PEER docker load` (no compression: the link is faster than any
  compressor), then the RootFS layers must equal rank 0's (the image ID may differ, the layers may not);
- the Hugging Face cache of the model: `chmod -R a+rX` (the container reads it as another user), then
  `rsync -a` without -L (snapshots/ keeps linking into blobs/; -L would double the disk use) and
  without -z, then every file and size must equal rank 0's and nothing may be dereferenced.

It runs on rank 0 through the suite's SSH layer; rank 0 reaches its peers with the cluster key that
`gb10check ssh-keys` installed. Each artifact already equal on a node is left alone (idempotent), and
what would be copied is said before it is.
"""

import shlex
import threading
import time

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn, TransferSpeedColumn

from ..checks import model
from ..cluster import Cluster
from ..facts.docker import Image, parse_image
from ..facts._text import ParseError
from ..remote import RemoteError, RemoteNode
from . import converge

SSH = "ssh -o BatchMode=yes -o ConnectTimeout=10"


class SyncError(Exception):
    pass


def image_of(node: RemoteNode, image: str) -> Image | None:
    out = node.run(f"docker image inspect {shlex.quote(image)}")
    if out.rc != 0:
        return None
    try:
        return parse_image(out.stdout)
    except ParseError as exc:
        raise SyncError(f"{node.name}: {exc}") from None


def listing(node: RemoteNode, d: str) -> model.CacheListing | None:
    out = node.run(model.LISTING.format(dir=shlex.quote(d)))
    return model.parse_listing(out.stdout) if out.rc == 0 else None


def _transfer(head: RemoteNode, command: str, timeout_s: float, watch, total: int, label: str, console: Console) -> float:
    """Run `command` on rank 0 in a thread; meanwhile `watch()` (bytes arrived so far, or None) drives the bar."""
    result: dict = {}

    def work() -> None:
        try:
            result["out"] = head.run(f"bash -o pipefail -c {shlex.quote(command)}", timeout=timeout_s)
        except RemoteError as exc:
            result["error"] = exc

    start = time.monotonic()
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    columns = [TextColumn(label), BarColumn(), DownloadColumn(binary_units=True), TransferSpeedColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(label, total=total or None)
        while thread.is_alive():
            thread.join(0.5)
            arrived = watch() if watch else None
            if arrived is not None:
                progress.update(task, completed=min(arrived, total))
        progress.update(task, completed=total)
    if "error" in result:
        raise SyncError(str(result["error"]))
    out = result["out"]
    if out.rc != 0:
        raise SyncError(f"{head.name}: `{command}` exited {out.rc}: {(out.stderr or out.stdout).strip()[-400:]}")
    return time.monotonic() - start


def sync_image(cluster: Cluster, head: RemoteNode, peer: RemoteNode, peer_ip: str, check_only: bool, console: Console) -> bool:
    """True when something was (or would be) copied."""
    name = cluster.deploy.image
    heads = image_of(head, name)
    if heads is None:
        raise SyncError(f"{head.name} (rank 0) has no image {name}: load or build it there first; every node copies it from rank 0")
    mine = image_of(peer, name)
    if mine is not None and mine.layers == heads.layers:
        console.print(f"[green]unchanged[/] image {name} on {peer.name} ({len(heads.layers)} layers as on {head.name})")
        return False
    why = "missing" if mine is None else f"{len(mine.layers)} layers differ from rank 0's {len(heads.layers)}"
    size = int((heads.size_gib or 0) * 2**30)
    console.print(f"[yellow]{'would copy' if check_only else 'copying'}[/] image {name} ({size / 2**30:.2f} GiB) {head.name} -> "
                  f"{peer.name} over {peer_ip}: docker save | docker load ({why})")
    if check_only:
        return True
    took = _transfer(head, f"docker save {shlex.quote(name)} | {SSH} {peer_ip} docker load", 3600, None, size,
                     f"image -> {peer.name}", console)
    after = image_of(peer, name)
    if after is None or after.layers != heads.layers:
        raise SyncError(f"{peer.name}: after docker load the RootFS layers of {name} still differ from {head.name}'s")
    console.print(f"  {size / 2**20:.0f} MiB in {took:.1f} s ({size / 2**20 / max(took, 0.001):.0f} MiB/s); layers verified")
    return True


def cache_difference(cluster: Cluster, peer: str, head: str, mine: model.CacheListing | None,
                     heads: model.CacheListing) -> str | None:
    """Why the peer's copy is not rank 0's (None: it is): missing, a file or size that differs, copies instead of
    links, files the container cannot read."""
    if mine is None or not mine.snapshot():
        return "missing"
    differ = model.judge_same_files(peer, head, mine.snapshot(), heads.snapshot())
    if differ:
        return differ[0].seen
    for f in model.judge_cache(peer, cluster.deploy.model_id, mine, None):
        if f.code.value == "model-dereferenced":
            return f"{f.seen}: snapshot files are copies, not links into blobs/"
        if f.code.value == "model-unreadable":
            return f.seen
    return None


def sync_cache(cluster: Cluster, head: RemoteNode, peer: RemoteNode, peer_ip: str, check_only: bool, console: Console) -> bool:
    d = model.model_dir(cluster.deploy.hf_cache, cluster.deploy.model_id)
    heads = listing(head, d)
    if heads is None or not heads.snapshot():
        raise SyncError(f"{head.name} (rank 0) has no snapshot of {cluster.deploy.model_id} in {d}: download it there first")
    mine = listing(peer, d)
    why = cache_difference(cluster, peer.name, head.name, mine, heads)
    if why is None:
        console.print(f"[green]unchanged[/] {d} on {peer.name} ({len(heads.snapshot())} files as on {head.name})")
        return False
    console.print(f"[yellow]{'would copy' if check_only else 'copying'}[/] {d} {head.name} -> {peer.name} over {peer_ip}: "
                  f"rsync -a, links kept, no compression ({why})")
    if check_only:
        return True
    q = shlex.quote(d)  # rsync -a turns copies back into links, and --delete drops what rank 0 does not have
    command = (f"chmod -R a+rX {q} && {SSH} {peer_ip} mkdir -p {q} && "
               f"rsync -a --delete -e {shlex.quote(SSH)} {q}/ {peer_ip}:{q}/")

    def arrived() -> int | None:
        out = peer.run(f"du -sb {q} 2>/dev/null | cut -f1")
        return int(out.stdout.strip()) if out.rc == 0 and out.stdout.strip().isdigit() else None

    size_out = head.run(f"du -sb {q} | cut -f1")
    total = int(size_out.stdout.strip()) if size_out.stdout.strip().isdigit() else 0
    took = _transfer(head, command, 6 * 3600, arrived, total, f"model -> {peer.name}", console)
    left = cache_difference(cluster, peer.name, head.name, listing(peer, d), heads)
    if left:
        raise SyncError(f"{peer.name}: after rsync {d} still differs from {head.name}'s: {left}")
    console.print(f"  {total / 2**20:.0f} MiB in {took:.1f} s; sizes verified, snapshots/ links into blobs/")
    return True


def run(cluster: Cluster, nodes: list[RemoteNode], check_only: bool = False, console: Console | None = None) -> int:
    """0: every node has rank 0's image and model (now); 1: --check found something to copy; 2: an error."""
    console = console or converge.console()
    by_name = {n.name: n for n in nodes}
    head = by_name[cluster.head.name]
    changed = False
    try:
        for f in cluster.followers:
            peer_ip = f.links[0].ip
            changed |= sync_image(cluster, head, by_name[f.name], peer_ip, check_only, console)
            changed |= sync_cache(cluster, head, by_name[f.name], peer_ip, check_only, console)
    except SyncError as exc:
        console.print(f"[red]sync failed[/] {escape(str(exc))}")
        return 2
    except RemoteError as exc:
        converge.error(console, exc, "sync failed")
        return 2
    return 1 if check_only and changed else 0
