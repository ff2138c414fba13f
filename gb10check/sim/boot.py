#!/usr/bin/python3
"""PID 1 of a simulated node (stdlib only). Runs inside fresh mount, PID and UTS namespaces and the
node's network namespace; builds the node's root, chroots into it, starts sshd and stays as init.

argv[1]: the node's boot spec (JSON) written by gb10check.sim.cluster.
Prints "READY" on stdout once sshd listens, then keeps the stand-in sysfs tree in step with the
real interfaces and reaps orphans until it is killed (which ends every process of the node).
"""

import compileall
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor


def sh(*argv: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"`{' '.join(argv)}` did not finish within {timeout:g} s") from None


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
    for shared in spec.get("shared", []):  # the runner's folders, written through by every node (not into its overlay)
        mount("--bind", shared, f"{root}{shared}")
    # Read-only under systemd, as in containers: networkd then manages links without udev (which must not run here).
    mount("-t", "sysfs", "-o", "ro" if spec.get("init") == "systemd" else "rw", "sysfs", f"{root}/sys")
    mount("--bind", f"{root}/sys/class/net", f"{base}/classnet")
    mount("-t", "tmpfs", "-o", "mode=0755", "gb10sim-class", f"{root}/sys/class")  # room for /sys/class/infiniband
    os.makedirs(f"{root}/sys/class/net")
    mount("--bind", f"{base}/classnet", f"{root}/sys/class/net")
    cgroups(f"{root}/sys/fs/cgroup", spec["cgroup"])
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
    # A node's `echo 3 > /proc/sys/vm/drop_caches` (the deploy frees unified memory before loading) stays in the node: the
    # nodes share one kernel, and dropping its page cache made every node and the runner read their libraries from disk
    # again (a vLLM start took 8 s longer after it).
    open(f"{base}/drop_caches", "w").close()
    mount("--bind", f"{base}/drop_caches", f"{root}/proc/sys/vm/drop_caches")
    if spec.get("init") == "systemd":
        private_dev(f"{root}/dev")  # systemd and journald write into /dev: not into the host's
    else:
        mount("--rbind", "/dev", f"{root}/dev")
    for private in ("dev/shm", "tmp", "run"):
        mount("-t", "tmpfs", "-o", "mode=1777" if private != "run" else "mode=0755", "gb10sim-" + private.replace("/", "-"),
              f"{root}/{private}")
    return root


def private_dev(target: str) -> None:
    """A /dev of the node's own, with the host's basic character devices bound in, as container managers do."""
    mount("-t", "tmpfs", "-o", "mode=0755,nosuid", "gb10sim-dev", target)
    for name in ("null", "zero", "full", "random", "urandom", "tty"):
        open(f"{target}/{name}", "w").close()
        mount("--bind", f"/dev/{name}", f"{target}/{name}")
    os.makedirs(f"{target}/pts")
    mount("-t", "devpts", "-o", "newinstance,ptmxmode=0666,mode=0620", "devpts", f"{target}/pts")
    os.symlink("pts/ptmx", f"{target}/ptmx")
    os.makedirs(f"{target}/shm")
    for name, link in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                       ("stderr", "/proc/self/fd/2")):
        os.symlink(link, f"{target}/{name}")


CLONE_NEWCGROUP = 0x02000000


def cgroups(target: str, group: str) -> None:
    """The host's cgroup hierarchies again (`ip netns exec` gave the node a fresh /sys without them; dockerd and
    systemd need them), each rooted at the node's own group (gb10sim-<node>, named by control.up) through a cgroup
    namespace: two nodes' systemd must not share (and kill each other's) /system.slice/ssh.service."""
    mount("-t", "tmpfs", "-o", "mode=0755", "gb10sim-cgroup", target)
    hierarchies: dict[str, list[str]] = {}
    for line in open("/proc/cgroups").read().splitlines()[1:]:
        name, hierarchy, _, enabled = line.split()
        if enabled == "1" and hierarchy != "0":
            hierarchies.setdefault(hierarchy, []).append(name)
    mounts = [("cgroup", ",".join(c), ",".join(c)) for c in hierarchies.values()] if hierarchies else [("cgroup2", "", "")]
    if hierarchies and "name=systemd" in open("/proc/self/cgroup").read():
        mounts.append(("cgroup", "none,name=systemd", "systemd"))
    for fstype, options, sub in mounts:  # join the node's group in every hierarchy, seen from the host's root
        d = f"{target}/{sub}".rstrip("/")
        os.makedirs(d, exist_ok=True)
        mount("-t", fstype, *(["-o", options] if options else []), fstype, d)
        own = f"{d}/{group}"
        os.makedirs(own, exist_ok=True)
        for inherit in ("cpuset.cpus", "cpuset.mems"):  # a cpuset group takes no task until these are set
            if os.path.exists(f"{own}/{inherit}") and not open(f"{own}/{inherit}").read().strip():
                with open(f"{own}/{inherit}", "w") as f:
                    f.write(open(f"{d}/{inherit}").read())
        with open(f"{own}/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))
        sh("umount", d)
    if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWCGROUP) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWCGROUP)")
    for fstype, options, sub in mounts:  # mounted again inside the namespace: rooted at the node's group
        mount("-t", fstype, *(["-o", options] if options else []), fstype, f"{target}/{sub}".rstrip("/"))


