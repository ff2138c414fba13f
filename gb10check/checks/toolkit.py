"""The NVIDIA Container Toolkit: known-bad releases (gb10check/advisories.py rows judged by test_container_toolkit),
the CDI spec generated for the driver the node has loaded, and the toolkit's version and mode as on rank 0.
Facts in (gb10check/facts/nvidia_ctk.py), findings out."""

from ..advisories import ADVISORIES, Advisory
from ..facts.nvidia_ctk import CdiSpec, RuntimeConfig, ToolkitVersion
from ..remedies import Code
from ..verdict import Finding
from .platform import version_key

CHECK = "test_container_toolkit"


def toolkit_affects(advisory: Advisory, version: ToolkitVersion, config: RuntimeConfig) -> str | None:
    """Why a toolkit advisory affects the node ('toolkit 1.19.1, CDI: runtime mode cdi ...'), or None."""
    v = version_key(version.version)
    if (advisory.toolkit_min and v < version_key(advisory.toolkit_min)) or \
            (advisory.toolkit_max and v >= version_key(advisory.toolkit_max)):
        return None
    why = f"nvidia-ctk {version.version}"
    if advisory.toolkit_cdi:
        if not config.uses_cdi:
            return None
        why += f" with CDI ({config.shown()})"
    return why


def judge_toolkit_advisories(node: str, version: ToolkitVersion, config: RuntimeConfig, advisories=ADVISORIES) -> list[Finding]:
    """Each known-bad toolkit release the node runs: a failure or a warning as its advisory says, with its fix and source."""
    return [Finding(Code.KNOWN_BAD_VERSION, node, f"{why} [{a.id}: {a.symptom}]", f"not {a.what}", warning=not a.fail,
                    advisory=a.id, advisory_fix=a.fix, source=a.source)
            for a in advisories if a.check == CHECK and (why := toolkit_affects(a, version, config))]


def judge_cdi_spec(node: str, specs: list[CdiSpec], loaded: str, config: RuntimeConfig) -> list[Finding]:
    """Every CDI spec names the loaded driver (loaded: the kernel module's version); none there where containers get the
    GPU through CDI fails. A spec that names no driver version at all cannot be judged: it says so."""
    found = []
    for spec in specs:
        stale = [v for v in spec.driver_versions if v != loaded]
        if stale:
            shown = ", ".join(f"{v} ({spec.libraries[v]})" for v in stale)
            found.append(Finding(Code.CDI_SPEC_STALE, node, f"{spec.path} generated for driver {shown}",
                                 f"the CDI spec of the loaded driver {loaded}", path=spec.path))
        elif not spec.driver_versions:
            found.append(Finding(Code.UNKNOWN_NEED, node, f"{spec.path} names no driver version (no libcuda.so.<version>, "
                                 "no --host-driver-version)", "the driver the spec was generated for",
                                 what="the driver the CDI spec was generated for",
                                 how=f"compare {spec.path}'s libraries with /proc/driver/nvidia/version by hand"))
    if not specs and config.uses_cdi:
        found.append(Finding(Code.CDI_SPEC_MISSING, node, f"no /etc/cdi/nvidia.yaml or /var/run/cdi/nvidia.yaml, with "
                             f"{config.shown()}", "a CDI spec for the loaded driver"))
    return found


def toolkit_identity(version: ToolkitVersion, config: RuntimeConfig) -> dict[str, str]:
    """What must be equal on every node: the toolkit's release and how containers get the GPU."""
    cdi = {True: "on", False: "off", None: "docker's default"}[config.docker_cdi]
    return {"NVIDIA Container Toolkit version": version.version, "runtime mode (config.toml)": config.mode or "no config.toml",
            "docker's CDI feature": cdi, "docker's default runtime": config.docker_default_runtime or "runc"}


def judge_toolkit_same(node: str, head: str, mine: dict[str, str], heads: dict[str, str]) -> list[Finding]:
    """The toolkit's version and mode as on rank 0."""
    return [Finding(Code.TOOLKIT_DIFFERS, node, f"{what} {mine.get(what)!r}", f"{heads[what]!r} as on {head}", head=head,
                    what=what) for what in heads if mine.get(what) != heads[what]]
