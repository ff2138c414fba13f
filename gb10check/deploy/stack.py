"""Render the compose file and each node's .env, show the difference with what is on the node, push them."""

import base64
import shlex

from rich.console import Console

from .. import compose
from ..cluster import Cluster
from ..remote import RemoteError, RemoteNode
from . import converge
from .converge import show_change


def wanted_files(cluster: Cluster, node_name: str) -> dict[str, str]:
    d = cluster.deploy
    node = cluster.node(node_name)
    return {f"{d.workdir}/{d.compose_file}": compose.render(cluster), f"{d.workdir}/.env": compose.env_file(cluster, node)}


def push(cluster: Cluster, nodes: list[RemoteNode], check_only: bool = False, console: Console | None = None) -> int:
    """Returns 0 when every node has (or now has) the rendered files; 1 when --check found a difference; 2 on errors."""
    console = console or converge.console()
    changed = errors = 0
    for node in nodes:
        for path, text in wanted_files(cluster, node.name).items():
            try:
                current = node.run(f"cat {shlex.quote(path)}")
                have = current.stdout if current.rc == 0 else None
                if not show_change(console, f"{node.name}:{path}", have, text, check_only):
                    continue
                changed += 1
                if not check_only:
                    blob = base64.b64encode(text.encode()).decode()
                    node.output(f"mkdir -p {shlex.quote(path.rsplit('/', 1)[0])} && printf %s {blob} | base64 -d > {shlex.quote(path)}.gb10check "
                                f"&& mv {shlex.quote(path)}.gb10check {shlex.quote(path)}")
            except RemoteError as exc:
                errors += 1
                converge.error(console, exc)
    if errors:
        return 2
    return 1 if (check_only and changed) else 0
