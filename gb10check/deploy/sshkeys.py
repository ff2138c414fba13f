"""One SSH key for the whole cluster, so every node reaches every other over the link addresses.

Like NVIDIA's discover-sparks, but from the cluster definition instead of avahi, through the suite's
own verified connections: the shared key (ssh.cluster_key, created with paramiko when absent, mode
600) is installed on every node with its public half in authorized_keys; each node's ~/.ssh/config
gets a managed block naming its peers by name and link address; each node's known_hosts gets its
peers' host keys, read over the runner's verified connection (stronger than accept-new: nothing is
trusted on first sight). It refuses to run as root, as the original does. Every change is shown
before it is made (never a private key's content); a second run changes nothing. Afterwards every
node runs a non-interactive `ssh PEER hostname` to every peer over every link.
"""

import base64
import shlex
import subprocess
from pathlib import Path

import paramiko
from rich.console import Console

from ..cluster import Cluster
from ..remote import RemoteError, RemoteNode
from . import converge
from .converge import show_change

BEGIN, END = "# BEGIN gb10check cluster peers (managed: edits inside are replaced)", "# END gb10check cluster peers"
KEY_NAME = "id_ed25519_shared"


class SshStepError(Exception):
    pass


def ensure_key(path: Path, console: Console) -> tuple[str, str]:
    """(private key text, public key line); created with paramiko when absent."""
    if not path.exists():
        console.print(f"[yellow]creating[/] the cluster key {path} (ed25519, no passphrase, mode 600)")
        path.parent.mkdir(parents=True, exist_ok=True)
        # paramiko reads ed25519 keys but cannot make them: ssh-keygen does, with no prompt.
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gb10check-cluster-key", "-f", str(path)],
                       check=True, capture_output=True, timeout=60)
    path.chmod(0o600)
    pub_path = path.with_name(path.name + ".pub")
    private = path.read_text()
    if pub_path.exists():
        pub = pub_path.read_text().strip()
    else:
        key = paramiko.Ed25519Key.from_private_key_file(str(path))
        pub = f"{key.get_name()} {key.get_base64()} gb10check-cluster-key"
        pub_path.write_text(pub + "\n")
    return private, pub


def peers_block(cluster: Cluster, me: str) -> str:
    lines = [BEGIN]
    for peer in cluster.by_rank():
        if peer.name == me:
            continue
        names = " ".join([peer.name] + [l.ip for l in peer.links])
        lines += [f"Host {names}", f"    HostName {peer.links[0].ip}", f"    User {cluster.ssh.user}",
                  f"    IdentityFile ~/.ssh/{KEY_NAME}", "    IdentitiesOnly yes", "    StrictHostKeyChecking yes", ""]
    return "\n".join(lines + [END]) + "\n"


def with_block(current: str, block: str) -> str:
    if BEGIN in current and END in current:
        head, rest = current.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        return head + block + tail
    return block + current  # first: ssh takes the first value it finds, and a user's `Host *` must not shadow the peers


def with_lines(current: str, lines: list[str]) -> str:
    have = set(current.splitlines())
    missing = [line for line in lines if line not in have]
    if not missing:
        return current
    return current + ("" if not current or current.endswith("\n") else "\n") + "\n".join(missing) + "\n"


def read(node: RemoteNode, rel: str) -> str:
    r = node.run(f"cat ~/{rel}")
    return r.stdout if r.rc == 0 else ""


def write(node: RemoteNode, rel: str, text: str, mode: str) -> None:
    blob = base64.b64encode(text.encode()).decode()
    node.output(f"umask 077 && mkdir -p ~/.ssh && chmod 700 ~/.ssh && printf %s {blob} | base64 -d > ~/{rel}.gb10check "
                f"&& chmod {mode} ~/{rel}.gb10check && mv ~/{rel}.gb10check ~/{rel}")


def run(cluster: Cluster, nodes: list[RemoteNode], key_path: Path, check_only: bool = False, console: Console | None = None) -> int:
    """0: every node has (or now has) the key, config and peers' host keys, and the mesh answers; 1: --check found
    changes; 2: errors (named)."""
    console = console or converge.console()
    if cluster.ssh.user == "root":
        raise SshStepError("refusing to set up SSH for root (as NVIDIA's discover-sparks does): use the cluster's normal user")
    private, pub = ensure_key(key_path, console) if not check_only or key_path.exists() else (None, None)
    if private is None:
        console.print(f"[yellow]would create[/] the cluster key {key_path}")
        return 1
    host_keys: dict[str, str] = {}
    errors = changed = 0
    for node in nodes:
        try:
            host_keys[node.name] = node.output("cat /etc/ssh/ssh_host_ed25519_key.pub").split()[:2]
        except RemoteError as exc:
            converge.error(console, exc)
            errors += 1
    if errors:
        return 2
    for node in nodes:
        spec = cluster.node(node.name)
        known = [f"{','.join([p.name] + [l.ip for l in p.links])} {' '.join(host_keys[p.name])}"
                 for p in cluster.nodes if p.name != node.name]
        try:
            wanted = [
                (f".ssh/{KEY_NAME}", None, private, "600", True),
                (f".ssh/{KEY_NAME}.pub", None, pub + "\n", "644", False),
                (".ssh/authorized_keys", lambda cur: with_lines(cur, [pub]), None, "600", False),
                (".ssh/config", lambda cur: with_block(cur, peers_block(cluster, spec.name)), None, "600", False),
                (".ssh/known_hosts", lambda cur: with_lines(cur, known), None, "600", False),
            ]
            for rel, edit, text, mode, secret in wanted:
                have = read(node, rel)
                want = edit(have) if edit else text
                if not show_change(console, f"{node.name}:~/{rel}", have, want, check_only, secret=secret):
                    continue
                changed += 1
                if not check_only:
                    write(node, rel, want, mode)
        except RemoteError as exc:
            converge.error(console, exc)
            errors += 1
    if errors:
        return 2
    if check_only:
        return 1 if changed else 0
    return verify(cluster, nodes, console)


def verify(cluster: Cluster, nodes: list[RemoteNode], console: Console) -> int:
    """From every node, `ssh -o BatchMode=yes PEER hostname` over every link of every peer."""
    bad = 0
    for node in nodes:
        for peer in cluster.nodes:
            if peer.name == node.name:
                continue
            for link in peer.links:
                r = node.run(f"ssh -o BatchMode=yes -o ConnectTimeout=5 {shlex.quote(link.ip)} hostname", timeout=20)
                got = r.stdout.strip()
                if r.rc == 0 and got == peer.name:
                    console.print(f"[green]ok[/] {node.name} -> {peer.name} over {link.netdev} ({link.ip})")
                else:
                    bad += 1
                    console.print(f"[red]failed[/] {node.name} -> {peer.name} over {link.netdev} ({link.ip}): "
                                  f"{(r.stderr or r.stdout).strip().splitlines()[-1:] or ['exit ' + str(r.rc)]}")
    return 2 if bad else 0
