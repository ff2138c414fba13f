#!/usr/bin/python3
"""PID 1 of a simulated node (stdlib only). Runs inside fresh mount, PID and UTS namespaces and the
node's network namespace; builds the node's root, chroots into it, starts sshd and stays as init.

argv[1]: the node's boot spec (JSON) written by gb10check.sim.cluster.
Prints "READY" on stdout once sshd listens, then keeps the stand-in sysfs tree in step with the
real interfaces and reaps orphans until it is killed (which ends every process of the node).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def mount(*args: str) -> None:
    sh("mount", *args)


def write(path: str, text: str, mode: int = 0o644, owner: tuple[int, int] | None = None) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    if owner:
        os.chown(path, *owner)


def build_root(spec: dict) -> str:
    base = spec["mnt_dir"]
    mount("-t", "tmpfs", "-o", "mode=0700", "gb10sim", base)
    for d in ("upper", "work", "root", "classnet"):
        os.makedirs(f"{base}/{d}")
    root = f"{base}/root"
    mount("-t", "overlay", "overlay", "-o", f"lowerdir=/,upperdir={base}/upper,workdir={base}/work", root)
    mount("-t", "proc", "proc", f"{root}/proc")
    mount("-t", "sysfs", "sysfs", f"{root}/sys")
    mount("--bind", f"{root}/sys/class/net", f"{base}/classnet")
    mount("-t", "tmpfs", "-o", "mode=0755", "gb10sim-class", f"{root}/sys/class")  # room for /sys/class/infiniband
    os.makedirs(f"{root}/sys/class/net")
    mount("--bind", f"{base}/classnet", f"{root}/sys/class/net")
    cgroups(f"{root}/sys/fs/cgroup")
    os.makedirs(f"{root}/var/lib/docker", exist_ok=True)
    mount("-t", "tmpfs", "-o", "mode=0711", "gb10sim-docker", f"{root}/var/lib/docker")  # overlay2 cannot sit on an overlay
    mount("-t", "tmpfs", "-o", "mode=0555", "gb10sim-driver", f"{root}/proc/driver")  # room for nvidia/version
    os.makedirs(f"{root}/proc/driver/nvidia")
    # /proc/meminfo is GB10-sized (stand-in): the real one stays readable at /etc/gb10sim/host-meminfo.
    os.makedirs(f"{root}/etc/gb10sim", exist_ok=True)
    for path in (f"{root}/etc/gb10sim/host-meminfo", f"{base}/meminfo"):
        open(path, "w").close()
    mount("--bind", f"{root}/proc/meminfo", f"{root}/etc/gb10sim/host-meminfo")
    mount("--bind", f"{base}/meminfo", f"{root}/proc/meminfo")
    mount("--rbind", "/dev", f"{root}/dev")
    for private in ("dev/shm", "tmp", "run"):
        mount("-t", "tmpfs", "-o", "mode=1777" if private != "run" else "mode=0755", "gb10sim-" + private.replace("/", "-"),
              f"{root}/{private}")
    return root


def cgroups(target: str) -> None:
    """The host's cgroup v1 hierarchies again (`ip netns exec` gave the node a fresh /sys without them): dockerd needs them."""
    mount("-t", "tmpfs", "-o", "mode=0755", "gb10sim-cgroup", target)
    hierarchies: dict[str, list[str]] = {}
    for line in open("/proc/cgroups").read().splitlines()[1:]:
        name, hierarchy, _, enabled = line.split()
        if enabled == "1" and hierarchy != "0":
            hierarchies.setdefault(hierarchy, []).append(name)
    if not hierarchies:  # a cgroup v2 host
        mount("-t", "cgroup2", "cgroup2", target)
        return
    for controllers in hierarchies.values():
        os.makedirs(f"{target}/{','.join(controllers)}")
        mount("-t", "cgroup", "-o", ",".join(controllers), "cgroup", f"{target}/{','.join(controllers)}")
    if "name=systemd" in open("/proc/self/cgroup").read():
        os.makedirs(f"{target}/systemd")
        mount("-t", "cgroup", "-o", "none,name=systemd", "cgroup", f"{target}/systemd")


def start_docker(spec: dict) -> None:
    """dockerd as the node's own daemon (host network: no bridge, no iptables of its own so ufw stays the node's only
    firewall), its cgroups under gb10sim-<node> so `sim down` can remove them, and the node's image imported."""
    # A script, so a scenario can restart the daemon the same way (dockerd reads its GPU hook only at start).
    write("/usr/local/sbin/gb10sim-dockerd", "#!/bin/sh\n"
          "# (Re)start this node's dockerd and wait until it answers.\n"
          "pkill -x dockerd && while pgrep -x dockerd >/dev/null; do sleep 0.1; done\n"
          "setsid dockerd --iptables=false --ip6tables=false --bridge=none --storage-driver=overlay2 "
          f"--cgroup-parent=gb10sim-{spec['name']} >>/var/log/dockerd.log 2>&1 </dev/null &\n"
          "for i in $(seq 300); do docker version >/dev/null 2>&1 && exit 0; sleep 0.1; done\n"
          "echo 'dockerd did not answer within 30 s:' >&2; tail -5 /var/log/dockerd.log >&2; exit 1\n", 0o755)
    sh("/usr/local/sbin/gb10sim-dockerd")
    image = spec["docker"]
    sh("docker", "import", *[a for change in image["changes"] for a in ("--change", change)], image["tar"], image["name"])


