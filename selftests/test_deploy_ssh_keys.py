"""The SSH-key step against the simulated nodes' real sshd and real files: repairs a broken mesh,
shows what it changes first (never a private key), changes nothing the second time, makes a new key."""

import re
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from gb10check.cluster import load_cluster
from gb10check.deploy import sshkeys
from gb10check.sim import control, scenarios

from .simbed import require_provisioned_sim, run_suite, step

pytestmark = pytest.mark.sim
REPO = Path(__file__).resolve().parent.parent


def ssh_keys(cluster: Path, *args: str) -> subprocess.CompletedProcess:
    # The step changes the cluster, so it asks the gate first: the sim's fault scenario has no checked stages to show.
    gate = () if "--check" in args else ("--override", "self-test: a fault scenario of the sim, no stage run")
    return step("ssh-keys", cluster, *args, *gate, timeout=300)


@pytest.fixture(scope="module")
def bed():
    require_provisioned_sim()
    yield
    control.down(quiet=True)


def test_repairs_the_mesh_and_is_idempotent(bed):
    path = control.up(2, quiet=True)
    scenarios.apply("ssh-not-passwordless")
    key = load_cluster(path).ssh.cluster_key
    check = ssh_keys(path, "--check")
    assert check.returncode == 1, check.stderr
    assert "would change thinkstationpgx-32:~/.ssh/authorized_keys" in check.stderr
    first = ssh_keys(path)
    assert first.returncode == 0, first.stderr
    assert "changing thinkstationpgx-32:~/.ssh/authorized_keys" in first.stderr
    assert re.search(r"ok thinkstationpgx-30 -> thinkstationpgx-32 over enP2p1s0f0np0", first.stderr)
    assert Path(key).read_text().splitlines()[1] not in first.stderr + check.stderr, "a private key is never printed"
    second = ssh_keys(path)
    assert second.returncode == 0 and "changing" not in second.stderr, second.stderr
    mesh = run_suite(path, "-m", "network", "-k", "ssh_mesh")
    assert mesh.results and {o.outcome for o in mesh.results.values()} == {"passed"}, mesh.stdout[-2000:]


def test_creates_a_new_cluster_key_and_installs_it(bed, tmp_path):
    path = control.up(2, quiet=True)
    doc = yaml.safe_load(path.read_text())
    doc["ssh"]["cluster_key"] = str(tmp_path / "keys" / "id_ed25519_shared")
    mine = tmp_path / "cluster.yaml"
    mine.write_text(yaml.safe_dump(doc))
    run = ssh_keys(mine)
    assert run.returncode == 0, run.stderr
    assert f"creating the cluster key {tmp_path / 'keys' / 'id_ed25519_shared'}" in run.stderr
    assert stat.S_IMODE((tmp_path / "keys" / "id_ed25519_shared").stat().st_mode) == 0o600
    pub = (tmp_path / "keys" / "id_ed25519_shared.pub").read_text().split()[1]
    assert pub in control.node_exec("thinkstationpgx-32", "cat /home/lenovo/.ssh/authorized_keys").stdout
    assert run.stderr.count("ok thinkstationpgx-") == 4  # both directions over both links
    mode = control.node_exec("thinkstationpgx-30", "stat -c %a /home/lenovo/.ssh/id_ed25519_shared").stdout.strip()
    assert mode == "600"


def test_refuses_root():
    cluster = load_cluster(REPO / "cluster.example.yaml")
    cluster = cluster.model_copy(update={"ssh": cluster.ssh.model_copy(update={"user": "root"})})
    with pytest.raises(sshkeys.SshStepError, match="refusing to set up SSH for root"):
        sshkeys.run(cluster, [], Path("/nonexistent"))


def test_managed_block_replaces_itself_and_keeps_the_rest():
    cluster = load_cluster(REPO / "cluster.example.yaml")
    block = sshkeys.peers_block(cluster, "thinkstationpgx-30")
    assert "Host thinkstationpgx-32 169.254.159.206 192.168.101.11\n    HostName 169.254.159.206" in block
    mine = "Host github.com\n    User git\n"
    once = sshkeys.with_block(mine, block)
    assert once.endswith(mine) and once.startswith(sshkeys.BEGIN) and sshkeys.with_block(once, block) == once
    assert sshkeys.with_lines("a\n", ["a", "b"]) == "a\nb\n" and sshkeys.with_lines("a\nb\n", ["b"]) == "a\nb\n"
