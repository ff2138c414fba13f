#!/usr/bin/env python3
"""Per-command overhead of the suite's remote layer vs one `ssh` process per command, side by side in one run.

Runs on the simulated cluster (root): `sudo .venv/bin/python bench/remote_overhead.py [N]`.
Prints milliseconds per `true` for: our layer (paramiko, one connection, TCP_NODELAY), the same
layer with Nagle left on (testinfra's default), and `ssh` (OpenSSH, a new connection each time).
"""

import socket
import statistics
import subprocess
import sys
import time

from gb10check.cluster import load_cluster
from gb10check.remote import RemoteNode
from gb10check.sim import control


def per_command_ms(run, n: int) -> float:
    run()  # warm: the connection opens outside the timing
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        run()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    started_here = not control.nodes()
    path = control.up(2, quiet=True) if started_here else control.state_dir() / "cluster.yaml"
    try:
        cluster = load_cluster(path)
        spec = cluster.nodes[1]
        ours = RemoteNode(spec, cluster.ssh)
        ours.output("true")
        nagle = RemoteNode(spec, cluster.ssh)
        nagle.output("true")
        nagle.host.backend.client.get_transport().sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
        ssh = ["ssh", "-i", cluster.ssh.identity_file, "-o", f"UserKnownHostsFile={cluster.ssh.known_hosts}",
               "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", f"{cluster.ssh.user}@{spec.address}", "true"]
        results = {
            "gb10check remote layer (paramiko, one connection, TCP_NODELAY)": per_command_ms(lambda: ours.output("true"), n),
            "same, Nagle on (testinfra's paramiko default)": per_command_ms(lambda: nagle.output("true"), max(10, n // 5)),
            "ssh process per command (OpenSSH, new connection)": per_command_ms(lambda: subprocess.run(ssh, check=True), max(10, n // 5)),
        }
        print(f"median ms per command (`true` on {spec.name}, simulated pair)")
        for what, ms in results.items():
            print(f"  {ms:8.2f} ms  {what}")
        base = results["gb10check remote layer (paramiko, one connection, TCP_NODELAY)"]
        print(f"  ssh per command is {results['ssh process per command (OpenSSH, new connection)'] / base:.1f}x ours")
    finally:
        if started_here:
            control.down(quiet=True)


if __name__ == "__main__":
    main()
