"""The nm-release-qsfp step: test_no_dhcp_on_qsfp's fix, made on every node (or the ones named).

It reads what the check reads (gather.NM_PROFILES: every NetworkManager profile with its type, bound interface,
autoconnect and ipv4.method, and the device it is active on; gather.IBDEV2NETDEV for the ConnectX netdevs beside the
cluster file's links) and picks what the check fails (checks.netpath.dhcp_on_qsfp: DHCP active on a QSFP netdev, or
bound to one with autoconnect on). Each is shown with its commands, then made inert: `nmcli connection modify UUID
connection.autoconnect no` (it never starts again: the setting persists, and a profile that still exists keeps
NetworkManager from making a new "Wired connection" for the port) and, where it is active, `nmcli connection down UUID`
(its DHCP client stops now); with --delete, `nmcli connection delete UUID` instead. It does not set the device unmanaged
(`nmcli device set NETDEV managed no` lasts only until NetworkManager restarts, and where netplan renders through
NetworkManager it would also stop the profile that gives the port its address). A profile netplan generated
(`netplan-NETDEV`) is named and left alone: its DHCP comes from a file in /etc/netplan, and the fix belongs there.
Afterwards the profiles are read again, and the links' addresses too: taking a profile down can take the port's address
with it, and scripts/netplan puts it back. A node without NetworkManager has nothing to do. Idempotent.
"""

import shlex
from dataclasses import dataclass

from rich.console import Console

from .. import gather
from ..checks import netpath
from ..facts.nmcli import NmProfile, NmProfiles
from ..remote import RemoteError, RemoteNode
from . import converge
from .converge import exit_code
from .netplan import missing_addresses

NMCLI_TIMEOUT_S = 60  # `nmcli connection down` waits for the deactivation (its own default: 10 s)


@dataclass
class Release:
    profile: NmProfile
    netdevs: list[str]  # the QSFP netdevs it runs DHCP on
    commands: list[str]  # to run as root, in order; empty when it is not ours to change (netplan's)

    @property
    def from_netplan(self) -> bool:
        return not self.commands


def generated_by_netplan(profile: NmProfile) -> bool:
    """netplan's NetworkManager renderer names the profiles it writes `netplan-<id>`; they are regenerated from /etc/netplan."""
    return (profile.name or "").startswith("netplan-")


def release_commands(profile: NmProfile, delete: bool = False) -> list[str]:
    """The nmcli commands (run as root) that leave the profile unable to run DHCP: deleted, or autoconnect off and down."""
    uuid = shlex.quote(profile.uuid)
    if delete:
        return [f"nmcli connection delete {uuid}"]
    commands = [] if profile.autoconnect == "no" else [f"nmcli connection modify {uuid} connection.autoconnect no"]
    return commands + ([f"nmcli connection down {uuid}"] if profile.device else [])


def plan(profiles: NmProfiles, qsfp: set[str], delete: bool = False) -> list[Release]:
    """What to release on a node: each profile test_no_dhcp_on_qsfp fails, with its commands (none for netplan's)."""
    return [Release(p, on, [] if generated_by_netplan(p) else release_commands(p, delete))
            for p, on in netpath.dhcp_on_qsfp(profiles, qsfp)]


def describe(r: Release) -> str:
    how = "active" if r.profile.device in r.netdevs else "autoconnect on"
    return f"NetworkManager profile {r.profile.name!r} ({r.profile.uuid}) runs DHCP on {', '.join(r.netdevs)} ({how})"


def done_words(r: Release) -> str:
    """What its commands did, in a few words: 'deleted', 'autoconnect no, down' ..."""
    words = {"delete": "deleted", "modify": "autoconnect no", "down": "down"}
    return ", ".join(words[c.split()[2]] for c in r.commands)


def read(remote: RemoteNode) -> tuple[NmProfiles, set[str]]:
    """The node's NetworkManager profiles and QSFP netdevs, as the check reads them."""
    out = remote.run(gather.NM_PROFILES)
    profiles, why = gather.parse_or_error("nmcli_profiles", out.stdout)
    if profiles is None:
        raise RemoteError(f"{remote.name}: could not read the NetworkManager profiles ({why})").at(remote, gather.NM_PROFILES)
    mapped = gather.parse_or_error("ibdev2netdev", remote.run(gather.IBDEV2NETDEV).stdout)[0]
    return profiles, netpath.qsfp_netdevs(remote.links, mapped)


def step(nodes: list[RemoteNode], check_only: bool = False, delete: bool = False, console: Console | None = None) -> int:
    """0: no node has (now) a DHCP profile live on a QSFP netdev; 1: --check found one; 2: an error, or a profile that is
    netplan's to fix (named, with where)."""
    console = console or converge.console()
    verb = "would change" if check_only else ("deleting" if delete else "releasing")
    changed = errors = 0
    for remote in nodes:
        try:
            profiles, qsfp = read(remote)
            if profiles.networkmanager != "running":
                console.print(f"[green]nothing to do[/] {remote.name}: NetworkManager {profiles.networkmanager}")
                continue
            releases = plan(profiles, qsfp, delete)
            if not releases:
                console.print(f"[green]unchanged[/] {remote.name}: no NetworkManager profile runs DHCP on {', '.join(sorted(qsfp))}")
                continue
            for r in releases:
                if r.from_netplan:
                    errors += 1
                    console.print(f"[red]not changed[/] {remote.name}: {describe(r)}: netplan generated it from a file in "
                                  f"/etc/netplan that gives {r.netdevs[0]} DHCP (dhcp4: true): take that out there "
                                  f"(grep -l {r.netdevs[0]} /etc/netplan/*.yaml; scripts/netplan writes the cluster's addresses), "
                                  "then sudo netplan apply")
                    continue
                changed += 1
                console.print(f"[yellow]{verb}[/] {remote.name}: {describe(r)}\n" + "\n".join(f"  sudo {c}" for c in r.commands))
            mine = [r for r in releases if not r.from_netplan]
            if check_only or not mine:
                continue
            missing_before = set(missing_addresses(remote))
            failed = False
            for r in mine:
                for command in r.commands:
                    done = remote.run(command, sudo=True, timeout=NMCLI_TIMEOUT_S)
                    said = (done.stderr or done.stdout).strip().splitlines()
                    if done.rc != 0 and not (command.startswith("nmcli connection down") and "not an active connection" in " ".join(said)):
                        failed = True
                        console.print(f"[red]failed[/] {remote.name}: `sudo {command}` exited {done.rc}: {said[-1] if said else 'no output'}")
                        break
            left = [r for r in plan(*read(remote), delete) if not r.from_netplan]
            lost = [a for a in missing_addresses(remote) if a not in missing_before]
            if failed or left:
                errors += 1
                if left:
                    console.print(f"[red]failed[/] {remote.name}: still live after the change: " + "; ".join(describe(r) for r in left))
                continue
            console.print(f"[green]{'deleted' if delete else 'released'}[/] {remote.name}: "
                          + "; ".join(f"{r.profile.name!r} ({done_words(r)})" for r in mine))
            if lost:
                errors += 1
                console.print(f"[red]address lost[/] {remote.name}: not up since the change: {', '.join(lost)}; "
                              "scripts/netplan applies the links' addresses again")
        except RemoteError as exc:
            errors += 1
            converge.error(console, exc)
    return exit_code(errors, check_only, changed)
