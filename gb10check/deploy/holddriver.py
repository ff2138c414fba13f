"""The hold-driver step: test_driver_packages_held's fix, made on every node (or the ones named).

It reads what the check reads (gather.DRIVER_PACKAGES: the installed `nvidia-driver-*` and `libnvidia-compute-*` packages
and their dpkg selection; gather.UNATTENDED_UPGRADES: the Package-Blacklist of 50unattended-upgrades), shows the packages
the check warns about (neither held nor blacklisted) and the exact command, then runs `sudo apt-mark hold PKG...` and reads
dpkg again: every one must say `hold ok installed`. With --blacklist it also keeps every installed driver package out of
unattended-upgrades through a drop-in of our own (DROP_IN: apt reads every file of apt.conf.d and adds up the list
entries) rather than by editing 50unattended-upgrades, which the package owns. The drop-in's difference is shown first; it
is installed root-owned with mode 644. Idempotent: a node whose packages are held (and drop-in right) is left alone.
"""

import re
import shlex
from dataclasses import dataclass, field

from rich.console import Console

from .. import gather
from ..checks import platform
from ..remote import RemoteError, RemoteNode
from . import converge
from .converge import exit_code, install_file, show_change

DROP_IN = "/etc/apt/apt.conf.d/51gb10check-hold-nvidia"
APT_MARK_TIMEOUT_S = 120  # apt-mark waits on dpkg's lock while unattended-upgrades runs; it may take a while, never forever


@dataclass
class DriverState:
    """What a node says about its NVIDIA driver packages. packages None: dpkg-query is not there (not a Debian image)."""

    packages: list | None
    blacklist: list[str] = field(default_factory=list)

    @property
    def installed(self) -> list[str]:
        return sorted({p.package for p in self.packages or [] if p.installed})

    @property
    def to_hold(self) -> list[str]:
        """What test_driver_packages_held warns about: installed, not held, not in the Package-Blacklist."""
        return platform.unheld_driver_packages(self.packages or [], [], self.blacklist)


def read_state(dpkg: tuple[int, str, str], unattended: tuple[int, str]) -> DriverState:
    """The node's driver packages from the outputs of the check's two commands ((rc, stdout, stderr) and (rc, stdout)), read as
    the check reads them: dpkg-query exits 1 when one of its patterns matches nothing; missing or unreadable
    50unattended-upgrades means no blacklist. Raises ValueError when dpkg-query failed otherwise (its error)."""
    rc, out, err = dpkg
    if rc == 127 or "dpkg-query: not found" in err or "dpkg-query: command not found" in err:
        return DriverState(None)
    if rc not in (0, 1) or (rc == 1 and "no packages found" not in err):
        raise ValueError(f"dpkg-query exited {rc}: {(err or out).strip().splitlines()[-1:] or ['no output']}")
    packages = (gather.parse_or_error("dpkg_query", out)[0] or []) if out.strip() else []
    conf = gather.parse_or_error("unattended_upgrades", unattended[1])[0] if unattended[0] == 0 else None
    return DriverState(packages, conf.blacklist if conf else [])


def blacklist_entry(package: str) -> str:
    """A Package-Blacklist entry (a Python regular expression matched from the name's start) for exactly this package.
    apt's configuration strings take no backslash, so the characters package names may hold that mean something in a
    regular expression ('.' and '+') go in brackets; '$' ends the name (else nvidia-driver-580 would also match -open)."""
    return re.sub(r"([.+])", r"[\1]", package) + "$"


def render_drop_in(packages: list[str]) -> str:
    lines = ["// Written by gb10check (scripts/hold-driver --blacklist): the NVIDIA driver packages installed on this node,",
             "// kept out of unattended upgrades (they are held too). Upgrade the driver deliberately, on every node at once,",
             "// then reboot. Rewritten by the next run: edit the list there, not here.",
             "Unattended-Upgrade::Package-Blacklist {"]
    lines += [f'    "{blacklist_entry(p)}";' for p in sorted(packages)]
    return "\n".join(lines + ["};"]) + "\n"


def read(remote: RemoteNode) -> DriverState:
    dpkg = remote.run(gather.DRIVER_PACKAGES)
    conf = remote.run(gather.UNATTENDED_UPGRADES)
    try:
        return read_state((dpkg.rc, dpkg.stdout, dpkg.stderr), (conf.rc, conf.stdout))
    except ValueError as exc:
        raise RemoteError(f"{remote.name}: {exc}").at(remote, gather.DRIVER_PACKAGES) from None


def step(nodes: list[RemoteNode], check_only: bool = False, blacklist: bool = False, console: Console | None = None,
         drop_in: str = DROP_IN) -> int:
    """0: every node's driver packages are (now) held, and with `blacklist` in the drop-in; 1: --check found a change;
    2: an error (named)."""
    console = console or converge.console()
    verb = "would change" if check_only else "changing"
    changed = errors = 0
    for remote in nodes:
        try:
            state = read(remote)
            if state.packages is None:
                console.print(f"[green]nothing to do[/] {remote.name}: no dpkg-query (not a Debian-based image): no packages to hold")
                continue
            if not state.installed:
                console.print(f"[green]nothing to do[/] {remote.name}: no nvidia-driver-* or libnvidia-compute-* package installed")
                continue
            todo = state.to_hold
            if todo:
                console.print(f"[yellow]{verb}[/] {remote.name}: {', '.join(todo)} neither held nor in unattended-upgrades' "
                              f"Package-Blacklist\n  sudo {platform.hold_command(todo)}")
            else:
                console.print(f"[green]unchanged[/] {remote.name}: {', '.join(state.installed)} held or blacklisted")
            want = render_drop_in(state.installed) if blacklist else None
            have = None
            if want is not None:
                current = remote.run(f"cat {shlex.quote(drop_in)}")
                have = current.stdout if current.rc == 0 else None
                show_change(console, f"{remote.name}:{drop_in}", have, want, check_only)
            changed += bool(todo) or have != want
            if check_only:
                continue
            if todo:
                held = remote.run(platform.hold_command(todo), sudo=True, timeout=APT_MARK_TIMEOUT_S)
                said = (held.stderr or held.stdout).strip().splitlines()
                if held.rc != 0:
                    errors += 1
                    console.print(f"[red]failed[/] {remote.name}: apt-mark hold exited {held.rc}: {said[-1] if said else 'no output'}")
                    continue
                left = read(remote).to_hold
                if left:
                    errors += 1
                    console.print(f"[red]failed[/] {remote.name}: after apt-mark hold, dpkg still does not say hold for {', '.join(left)}")
                    continue
                console.print(f"[green]held[/] {remote.name}: {', '.join(todo)} (dpkg: hold ok installed)")
            if want is not None and have != want:
                install_file(remote, drop_in, want)
                console.print(f"[green]written[/] {remote.name}:{drop_in} (root, mode 644)")
        except RemoteError as exc:
            errors += 1
            converge.error(console, exc)
    return exit_code(errors, check_only, changed)
