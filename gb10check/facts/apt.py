"""Debian package facts: `dpkg-query -W -f='${Package} ${Status}\n' PATTERN...` and unattended-upgrades' configuration.

dpkg's Status is three words, `want ok state`: `install ok installed`, `hold ok installed` (apt-mark hold),
`deinstall ok config-files`, `unknown ok not-installed` (a name dpkg knows but never installed). The
configuration is apt's syntax, as `apt-config dump Unattended-Upgrade` prints it merged from every file of
/etc/apt/apt.conf.d (`Name:: "a";` per list entry) or as 50unattended-upgrades is written (`//` comments, `Name { "a"; "b"; };`
lists); `Unattended-Upgrade::Package-Blacklist` holds regular expressions (matched from the package name's start).
"""

import re
from dataclasses import dataclass

from ._text import ParseError, parser

_WANTS = {"unknown", "install", "hold", "deinstall", "purge"}
_STATES = {"not-installed", "config-files", "half-installed", "unpacked", "half-configured", "triggers-awaited",
           "triggers-pending", "installed"}


@dataclass
class Package:
    package: str
    want: str  # install | hold | deinstall | purge | unknown
    state: str  # installed | config-files | not-installed ...

    @property
    def installed(self) -> bool:
        return self.state == "installed"

    @property
    def held(self) -> bool:
        return self.want == "hold"


@parser
def parse_dpkg_query(text: str) -> list[Package]:
    found = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[1] in _WANTS and parts[3] in _STATES:
            found.append(Package(parts[0].split(":")[0], parts[1], parts[3]))
    if not found:
        raise ParseError("dpkg_query", "'PACKAGE WANT ok STATE' lines (dpkg-query -W -f='${Package} ${Status}\\n' ...)", text)
    return found


@dataclass
class UnattendedUpgrades:
    blacklist: list[str]  # Unattended-Upgrade::Package-Blacklist, as written (regular expressions)
    origins: list[str]  # Unattended-Upgrade::Allowed-Origins / Origins-Pattern entries


def _strip_comments(text: str) -> str:
    out = []
    for line in text.splitlines():
        line = re.sub(r'("(?:[^"\\]|\\.)*")|//.*$', lambda m: m[1] or "", line)  # // outside quotes
        out.append(line)
    return re.sub(r"/\*.*?\*/", "", "\n".join(out), flags=re.S)


def _list(body: str, name: str) -> list[str] | None:
    m = re.search(re.escape(name) + r"\s*\{(.*?)\}\s*;", body, re.S)
    return re.findall(r'"([^"]*)"', m[1]) if m else None


@parser
def parse_unattended_upgrades(text: str) -> UnattendedUpgrades:
    body = _strip_comments(text)
    blacklist = _list(body, "Unattended-Upgrade::Package-Blacklist")
    # A single-line form `Unattended-Upgrade::Package-Blacklist:: "nvidia-";` appends one entry; `apt-config dump` prints
    # every list that way, merged from every file of apt.conf.d.
    origins = [*(_list(body, "Unattended-Upgrade::Allowed-Origins") or []), *(_list(body, "Unattended-Upgrade::Origins-Pattern") or []),
               *re.findall(r'Unattended-Upgrade::(?:Allowed-Origins|Origins-Pattern)::\s*"([^"]*)"\s*;', body)]
    extra = re.findall(r'Unattended-Upgrade::Package-Blacklist::\s*"([^"]*)"\s*;', body)
    if blacklist is None and not extra and not origins and "Unattended-Upgrade::" not in body:
        raise ParseError("unattended_upgrades", "apt configuration with Unattended-Upgrade:: settings "
                         "(/etc/apt/apt.conf.d/50unattended-upgrades)", text)
    return UnattendedUpgrades([*(blacklist or []), *extra], origins)
