"""The netplan step: each node's QSFP links as /etc/netplan/40-cx7.yaml, from the cluster definition.

Rendered with each link's exact address (the field report used `link-local: [ ipv4 ]`, which lets the
kernel pick a 169.254 address; the cluster file names the address every other step relies on, so it is
pinned here). The difference with the node's file is shown first; the file is installed root-owned with
mode 600 (netplan warns about, and the preflight fails, anything readable by others); `netplan apply`;
then every link must hold its address within 20 s. On failure the rollback command is printed.
Idempotent: a node whose file, mode and addresses are right is left alone.
"""

import shlex

from rich.console import Console

from ..cluster import Cluster, Node
from ..facts import ip
from ..facts._text import ParseError
from ..poll import wait_until
from ..remote import RemoteError, RemoteNode
from . import converge
from .converge import exit_code, install_file, show_change

BACKUP = ".gb10check-bak"


def render(node: Node) -> str:
    lines = ["# Rendered by gb10check from the cluster definition: the QSFP links of " + node.name,
             "network:", "  version: 2", "  ethernets:"]
    for link in node.links:
        lines += [f"    {link.netdev}:", f"      addresses: [ {link.address} ]"] + ([f"      mtu: {link.mtu}"] if link.mtu else [])
    return "\n".join(lines) + "\n"


def missing_addresses(remote: RemoteNode) -> list[str]:
    """The node's link addresses that are not on their interface now."""
    out = remote.run("ip -j addr")
    try:
        have = {i.name: set(i.ipv4) for i in ip.parse_json(out.stdout)}
    except ParseError:
        have = {}  # unreadable now: every address counts as missing, and the step says which
    return [f"{link.netdev} {link.address}" for link in remote.links if str(link.address) not in have.get(link.netdev, set())]


def rollback_command(path: str, had_file: bool) -> str:
    if had_file:
        return f"sudo install -m 600 -o root -g root {path}{BACKUP} {path} && sudo netplan apply"
    return f"sudo rm {path} && sudo netplan apply"


def step(cluster: Cluster, nodes: list[RemoteNode], check_only: bool = False, console: Console | None = None,
         settle_s: float = 20) -> int:
    """0: every node has (now) its file, mode 600 and its addresses; 1: --check found a change; 2: an error."""
    console = console or converge.console()
    path = cluster.expect.netplan_file
    q = shlex.quote(path)
    changed = errors = 0
    for remote in nodes:
        want = render(remote.spec)
        try:
            current = remote.run(f"cat {q}", sudo=True)
            have = current.stdout if current.rc == 0 else None
            mode = remote.run(f"stat -c %a {q}", sudo=True).stdout.strip() if have is not None else None
            missing = missing_addresses(remote)
            if have == want and mode == "600" and not missing:
                console.print(f"[green]unchanged[/] {remote.name}:{path} (mode 600, every address up)")
                continue
            changed += 1
            verb = "would change" if check_only else "changing"
            if have != want:
                show_change(console, f"{remote.name}:{path}", have, want, check_only)
            if mode not in (None, "600"):
                console.print(f"[yellow]{verb}[/] {remote.name}:{path} mode {mode} -> 600")
            if missing:
                console.print(f"[yellow]{verb}[/] {remote.name}: netplan apply (not up now: {', '.join(missing)})")
            if check_only:
                continue
            if have is not None:
                remote.output(f"cp -p {q} {q}{BACKUP}", sudo=True)
            install_file(remote, path, want, mode="600")
            applied = remote.run("netplan apply", sudo=True, timeout=120)
            wait_until(lambda: not missing_addresses(remote), settle_s, interval_s=0.5)
            missing = missing_addresses(remote)
            if applied.rc != 0 or missing:
                errors += 1
                why = f"netplan apply exited {applied.rc}: {(applied.stderr or applied.stdout).strip()[-300:]}" if applied.rc \
                    else f"after netplan apply, not up within {settle_s:.0f} s: {', '.join(missing)}"
                console.print(f"[red]failed[/] {remote.name}: {why}\n  rollback: {rollback_command(path, have is not None)}")
                continue
            console.print(f"[green]applied[/] {remote.name}: {', '.join(f'{l.netdev} {l.address}' for l in remote.links)} up")
        except RemoteError as exc:
            errors += 1
            converge.error(console, exc)
    return exit_code(errors, check_only, changed)
