"""Debian package facts: `dpkg-query -W -f='${Package} ${Status}\n' PATTERN...` and unattended-upgrades' configuration.

dpkg's Status is three words, `want ok state`: `install ok installed`, `hold ok installed` (apt-mark hold),
`deinstall ok config-files`, `unknown ok not-installed` (a name dpkg knows but never installed). The
configuration (`apt-config dump Unattended-Upgrade`: apt's merge of every file of /etc/apt/apt.conf.d; or the file
50unattended-upgrades itself) is apt's syntax: `//`, `#` and
`/* */` comments, `Name { "a"; "b"; };` lists, nested scopes (`Unattended-Upgrade { Package-Blacklist { ... }; };`),
`Name:: "a";` entries, names in any case; `Unattended-Upgrade::Package-Blacklist` holds regular expressions (matched
from the package name's start).
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


# `dpkg -l`'s first column: desired action, then state (then an error flag): "hi" is hold + installed, "rc" deinstall +
# config-files.
_DPKG_L_WANT = {"u": "unknown", "i": "install", "h": "hold", "r": "deinstall", "p": "purge"}
_DPKG_L_STATE = {"n": "not-installed", "c": "config-files", "H": "half-installed", "U": "unpacked", "F": "half-configured",
                 "W": "triggers-awaited", "t": "triggers-pending", "i": "installed"}
# `dpkg -l`'s header: "Desired=Unknown/Install/...", "| Status=Not/Inst/...", "|/ Err?=...", "||/ Name Version ...", "+++-===".
DPKG_L_HEADER = re.compile(r"^(?:Desired=|\|\s*Status=|\|/\s*Err\?=|\|\|/\s+Name\b|\+\+\+-)")
NO_MATCH = re.compile(r"^dpkg-query: no packages found matching \S+$")
DPKG_L = re.compile(r"^(?P<want>[uihrp])(?P<state>[ncHUFWti])[R ]\s+(?P<package>[a-z0-9][a-z0-9+.-]+)(?::\S+)?\s+\S+")


@parser
def parse_dpkg_query(text: str) -> list[Package]:
    """dpkg-query's `${Package} ${Status}` lines; `dpkg -l` rows (`hi  nvidia-driver-580  580.95.05-0ubuntu1  arm64  ...`)
    are read too."""
    found = []
    unmatched = False  # dpkg-query's own answer for a pattern no package matches (on stderr, exit 1)
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[1] in _WANTS and parts[3] in _STATES:
            package = Package(parts[0].split(":")[0], parts[1], parts[3])
        elif (m := DPKG_L.match(line)):
            package = Package(m["package"], _DPKG_L_WANT[m["want"]], _DPKG_L_STATE[m["state"]])
        elif NO_MATCH.match(line.strip()):
            unmatched = True
            continue
        elif not line.strip() or DPKG_L_HEADER.match(line.strip()):
            continue
        else:  # a line cut short or another tool's: never a package fewer
            raise ParseError("dpkg_query", "only 'PACKAGE WANT ok STATE' lines (or dpkg -l rows)", line)
        if package in found:  # dpkg lists each package once
            raise ParseError("dpkg_query", f"each package once ({package.package} is listed twice)", line)
        found.append(package)
    if not found and unmatched and all(NO_MATCH.match(line.strip()) for line in text.splitlines() if line.strip()):
        return []  # what dpkg-query says: no package matches any pattern (not installed)
    if not found:
        raise ParseError("dpkg_query", "'PACKAGE WANT ok STATE' lines (dpkg-query -W -f='${Package} ${Status}\\n' ...)", text)
    return found


@dataclass
class UnattendedUpgrades:
    blacklist: list[str]  # Unattended-Upgrade::Package-Blacklist, as written (regular expressions)
    origins: list[str]  # Unattended-Upgrade::Allowed-Origins / Origins-Pattern entries


def _strip_comments(text: str) -> str:
    """apt's comments: `//` and `#` to the end of the line (outside quotes; `#include` and `#clear` are directives), and
    `/* ... */`."""
    out = []
    for line in text.splitlines():
        line = re.sub(r'("(?:[^"\\]|\\.)*")|//.*$|#(?!include\b|clear\b).*$', lambda m: m[1] or "", line)
        out.append(line)
    return re.sub(r"/\*.*?\*/", "", "\n".join(out), flags=re.S)


TOKEN = re.compile(r'"(?P<value>[^"]*)"|(?P<open>\{)|(?P<close>\})|(?P<end>;)|(?P<name>[^\s"{};]+)')


def _settings(body: str) -> list[tuple[str, str]]:
    """apt's configuration as (full name, value) pairs, in order: `A::B "v";`, `A { B "v"; };`, `A::B { "v1"; "v2"; };`,
    and `apt-config dump`'s `A::B:: "v";` all give ('a::b', 'v'). Names are compared without case, as apt does."""
    pairs: list[tuple[str, str]] = []
    scope: list[str] = []
    name: str | None = None
    for m in TOKEN.finditer(re.sub(r"^\s*#(?:include|clear)\b.*$", "", body, flags=re.M)):
        if m["name"] is not None:
            name = m["name"].lower().rstrip(":")
        elif m["value"] is not None:
            full = "::".join([*scope, name] if name else scope)
            pairs.append((full, m["value"]))
            name = None
        elif m["open"]:
            scope.append(name or "")
            name = None
        elif m["close"]:
            if scope:
                scope.pop()
            name = None
        else:
            name = None
    return pairs


@parser
def parse_unattended_upgrades(text: str) -> UnattendedUpgrades:
    body = _strip_comments(text)
    settings = _settings(body)
    if not any(name.startswith("unattended-upgrade") for name, _ in settings) \
            and not re.search(r"^\s*Unattended-Upgrade\b", body, re.I | re.M):
        raise ParseError("unattended_upgrades", "apt configuration with Unattended-Upgrade:: settings "
                         "(/etc/apt/apt.conf.d/50unattended-upgrades)", text)
    # `apt-config dump` prints a list's own name with "" before its entries: that is not an entry.
    blacklist = [v for n, v in settings if n == "unattended-upgrade::package-blacklist" and v]
    origins = [v for n, v in settings if n in ("unattended-upgrade::allowed-origins", "unattended-upgrade::origins-pattern")
               and v]
    return UnattendedUpgrades(blacklist, origins)
