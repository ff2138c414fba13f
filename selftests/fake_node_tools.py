"""Stand-ins for the tools the hold-driver and nm-release-qsfp steps run on a node, for the self-tests that run those steps
over a real sshd on loopback (no NetworkManager, no NVIDIA packages, and no apt changes wanted on this machine).

Each node is a folder: `bin/` (put first on the PATH of that node's sshd sessions) and `state/`, which the tools read and
change: `dpkg` (`PACKAGE WANT ok STATE` lines, as dpkg-query prints them), `nm.json` (NetworkManager's profiles, or
{"running": false}) and `ibdev2netdev` (its output). Every call is appended to `calls` ('sudo:' before the command for one
run through sudo). The tools print what the real ones print in these cases (dpkg-query's -W format and its
`no packages found matching` error, apt-mark's `set on hold.`, nmcli's terse `-t` output with ':' escaped as '\\:', its
`successfully deactivated` and `is not an active connection` answers).
"""

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from . import simbed
from .local_sshd import LocalSshd

REPO = Path(__file__).resolve().parent.parent

SUDO = """#!/bin/sh
# sudo -n CMD...: runs CMD as the user it is (the tests run as root), keeping the stand-ins' PATH (sudo's secure_path would not)
[ "$1" = -n ] && shift
printf 'sudo: %s\\n' "$*" >> "{calls}"
exec "$@"
"""

DPKG_QUERY = """#!{python}
import fnmatch, sys
state = [l.split() for l in open("{state}/dpkg").read().splitlines() if l.strip()]
with open("{calls}", "a") as f:
    f.write("dpkg-query " + " ".join(sys.argv[1:]) + "\\n")
patterns = [a for a in sys.argv[1:] if not a.startswith("-")]
rc = 0
for pattern in patterns:
    hits = [s for s in state if fnmatch.fnmatchcase(s[0], pattern)]
    if not hits:
        print(f"dpkg-query: no packages found matching {{pattern}}", file=sys.stderr)
        rc = 1
    for s in hits:
        print(" ".join(s))
sys.exit(rc)
"""

APT_MARK = """#!{python}
import sys
path = "{state}/dpkg"
state = [l.split() for l in open(path).read().splitlines() if l.strip()]
with open("{calls}", "a") as f:
    f.write("apt-mark " + " ".join(sys.argv[1:]) + "\\n")
if sys.argv[1:2] != ["hold"]:
    sys.exit("apt-mark stand-in: only `apt-mark hold PKG...`")
for name in sys.argv[2:]:
    row = next((s for s in state if s[0] == name and s[3] == "installed"), None)
    if row is None:
        print(f"E: Unable to locate package {{name}}", file=sys.stderr)
        sys.exit(100)
    print(f"{{name}} was already set on hold." if row[1] == "hold" else f"{{name}} set on hold.")
    row[1] = "hold"
open(path, "w").write("".join(" ".join(s) + "\\n" for s in state))
"""

NMCLI = """#!{python}
import json, sys
path = "{state}/nm.json"
nm = json.load(open(path))
args = sys.argv[1:]
with open("{calls}", "a") as f:
    f.write("nmcli " + " ".join(args) + "\\n")
if not nm.get("running", True):
    print("Error: NetworkManager is not running.", file=sys.stderr)
    sys.exit(8)
fields = None
if args[:1] == ["-t"]:
    args = args[1:]
if args[:1] == ["-f"]:
    fields, args = args[1].split(","), args[2:]
esc = lambda v: (v or "").replace("\\\\", "\\\\\\\\").replace(":", "\\\\:")
profiles = nm["profiles"]
find = lambda key: next((p for p in profiles if key in (p["uuid"], p["id"])), None)
if args == ["connection", "show"]:
    for p in profiles:
        print(":".join(esc(p["uuid"] if f == "UUID" else p.get("device") or "") for f in fields))
elif args[:2] == ["connection", "show"]:
    p = find(args[2])
    keys = dict(zip(("connection.id", "connection.type", "connection.interface-name", "connection.autoconnect", "ipv4.method"),
                    ("id", "type", "interface", "autoconnect", "method")))
    for f in fields:
        print(f + ":" + esc(p.get(keys[f])))
elif args[:2] == ["connection", "modify"] and args[3:] == ["connection.autoconnect", "no"]:
    find(args[2])["autoconnect"] = "no"
elif args[:2] == ["connection", "down"]:
    p = find(args[2])
    if not p or not p.get("device"):
        print(f"Error: '{{args[2]}}' is not an active connection.\\nError: no active connection provided.", file=sys.stderr)
        sys.exit(10)
    p["device"] = ""
    print(f"Connection '{{p['id']}}' successfully deactivated (D-Bus active path: /org/freedesktop/NetworkManager/ActiveConnection/7)")
elif args[:2] == ["connection", "delete"]:
    p = find(args[2])
    profiles.remove(p)
    print(f"Connection '{{p['id']}}' ({{p['uuid']}}) successfully deleted.")
else:
    sys.exit(f"nmcli stand-in: not played: {{sys.argv[1:]}}")
json.dump(nm, open(path, "w"))
"""