def configure(root: str, spec: dict) -> None:
    user = spec["user"]
    # The host's own sshd keys must not be shared by every node: each node gets its own.
    for name in os.listdir(f"{root}/etc/ssh"):
        if name.startswith("ssh_host_"):
            os.unlink(f"{root}/etc/ssh/{name}")
    write(f"{root}/etc/ssh/ssh_host_ed25519_key", spec["host_key"], 0o600)
    write(f"{root}/etc/ssh/ssh_host_ed25519_key.pub", spec["host_key_pub"] + "\n")
    write(f"{root}/etc/ssh/sshd_config.d/gb10sim.conf",
          "HostKey /etc/ssh/ssh_host_ed25519_key\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
          "UsePAM no\nPermitRootLogin no\nUseDNS no\n")
    write(f"{root}/etc/hostname", spec["name"] + "\n")
    hosts = "127.0.0.1\tlocalhost\n" + "".join(f"{ip}\t{name}\n" for name, ip in spec["hosts"])
    write(f"{root}/etc/hosts", hosts)
    if subprocess.run(["chroot", root, "id", user], capture_output=True).returncode != 0:
        # "*": no password and not locked (sshd without PAM refuses locked accounts, even with a key).
        sh("chroot", root, "useradd", "--create-home", "--shell", "/bin/bash", "--password", "*", user)
    pw = sh("chroot", root, "id", "-u", user).stdout.strip(), sh("chroot", root, "id", "-g", user).stdout.strip()
    owner = (int(pw[0]), int(pw[1]))
    home = f"{root}/home/{user}"
    os.makedirs(f"{home}/.ssh", mode=0o700, exist_ok=True)
    os.chown(f"{home}/.ssh", *owner)
    write(f"{home}/.ssh/authorized_keys", spec["runner_pub"] + "\n" + spec["shared_pub"] + "\n", 0o600, owner)
    write(f"{home}/.ssh/id_ed25519_shared", spec["shared_key"], 0o600, owner)
    write(f"{home}/.ssh/id_ed25519_shared.pub", spec["shared_pub"] + "\n", 0o644, owner)
    write(f"{home}/.ssh/config", "Host *\n    IdentityFile ~/.ssh/id_ed25519_shared\n", 0o600, owner)
    write(f"{home}/.ssh/known_hosts", spec["known_hosts"], 0o600, owner)
    if spec.get("docker"):
        sh("chroot", root, "usermod", "--append", "--groups", "docker", user)  # as on a GB10: docker without sudo
        os.makedirs(f"{root}/var/lib/gb10sim", exist_ok=True)
        shutil.copy(spec["docker"]["tar"], f"{root}/var/lib/gb10sim/image.tar")
        spec["docker"]["tar"] = "/var/lib/gb10sim/image.tar"
    write(f"{root}/etc/sudoers.d/gb10sim", f"{user} ALL=(ALL) NOPASSWD:ALL\n", 0o440)
    write(f"{root}/etc/netplan/40-cx7.yaml", spec["netplan"], 0o600)
    write(f"{root}/etc/gb10sim/state.json", json.dumps(spec["state"], indent=1), 0o644)
    for f in spec.get("files", []):
        standins.make_file(root, f, owner)
    os.makedirs(f"{root}/usr/local/lib/gb10sim", exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    shutil.copy(f"{here}/standins.py", f"{root}/usr/local/lib/gb10sim/standins.py")
    for tool in ("nvidia-smi", "nvidia-container-runtime-hook", "ibdev2netdev", "show_gids", "ibv_devinfo", "ethtool", "ib_write_bw", "mpirun", "all_gather_perf"):
        link = f"{root}/usr/local/bin/{tool}"
        if not os.path.lexists(link):
            os.symlink("/usr/local/lib/gb10sim/standins.py", link)
    os.chmod(f"{root}/usr/local/lib/gb10sim/standins.py", 0o755)


def firewall(spec: dict) -> None:
    """ufw as a careful owner sets it up: deny by default, SSH, the QSFP subnets and the API port."""
    cmds = [["ufw", "--force", "reset"], ["ufw", "default", "deny", "incoming"], ["ufw", "default", "allow", "outgoing"],
            ["ufw", "allow", "22/tcp"]]
    cmds += [["ufw", "allow", "from", src] for src in spec["firewall_sources"]]
    cmds += [["ufw", "allow", port] for port in spec["firewall_ports"]]
    for cmd in cmds:
        sh(*cmd)
    sh("ufw", "--force", "enable")


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import standins  # noqa: E402 - stdlib only; the same file the node gets in /usr/local/lib/gb10sim


def main() -> None:
    spec = json.load(open(sys.argv[1]))
    root = build_root(spec)
    configure(root, spec)
    socket.sethostname(spec["name"])
    os.chroot(root)
    os.chdir("/")
    standins.refresh(spec["state"])
    os.makedirs("/run/sshd", exist_ok=True)
    sh("/usr/sbin/sshd")
    if spec.get("ufw", True):
        firewall(spec)
    if spec.get("docker"):
        start_docker(spec)
    print("READY", flush=True)
    log = os.open("/var/log/gb10sim-init.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for fd in (1, 2):
        os.dup2(log, fd)
    devnull = os.open("/dev/null", os.O_RDONLY)
    os.dup2(devnull, 0)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        try:
            standins.refresh(standins.state())
        except Exception as exc:  # keep init alive; the log says what broke
            print(f"refresh failed: {exc!r}", flush=True)
        time.sleep(0.5)


if __name__ == "__main__":
    try:
        main()
    except subprocess.CalledProcessError as exc:
        print(f"BOOT FAILED: {' '.join(exc.cmd)}: {exc.stderr.strip()}", flush=True)
        sys.exit(1)
    except Exception as exc:
        print(f"BOOT FAILED: {exc!r}", flush=True)
        sys.exit(1)