def start_docker(spec: dict) -> None:
    """dockerd as the node's own daemon (host network: no bridge, no iptables of its own so ufw stays the node's only
    firewall; its cgroups land under the node's gb10sim-<node> group) and the node's image imported."""
    # A script, so a scenario can restart the daemon the same way (dockerd reads its GPU hook only at start).
    write("/usr/local/sbin/gb10sim-dockerd", "#!/bin/sh\n"
          "# (Re)start this node's dockerd and wait until it answers.\n"
          "pkill -x dockerd && while pgrep -x dockerd >/dev/null; do sleep 0.1; done\n"
          "setsid dockerd --iptables=false --ip6tables=false --bridge=none --ip-forward=false --storage-driver=overlay2 "
          ">>/var/log/dockerd.log 2>&1 </dev/null &\n"
          "for i in $(seq 300); do docker version >/dev/null 2>&1 && exit 0; sleep 0.1; done\n"
          "echo 'dockerd did not answer within 30 s:' >&2; tail -5 /var/log/dockerd.log >&2; exit 1\n", 0o755)
    sh("/usr/local/sbin/gb10sim-dockerd")
    image = spec["docker"]
    sh("docker", "import", *[a for change in image["changes"] for a in ("--change", change)], image["tar"], image["name"])


# Units a node must not run: they would act on the host's devices, clock or kernel settings (one kernel for
# all), wait for hardware, or are the host's own services.
# NetworkManager too: installed for the nm-dhcp-on-qsfp scenario, which starts it by hand; a node's boot must not.
MASKED = ["NetworkManager.service", "NetworkManager-wait-online.service", "NetworkManager-dispatcher.service",
          "systemd-udevd.service", "systemd-udev-trigger.service", "systemd-udev-settle.service", "systemd-udevd-control.socket",
          "systemd-udevd-kernel.socket", "systemd-timesyncd.service", "systemd-sysctl.service", "systemd-modules-load.service",
          "systemd-remount-fs.service", "systemd-networkd-wait-online.service", "systemd-pstore.service", "getty@tty1.service",
          "console-getty.service", "postgresql.service", "e2scrub_reap.service", "apt-daily.timer", "apt-daily-upgrade.timer",
          "dpkg-db-backup.timer", "e2scrub_all.timer", "fstrim.timer", "man-db.timer", "systemd-logind.service",
          "sys-kernel-debug.mount", "sys-kernel-tracing.mount", "sys-kernel-config.mount", "sys-fs-fuse-connections.mount",
          "dev-hugepages.mount", "dev-mqueue.mount", "systemd-journald-audit.socket", "systemd-update-utmp.service",
          # The node's users are the host's /etc plus the SSH user boot.py adds; sysusers (run when /etc looks older than
          # /usr, as it does in a node's fresh root) once failed a node's boot under load.
          "systemd-sysusers.service",
          # The journal stays volatile in the node's own /run: flushing it to /var/log/journal once failed a boot (fresh-clone
          # CI, 2026-12-01); nothing in a node reads a persistent journal.
          "systemd-journal-flush.service"]