IBDEV2NETDEV = """#!/bin/sh
cat "{state}/ibdev2netdev"
"""


class FakeNode:
    """A node's stand-in tools and their state, in one folder."""

    def __init__(self, root: Path, dpkg: str = "", nm: dict | None = None, ibdev2netdev: str | None = None):
        self.root = root
        self.bin, self.state, self.calls_file = root / "bin", root / "state", root / "calls"
        self.bin.mkdir(parents=True, exist_ok=True)
        self.state.mkdir(exist_ok=True)
        self.calls_file.write_text("")
        values = {"python": sys.executable, "state": self.state, "calls": self.calls_file}
        tools = {"sudo": SUDO, "dpkg-query": DPKG_QUERY, "apt-mark": APT_MARK, "nmcli": NMCLI}
        if ibdev2netdev is not None:
            tools["ibdev2netdev"] = IBDEV2NETDEV
            (self.state / "ibdev2netdev").write_text(ibdev2netdev)
        for name, text in tools.items():
            (self.bin / name).write_text(text.format(**values))
            (self.bin / name).chmod(0o755)
        (self.state / "dpkg").write_text(dpkg)
        (self.state / "nm.json").write_text(json.dumps(nm if nm is not None else {"running": False}))

    @property
    def session_env(self) -> dict[str, str]:
        """What puts this node's tools first on its sessions' PATH."""
        return {"PATH": f"{self.bin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

    @property
    def dpkg(self) -> list[list[str]]:
        return [line.split() for line in (self.state / "dpkg").read_text().splitlines() if line.strip()]

    @property
    def nm(self) -> dict:
        return json.loads((self.state / "nm.json").read_text())

    @property
    def calls(self) -> list[str]:
        return self.calls_file.read_text().splitlines()


A, B = "thinkstationpgx-30", "thinkstationpgx-32"


def require_sshd() -> None:
    """As the remote layer's own loopback tests: root and OpenSSH's sshd, else a skip (a failure in CI)."""
    if not (shutil.which("sshd") or os.path.exists("/usr/sbin/sshd")) or os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI must run as root with openssh-server installed (.ci/run installs it)")
        pytest.skip("needs root and OpenSSH's sshd (apt-get install openssh-server) to start a loopback sshd")


@contextlib.contextmanager
def sshd_pair(tmp: Path, a: dict, b: dict):
    """The example's pair as two real sshd on loopback (127.0.0.1 and .2), each session with its node's stand-ins first on the PATH; yields
    (cluster file, {name: FakeNode})."""
    require_sshd()
    fakes = {A: FakeNode(tmp / A, **a), B: FakeNode(tmp / B, **b)}
    servers = []
    try:
        for i, (name, fake) in enumerate(fakes.items()):
            (tmp / f"sshd-{name}").mkdir()
            servers.append(LocalSshd(tmp / f"sshd-{name}", session_env=fake.session_env, address=f"127.0.0.{i + 1}").start())
        servers[1].authorize(servers[0].identity.with_suffix(".pub").read_text())
        known_hosts = tmp / "known_hosts"
        known_hosts.write_text("".join(s.known_hosts.read_text() for s in servers))
        doc = yaml.safe_load((REPO / "cluster.example.yaml").read_text())
        doc["ssh"].update({"user": servers[0].user, "identity_file": str(servers[0].identity), "known_hosts": str(known_hosts),
                           # 20 s: a loopback sshd's key exchange took over 5 s while both xdist workers ran a simulated
                           # cluster (paramiko "Authentication timeout"); nothing here proves a timeout
                           "connect_timeout_s": 20, "command_timeout_s": 20})
        for node, server in zip(doc["nodes"], servers):
            node.update({"address": server.address, "ssh_port": server.port})
        path = tmp / "cluster.yaml"
        path.write_text(yaml.safe_dump(doc))
        yield path, fakes
    finally:
        for s in servers:
            s.stop()


def script(name: str, cluster: Path, *args: str) -> subprocess.CompletedProcess:
    """scripts/NAME against the cluster file, as simbed.script runs every script."""
    return simbed.script(name, f"--cluster={cluster}", *args, timeout=120)
