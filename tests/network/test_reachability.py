"""Reachability over each link: ping, SSH between nodes as the same user, and the ports vLLM needs really open."""

import pytest

from gb10check.gather import exclusive
from gb10check.remedies import Code
from gb10check.verdict import Finding, report

pytestmark = pytest.mark.network

CONNECT_TIMEOUT_S = 3


def test_ping(path):
    out = path.src.run(f"ping -c 2 -i 0.2 -W 1 -I {path.src_link.netdev} {path.dst_link.ip}", timeout=10)
    report([] if out.rc == 0 else
           [Finding(Code.PING, f"{path.src.name}:{path.src_link.netdev}", f"no reply from {path.dst_link.ip} "
                    f"({(out.stdout.strip().splitlines() or [''])[-1] or out.stderr.strip()})", "replies",
                    netdev=path.src_link.netdev, peer=f"{path.dst.name} {path.dst_link.ip}")])


def test_ssh_mesh(path):
    ip = path.dst_link.ip
    out = path.src.run(f"ssh -o BatchMode=yes -o ConnectTimeout=5 -o StrictHostKeyChecking=yes {ip} hostname", timeout=20)
    seen = out.stdout.strip()
    report([] if out.rc == 0 and seen == path.dst.name else
           [Finding(Code.SSH_MESH, f"{path.src.name}->{path.dst.name}", f"`ssh {ip} hostname` as {path.src.ssh.user}: "
                    f"{seen or out.stderr.strip().splitlines()[-1] if out.stderr.strip() else seen or 'no answer'}",
                    f"{path.dst.name}, without a password", node=path.src.name, peer=f"{path.dst.name} ({ip})")])


LISTEN = ("nohup python3 -c 'import socket,time\n"
          "try:\n s=socket.create_server((\"{ip}\",{port})); s.settimeout(1); end=time.time()+{window}\n"
          " while time.time()<end:\n  try: s.accept()[0].close()\n  except OSError: pass\n"
          "except OSError as e: print(\"bind\", e.errno)' gb10check-listen-{ip}-{port} >/tmp/gb10check-listen-{ip}-{port}.log 2>&1 &")
PROBE = ("python3 -c 'import socket,sys\ntry: socket.create_connection((\"{ip}\",{port}),timeout={timeout},source_address=(\"{src}\",0))\n"
         "except OSError as e: print(type(e).__name__, e); sys.exit(1)'")


def test_port_open(path, required_port, cluster):
    """A listener on the target's link address, a connection from the peer over the link: a firewall drop shows."""
    dst, ip, port = path.dst, path.dst_link.ip, required_port
    with exclusive(f"listen-{dst.name}-{ip}-{port}"):  # under -n, other sources test the same address and port
        dst.run(LISTEN.format(ip=ip, port=port, window=CONNECT_TIMEOUT_S + 5))
        try:
            out = path.src.run("sleep 0.3; " + PROBE.format(ip=ip, port=port, timeout=CONNECT_TIMEOUT_S, src=path.src_link.ip),
                               timeout=CONNECT_TIMEOUT_S + 10)
        finally:
            dst.run(f"pkill -f gb10check-listen-{ip}-{port} || true")
    if out.rc == 0:
        return
    ping = path.src.run(f"ping -c 1 -W 1 -I {path.src_link.netdev} {ip}", timeout=10)
    if ping.rc != 0:  # ufw lets ICMP echo through: no ping means the link, not the firewall
        pytest.skip(f"cannot tell whether {dst.name} port {port} is open: {path.src.name} does not reach {ip} over "
                    f"{path.src_link.netdev} at all (see test_ping)")
    why = out.stdout.strip() or out.stderr.strip()
    verdict = "dropped (a firewall)" if "timed out" in why else "refused" if "refused" in why.lower() else why
    source = next((str(s) for s in cluster.expect.firewall.sources if path.src_link.address.ip in s), str(path.src_link.address.network))
    report([Finding(Code.PORT_BLOCKED, f"{dst.name}:{port}/tcp", f"connection from {path.src.name} ({path.src_link.ip}) to {ip}:{port} "
                    f"{verdict} after {CONNECT_TIMEOUT_S} s" if "timed out" in why else f"connection to {ip}:{port}: {verdict}",
                    f"port {port}/tcp open from the peer link", port=port, source=source)])
