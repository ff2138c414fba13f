"""A real OpenSSH server on 127.0.0.1 for testing the remote layer without the simulated cluster."""

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def refusing_pair(directory: Path, command_timeout_s: int) -> dict:
    """The example pair's cluster data with its nodes at 127.0.0.2 and .3 on a port nothing listens on: each refuses."""
    data = yaml.safe_load((Path(__file__).resolve().parent.parent / "cluster.example.yaml").read_text())
    (directory / "known_hosts").write_text("")
    (directory / "id_ed25519").write_text("")  # never read: nothing answers
    data["ssh"].update({"port": free_port(), "identity_file": str(directory / "id_ed25519"),
                        "known_hosts": str(directory / "known_hosts"), "connect_timeout_s": 2,
                        "command_timeout_s": command_timeout_s})
    data["nodes"][0]["address"], data["nodes"][1]["address"] = "127.0.0.2", "127.0.0.3"
    return data


def keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gb10check-selftest", "-f", str(path)], check=True)
    path.chmod(0o600)
    return (path.with_suffix(".pub")).read_text().strip()


class LocalSshd:
    def __init__(self, workdir: Path, session_env: dict[str, str] | None = None, address: str = "127.0.0.1",
                 sudoer: str | None = None):
        """session_env: variables set in each session (e.g. PATH, to put stand-in tools first);
        address: another loopback address (127.0.0.2 ...) for a second "node" (a cluster file names each address once);
        sudoer: log in as a throwaway account made for this server (not root), its sudoers line this text with {user} its
        name ("" for none); `sudoers()` rewrites it. The account and its line go at stop()."""
        self.dir = workdir
        self.address = address
        # SHLVL=1: the session's bash is then not the first, and does not read the account's ~/.bashrc as bash run by
        # sshd does. A node's sessions are the node's own, not the runner's shell set-up (a pyenv init there took 80 ms
        # a command and put its shims first on PATH).
        self.session_env = {"SHLVL": "1", **(session_env or {})}
        self.port = free_port()
        self.user = os.environ.get("USER") or subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
        self.sudoer = sudoer
        self.home: Path | None = None
        self.identity = self.dir / "id_ed25519"
        self.host_key = self.dir / "host_ed25519"
        self.known_hosts = self.dir / "known_hosts"
        self.proc: subprocess.Popen | None = None

    @property
    def sudoers_file(self) -> Path:
        return Path("/etc/sudoers.d") / f"gb10check-selftest-{self.user}"

    def sudoers(self, line: str) -> None:
        """The account's sudoers drop-in: `line` with {user} its name (checked by visudo), or none for ""."""
        if not line:
            self.sudoers_file.unlink(missing_ok=True)
            return
        staged = self.dir / "sudoers"
        staged.write_text(line.format(user=self.user) + "\n")
        subprocess.run(["visudo", "-cqf", str(staged)], check=True, timeout=30)
        staged.chmod(0o440)
        shutil.move(staged, self.sudoers_file)

    def _make_account(self, user_pub: str) -> None:
        """A throwaway account (sshd reads its authorized_keys as the user: they live in its own home, not in self.dir)."""
        self.user = f"gb10st{os.getpid() % 100000}{self.port % 1000}"
        self.home = Path(tempfile.mkdtemp(prefix=f"{self.user}-", dir="/tmp"))
        subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", str(self.home), "--shell", "/bin/sh",
                        "--password", "*", self.user], check=True, timeout=30, capture_output=True)
        (self.home / ".ssh").mkdir(mode=0o700)
        (self.home / ".ssh" / "authorized_keys").write_text(user_pub + "\n")
        subprocess.run(["chown", "-R", f"{self.user}:", str(self.home)], check=True, timeout=30)
        self.home.chmod(0o755)
        self.sudoers(self.sudoer or "")

    def start(self) -> "LocalSshd":
        user_pub = keygen(self.identity)
        host_pub = keygen(self.host_key)
        (self.dir / "authorized_keys").write_text(user_pub + "\n")
        (self.dir / "authorized_keys").chmod(0o600)
        if self.sudoer is not None:
            self._make_account(user_pub)
        self.known_hosts.write_text(f"[{self.address}]:{self.port} {' '.join(host_pub.split()[:2])}\n")
        config = self.dir / "sshd_config"
        config.write_text(
            f"Port {self.port}\nListenAddress {self.address}\nHostKey {self.host_key}\nPidFile none\n"
            f"AuthorizedKeysFile {self.dir}/authorized_keys .ssh/authorized_keys\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
            # one SetEnv line: sshd reads only the first
            "SetEnv " + " ".join(f"{k}={v}" for k, v in self.session_env.items()) + "\n"
        )
        Path("/run/sshd").mkdir(exist_ok=True)
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {self.proc.stderr.read().decode(errors='replace')}")
            try:
                socket.create_connection((self.address, self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("sshd did not listen within 10 s")

    def authorize(self, public_key: str) -> None:
        """Let another key in too (sshd reads authorized_keys at each login)."""
        with open(self.dir / "authorized_keys", "a") as f:
            f.write(public_key.strip() + "\n")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(5)
        if self.home is not None:
            self.sudoers_file.unlink(missing_ok=True)
            subprocess.run(["userdel", self.user], timeout=30, capture_output=True)
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None
