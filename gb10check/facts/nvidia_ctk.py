"""NVIDIA Container Toolkit facts: `nvidia-ctk --version`, the CDI specs it generates (`nvidia-ctk cdi generate`:
/etc/cdi/nvidia.yaml, /var/run/cdi/nvidia.yaml) and the runtime's configuration
(/etc/nvidia-container-runtime/config.toml beside docker's /etc/docker/daemon.json).

`nvidia-ctk --version` prints `NVIDIA Container Toolkit CLI version X.Y.Z` (release candidates: `1.15.0-rc.4`), then,
in many releases, `commit: <sha>` (not read). A CDI spec names the driver it was generated for twice over: the host libraries
it mounts carry the driver version as their suffix (libcuda.so.<ver>, libnvidia-ml.so.<ver>, libEGL_nvidia.so.<ver> ...),
and since toolkit 1.17.5 the enable-cuda-compat hook carries `--host-driver-version=<ver>`. The runtime's `mode` (in
config.toml's [nvidia-container-runtime] table) is "auto" when unset; "legacy" goes through nvidia-container-cli, "cdi"
and "jit-cdi" through CDI specs.

The gather prints each file after a `-- PATH --` line and `-- PATH: absent --` for one not there.
"""

import json
import re
import tomllib
from dataclasses import dataclass, field

import yaml

from ._text import ParseError, parser, yaml_document

VERSION = re.compile(r"^NVIDIA Container Toolkit CLI version (?P<version>\d+\.\d+\.\d+(?:[-~][\w.]+)?)\s*$", re.M)
# A driver version as the driver's files carry it: 580.95.05, 580.126.09 (three digits first, unlike libcuda.so.1 or a
# Tegra libcuda.so.1.1).
DRIVER = r"\d{3}\.\d{1,3}(?:\.\d{1,3})?"
DRIVER_LIBRARY = re.compile(rf"/(lib[\w.-]*?nvidia[\w.-]*|libcuda|libcudadebugger)\.so\.(?P<version>{DRIVER})$")
HOST_DRIVER_ARG = re.compile(rf"^--host-driver-version(?:=(?P<version>{DRIVER}))?$")
CDI_SPECS = ("/etc/cdi/nvidia.yaml", "/var/run/cdi/nvidia.yaml")  # where `nvidia-ctk cdi generate` writes them
SECTION = re.compile(r"^-- (?P<path>/\S+?)(?P<absent>: absent)? --$", re.M)


@dataclass
class ToolkitVersion:
    version: str

    def __repr__(self) -> str:
        return f"<nvidia-ctk {self.version}>"


@parser
def parse_version(text: str) -> ToolkitVersion:
    m = VERSION.search(text)
    if m is None:
        raise ParseError("nvidia_ctk_version", "'NVIDIA Container Toolkit CLI version X.Y.Z' (nvidia-ctk --version)", text)
    return ToolkitVersion(m["version"])


@dataclass
class CdiSpec:
    path: str
    kind: str
    cdi_version: str
    driver_versions: list[str]  # every driver version the spec names (one, for a spec generated once)
    libraries: dict[str, str] = field(default_factory=dict)  # version -> a library path (or the hook argument) naming it


def sections(kind: str, text: str, paths: tuple[str, ...]) -> dict[str, str | None]:
    """The gather's `-- PATH --` sections, one per path in its order and nothing before them: PATH -> the file's text, or
    None for `-- PATH: absent --`. A section lost or out of place (a cut output) is refused."""
    found = list(SECTION.finditer(text))
    if [m["path"] for m in found] != list(paths) or text[:found[0].start()].strip():
        raise ParseError(kind, f"a '-- PATH --' section for each of {', '.join(paths)}, in that order (the gather's output)", text)
    return {m["path"]: None if m["absent"] else text[m.end():found[i + 1].start() if i + 1 < len(found) else len(text)].strip("\n")
            for i, m in enumerate(found)}


