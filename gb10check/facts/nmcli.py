"""NetworkManager's connection profiles, as gb10check's gather prints them: for each profile of
`nmcli -t -f UUID,DEVICE connection show`, a `-- profile UUID --` line, `device:DEV` (empty when inactive) and
`nmcli -t -f connection.id,connection.type,connection.interface-name,connection.autoconnect,ipv4.method connection show
UUID` (terse `key:value` lines; nmcli escapes a ':' inside a value as '\\:'). The same command without `-t` pads the
values into a column, escapes nothing and prints `--` for an empty value: read the same way. A node without nmcli, or whose
NetworkManager does not run, prints one `-- nmcli: absent --` / `-- NetworkManager: not running --` line instead.
"""

import re
from dataclasses import dataclass, field

from ._text import ParseError, parser

NOTE = re.compile(r"^-- (?P<note>.+?) --$")


@dataclass
class NmProfile:
    uuid: str
    name: str | None = None
    type: str | None = None  # 802-3-ethernet, bridge, wifi ...
    interface: str | None = None  # connection.interface-name: the netdev it is bound to, if any
    device: str | None = None  # the netdev it is active on now, if any
    ipv4_method: str | None = None  # auto (DHCP) | manual | link-local | disabled | shared
    autoconnect: str | None = None  # connection.autoconnect: yes | no (None: not printed, as by gb10check before it asked)
    error: str | None = None  # nmcli's answer instead of the settings ("Error: unknown connection '...'."): none were read

    @property
    def netdevs(self) -> set[str]:
        return {d for d in (self.interface, self.device) if d}


@dataclass
class NmProfiles:
    networkmanager: str  # running | not running | absent
    profiles: list[NmProfile] = field(default_factory=list)


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


@parser
def parse(text: str) -> NmProfiles:
    found = NmProfiles("running")
    current: NmProfile | None = None
    seen_note = False
    keys = {"device": "device", "connection.id": "name", "connection.type": "type",
            "connection.interface-name": "interface", "connection.autoconnect": "autoconnect", "ipv4.method": "ipv4_method"}
    if not any(NOTE.match(line.strip()) for line in text.splitlines()) and re.search(r"^\s*connection\.id:", text, re.M):
        # one profile's `nmcli [-t] [-f ...] connection show ID` pasted alone: that profile (its uuid if printed)
        uuid = re.search(r"^\s*connection\.uuid:\s*(\S+)", text, re.M)
        text = f"-- profile {uuid[1] if uuid else ''} --\n{text}"
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if (n := NOTE.match(line)):
            seen_note = True
            note = n["note"]
            if note.startswith("profile "):
                current = NmProfile(note[len("profile "):].strip())
                found.profiles.append(current)
            elif note == "nmcli: absent":
                found.networkmanager = "absent"
            elif note == "NetworkManager: not running":
                found.networkmanager = "not running"
            continue
        if current is not None and line.startswith("Error: "):
            current.error = current.error or line
            continue
        key, sep, value = line.partition(":")
        if current is not None and sep and key in keys:
            if value[:1] == " ":  # nmcli without -t: values padded into a column, not escaped, and "--" for none
                value = value.strip()
                setattr(current, keys[key], None if value == "--" else value or None)
            else:
                setattr(current, keys[key], _unescape(value).strip() or None)
    if not seen_note:
        raise ParseError("nmcli_profiles", "'-- profile UUID --' blocks of `nmcli -t -f connection.id,...,ipv4.method "
                         "connection show UUID` lines (gb10check's NM_PROFILES command)", text)
    return found