def systemd_units(spec: dict) -> None:
    """The node's services as units (systemd mode): sshd, ufw, networkd (netplan), docker with the sim's daemon
    options, the image import, and the stand-ins kept in step with the interfaces."""
    for unit in MASKED:
        path = f"/etc/systemd/system/{unit}"
        if os.path.lexists(path):
            os.unlink(path)
        os.symlink("/dev/null", path)
    wants = ["ssh.service", "ufw.service", "systemd-networkd.service", "gb10sim-standins.service"]
    if spec.get("docker"):
        wants += ["docker.service", "gb10sim-image.service"]
        write("/etc/default/docker", "# gb10sim: host network only, no iptables of its own (ufw is the node's firewall), no forwarding\n"
              'DOCKER_OPTS="--iptables=false --ip6tables=false --bridge=none --ip-forward=false --storage-driver=overlay2"\n')
        image = spec["docker"]
        changes = " ".join(f"--change '{c}'" for c in image["changes"])
        write("/etc/systemd/system/gb10sim-image.service",
              "[Unit]\nDescription=gb10sim: the deployment image\nRequires=docker.service\nAfter=docker.service\n\n"
              "[Service]\nType=oneshot\nRemainAfterExit=yes\n"
              f"ExecStart=/bin/sh -c \"docker image inspect {image['name']} >/dev/null 2>&1 || "
              f"docker import {changes} {image['tar']} {image['name']}\"\n")
    # ufw-init once failed at boot under load, without a word in the journal; a retry is what a real boot would not
    # need, but a degraded node is not what the self-tests are about.
    write("/etc/systemd/system/ufw.service.d/gb10sim.conf", "[Service]\nRestart=on-failure\nRestartSec=1\n")
    write("/etc/systemd/system/gb10sim-standins.service",
          "[Unit]\nDescription=gb10sim: stand-in sysfs and meminfo in step with the node\n\n"
          "[Service]\nExecStart=/usr/bin/python3 /usr/local/lib/gb10sim/standins/__main__.py refresh-loop\nRestart=always\n")
    # No udev in a node (it would replay the host's device events); `netplan apply` asks udev to re-trigger net
    # devices, which only renames interfaces by .link files. As in other containers, that part is a no-op here.
    # (`test` and `test-builtin net_setup_link` would also give the veths new "persistent" MACs: a real machine got its own at
    # boot from udev, so re-running it there changes nothing; here it would strand the runner's ARP entries.)
    write("/usr/local/sbin/udevadm", "#!/bin/sh\n# gb10sim: no udev daemon in a node; its event work has nothing to do here\n"
          'case "$1" in trigger|settle|test|test-builtin) exit 0;; esac\nexec /usr/bin/udevadm "$@"\n', 0o755)
    write("/etc/systemd/system/gb10sim.target", "[Unit]\nDescription=gb10sim node\nRequires=basic.target\nAfter=basic.target\n"
          f"Wants={' '.join(wants)}\nAllowIsolate=yes\n")
    if os.path.lexists("/etc/systemd/system/default.target"):
        os.unlink("/etc/systemd/system/default.target")
    os.symlink("/etc/systemd/system/gb10sim.target", "/etc/systemd/system/default.target")


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
    if subprocess.run(["chroot", root, "id", user], capture_output=True, timeout=30).returncode != 0:
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
    if spec.get("ufw_cache") and os.path.isdir(spec["ufw_cache"]):
        shutil.copytree(spec["ufw_cache"], f"{root}/etc/ufw", dirs_exist_ok=True)
        spec["ufw_from_cache"] = True
    write(f"{root}/etc/sudoers.d/gb10sim", f"{user} ALL=(ALL) NOPASSWD:ALL\n", 0o440)
    write(f"{root}/etc/netplan/40-cx7.yaml", spec["netplan"], 0o600)
    write(f"{root}/etc/gb10sim/state.json", json.dumps(spec["state"], indent=1), 0o644)
    # The NVIDIA Container Toolkit as installed and configured: the CDI spec generated for the driver of the day, and the
    # runtime's configuration (mode "auto", its default).
    write(f"{root}{standins_ctk.SPEC}", standins_ctk.spec_text(spec["state"]), 0o644)
    write(f"{root}/etc/nvidia-container-runtime/config.toml", TOOLKIT_CONFIG, 0o644)
    for f in spec.get("files", []):
        standins.make_file(root, f, owner)
    # The stand-ins' package, whole (under /usr: containers that bind the node's /usr see it too); each tool a link to
    # its entry point, which picks the tool by the name it was called by.
    here = os.path.dirname(os.path.abspath(__file__))
    shutil.copytree(f"{here}/standins", f"{root}{STANDINS}", ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    os.chmod(f"{root}{STANDINS}/__main__.py", 0o755)
    # Byte-compiled here, once: the SSH user's tools cannot write their own __pycache__, and each tool is a fresh interpreter.
    compileall.compile_dir(f"{root}{STANDINS}", ddir=STANDINS, quiet=1)
    for tool in standins_tools.TOOLS:
        link = f"{root}/usr/local/bin/{tool}"
        if not os.path.lexists(link):
            os.symlink(f"{STANDINS}/__main__.py", link)
    # The CUDA driver's stand-in where the real driver installs libcuda.so.1 (the memory probe asks it through ctypes).
    import sysconfig  # here: the only user

    lib = f"{root}/usr/lib/{sysconfig.get_config_var('MULTIARCH') or ''}/libcuda.so.1"
    sh("gcc", "-shared", "-fPIC", "-O2", "-o", lib, f"{root}{STANDINS}/libcuda.c")
    os.makedirs(f"{root}{standins_tools.IMAGE_BIN}", exist_ok=True)
    for tool in standins_tools.IMAGE_TOOLS:  # first on the deployment image's PATH (sim/image.py)
        link = f"{root}{standins_tools.IMAGE_BIN}/{tool}"
        if not os.path.lexists(link):
            os.symlink(f"{STANDINS}/__main__.py", link)


def firewall(spec: dict) -> None:
    """ufw as a careful owner sets it up: deny by default, SSH, the QSFP subnets and the API port. Where an earlier boot left
    its files for the same rules and the same ufw (spec["ufw_cache"], copied in by configure), only `ufw enable` runs: the
    eight ufw commands are most of a node's boot."""
    if spec.get("ufw_from_cache"):
        sh("ufw", "--force", "enable")
        return
    cmds = [["ufw", "--force", "reset"], ["ufw", "default", "deny", "incoming"], ["ufw", "default", "allow", "outgoing"],
            ["ufw", "allow", "22/tcp"]]
    cmds += [["ufw", "allow", "from", src] for src in spec["firewall_sources"]]
    cmds += [["ufw", "allow", port] for port in spec["firewall_ports"]]
    for cmd in cmds:
        sh(*cmd)
    sh("ufw", "--force", "enable")


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import standins  # noqa: E402 - stdlib only; the same package the node gets in /usr/local/lib/gb10sim
from standins import tools as standins_tools  # noqa: E402
from standins import nvidia_ctk as standins_ctk  # noqa: E402

STANDINS = "/usr/local/lib/gb10sim/standins"
# /etc/nvidia-container-runtime/config.toml as the toolkit's package installs it (the settings the checks read).
TOOLKIT_CONFIG = ('[nvidia-container-cli]\nenvironment = []\nldconfig = "@/sbin/ldconfig.real"\nload-kmods = true\n\n'
                  '[nvidia-container-runtime]\nlog-level = "info"\nmode = "auto"\nruntimes = ["docker-runc", "runc", "crun"]\n\n'
                  '[nvidia-container-runtime.modes.cdi]\nannotation-prefixes = ["cdi.k8s.io/"]\n'
                  'default-kind = "nvidia.com/gpu"\nspec-dirs = ["/etc/cdi", "/var/run/cdi"]\n')


MNT_DETACH = 2


def enter_root(root: str) -> None:
    """Make the node's root the root of its mount namespace (pivot_root, the old root detached), not a chroot: a container
    whose runtime could not pivot_root is only chrooted into its image, and `docker exec` into it then lands on the
    namespace's root (the host's), not in the image (Ray's `docker exec` driver could not find its raylet socket)."""
    libc = ctypes.CDLL(None, use_errno=True)
    os.chdir(root)
    if libc.syscall(155 if os.uname().machine == "x86_64" else 41, b".", b".") != 0:  # pivot_root(".", ".")
        raise OSError(ctypes.get_errno(), f"pivot_root({root})")
    if libc.umount2(b".", MNT_DETACH) != 0:  # the old root, stacked under the new one
        raise OSError(ctypes.get_errno(), "umount2(old root)")
    os.chdir("/")


def main() -> None:
    spec = json.load(open(sys.argv[1]))
    root = build_root(spec)
    configure(root, spec)
    socket.sethostname(spec["name"])
    enter_root(root)
    # The stand-ins' modules load from the node's copy from here on: the checkout this file came from need not be in the
    # node (a checkout under /tmp is not: the node's /tmp is its own).
    standins.__path__[:] = [STANDINS]
    standins.refresh(spec["state"])
    if spec.get("init") == "systemd":
        if spec.get("ufw", True):
            firewall(spec)  # ufw's files; ufw.service loads them at boot, as on a real machine
        systemd_units(spec)
        print("READY", flush=True)  # control.up waits for the boot to finish (systemctl is-system-running --wait)
        log = os.open("/var/log/gb10sim-init.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        for fd in (0, 1, 2):
            os.dup2(log, fd)
        # To the journal: what systemd says about a unit (a child's "Failed at step ...") is then in that unit's journal.
        os.execve("/lib/systemd/systemd", ["/lib/systemd/systemd", "--log-target=journal"],
                  {"container": "gb10sim", "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"})
    os.makedirs("/run/sshd", exist_ok=True)
    sh("/usr/sbin/sshd")
    with ThreadPoolExecutor(max_workers=1) as pool:  # ufw and dockerd at once: dockerd leaves the firewall alone
        ufw = pool.submit(firewall, spec) if spec.get("ufw", True) else None
        if spec.get("docker"):
            start_docker(spec)
        if ufw is not None:
            ufw.result()
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
