"""Reachability over each link, judged from the run's probes: ping, SSH between nodes as the same user, required ports."""

from ..cluster import Link
from ..remedies import Code
from ..verdict import Finding


def judge_ping(src: str, src_link: Link, dst: str, dst_link: Link, rc: int, stdout: str, stderr: str) -> list[Finding]:
    return [] if rc == 0 else [Finding(Code.PING, f"{src}:{src_link.netdev}", f"no reply from {dst_link.ip} "
                                       f"({(stdout.strip().splitlines() or [''])[-1] or stderr.strip()})", "replies",
                                       netdev=src_link.netdev, peer=f"{dst} {dst_link.ip}")]


def judge_ssh_mesh(src: str, dst: str, dst_link: Link, user: str, rc: int, stdout: str, stderr: str) -> list[Finding]:
    seen = stdout.strip()
    if rc == 0 and seen == dst:
        return []
    said = seen or (stderr.strip().splitlines()[-1] if stderr.strip() else "no answer")
    return [Finding(Code.SSH_MESH, f"{src}->{dst}", f"`ssh {dst_link.ip} hostname` as {user}: {said}",
                    f"{dst}, without a password", node=src, peer=f"{dst} ({dst_link.ip})")]


def judge_port(src: str, src_link: Link, dst: str, dst_link: Link, port: int, ok: int, why: str, timeout_s: float,
               source: str) -> list[Finding]:
    """ok: 0 when the connection from src's link address to dst's link address and port succeeded."""
    if ok == 0:
        return []
    ip = dst_link.ip
    dropped = "timed out" in why or "TimeoutError" in why
    verdict = "dropped (a firewall)" if dropped else "refused" if "refused" in why.lower() else why
    seen = (f"connection from {src} ({src_link.ip}) to {ip}:{port} {verdict} after {timeout_s:g} s" if dropped
            else f"connection to {ip}:{port}: {verdict}")
    return [Finding(Code.PORT_BLOCKED, f"{dst}:{port}/tcp", seen, f"port {port}/tcp open from the peer link", port=port, source=source)]