def _walk(node):
    """Every mapping in a YAML document, depth first."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def cdi_spec(path: str, text: str) -> CdiSpec:
    try:
        doc = yaml_document(text)
    except yaml.YAMLError:
        raise ParseError("cdi_spec", f"a CDI spec in YAML at {path}", text) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str) or "cdiVersion" not in doc:
        raise ParseError("cdi_spec", f"a CDI spec (cdiVersion, kind, devices) at {path}", text)
    versions: dict[str, str] = {}
    for item in _walk(doc):
        for key in ("hostPath", "containerPath", "path"):
            m = DRIVER_LIBRARY.search(str(item.get(key, "")))
            if m and versions.get(m["version"], "--").startswith("--"):  # a library names it better than a hook's argument
                versions[m["version"]] = str(item[key])
        args = [str(a) for a in item.get("args") or []] if isinstance(item.get("args"), list) else []
        for i, arg in enumerate(args):
            m = HOST_DRIVER_ARG.match(arg)
            if m:
                version = m["version"] or (args[i + 1] if i + 1 < len(args) and re.fullmatch(DRIVER, args[i + 1]) else None)
                if version:
                    versions.setdefault(version, f"--host-driver-version={version}")
    return CdiSpec(path, doc["kind"], str(doc["cdiVersion"]), sorted(versions), versions)


@parser
def parse_cdi_specs(text: str) -> list[CdiSpec]:
    """The CDI specs found (none: an empty list), each with the driver versions it names."""
    return [cdi_spec(path, body) for path, body in sections("cdi_spec", text, CDI_SPECS).items() if body is not None]


@dataclass
class RuntimeConfig:
    mode: str | None  # config.toml's [nvidia-container-runtime] mode ("auto" when unset); None: no config.toml
    docker_runtimes: list[str]  # daemon.json's runtimes; [] without daemon.json
    docker_default_runtime: str | None
    docker_cdi: bool | None  # daemon.json's features.cdi; None: not set (docker's own default)

    @property
    def uses_cdi(self) -> bool:
        return self.mode in ("cdi", "jit-cdi") or bool(self.docker_cdi)

    def shown(self) -> str:
        cdi = {True: "on", False: "off", None: "docker's default"}[self.docker_cdi]
        return (f"runtime mode {self.mode or '(no config.toml)'}, docker's CDI feature {cdi}, default runtime "
                f"{self.docker_default_runtime or 'runc'}")


CONFIG_TOML = "/etc/nvidia-container-runtime/config.toml"
DAEMON_JSON = "/etc/docker/daemon.json"


@parser
def parse_runtime_config(text: str) -> RuntimeConfig:
    found = sections("nvidia_runtime_config", text, (CONFIG_TOML, DAEMON_JSON))
    toml_text, daemon_text = found[CONFIG_TOML], found[DAEMON_JSON]
    mode = None
    if toml_text is not None:
        try:
            table = tomllib.loads(toml_text).get("nvidia-container-runtime", {})
        except tomllib.TOMLDecodeError as exc:
            raise ParseError("nvidia_runtime_config", f"TOML in {CONFIG_TOML} ({exc})", toml_text) from None
        mode = str(table.get("mode", "auto")) if isinstance(table, dict) else "auto"
    runtimes, default, cdi = [], None, None
    if daemon_text is not None and daemon_text.strip():
        try:
            daemon = json.loads(daemon_text)
        except ValueError:
            raise ParseError("nvidia_runtime_config", f"JSON in {DAEMON_JSON}", daemon_text) from None
        if not isinstance(daemon, dict):
            raise ParseError("nvidia_runtime_config", f"a JSON object in {DAEMON_JSON}", daemon_text)
        runtimes = sorted(daemon.get("runtimes") or {}) if isinstance(daemon.get("runtimes"), dict) else []
        default = daemon.get("default-runtime") if isinstance(daemon.get("default-runtime"), str) else None
        features = daemon.get("features") if isinstance(daemon.get("features"), dict) else {}
        cdi = features.get("cdi") if isinstance(features.get("cdi"), bool) else None
    return RuntimeConfig(mode, runtimes, default, cdi)
