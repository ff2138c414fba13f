"""The NCCL configuration a rank really gets: NCCL_* keys of the configuration files (in the image and on the host)
beside the compose environment, and the net plugin NCCL loads in the image.

NCCL's precedence (NVIDIA/nccl src/misc/param.cc initEnvFunc/setEnvFile, src/os/linux.cc ncclOsSetEnv: setenv(k, v, 0);
facts/nccl_conf.py): the process's environment first (the compose environment over the image's ENV), then
$NCCL_CONF_FILE or else $HOME/.nccl.conf, then /etc/nccl.conf; the first to set a key keeps it.

The rules:
- a file's key that disagrees with the compose environment fails: the rank gets the compose value, yet every NCCL
  started without that environment (nccl-tests on the host, a shell or canary in the image) gets the file's, so what
  is measured is not what serves; one of the two values is wrong;
- a key only a file (or the image's ENV) sets warns: the rank gets it though the compose file, the one place the
  ranks' configuration is read and compared across nodes, does not show it;
- the net plugin: NCCL dlopens NCCL_NET_PLUGIN's libraries (`none`: none), else `libnccl-net.so`, and uses a plugin
  that loads ahead of its own IB and Socket transports (src/plugin/net.cc initPluginLibsOnceFunc, plugin_open.cc
  openPluginLib: a bare name NAME is also tried as libnccl-net-NAME.so). Where the cluster file names RDMA devices on
  its links (the design: NCCL's own IB transport over RoCE on the QSFP links), a plugin that would load warns.
"""

from ..facts.nccl_conf import NcclConfProbe
from ..remedies import Code
from ..verdict import Finding

# Variables named NCCL_* that NCCL itself never reads: CUDA and NGC images set NCCL_VERSION to name their NCCL.
NOT_READ_BY_NCCL = frozenset({"NCCL_VERSION"})
DEFAULT_PLUGIN = "libnccl-net.so"


def _nccl_key(key: str) -> bool:
    return key.strip().startswith("NCCL_") and key.strip() not in NOT_READ_BY_NCCL


def _value(v: str) -> str:
    return repr(v) if v != v.strip() or not v else v


def judge_files(node: str, place: str, probe: NcclConfProbe, compose_env: dict[str, str]) -> list[Finding]:
    """Every NCCL_* key of the place's configuration files (and, in the image, of its ENV) against the compose environment.
    place: "image IMAGE" or "host"."""
    findings: list[Finding] = []
    image_env = {k: v for k, v in (probe.env or {}).items() if _nccl_key(k) and k != "NCCL_CONF_FILE"}
    first_file: dict[str, str] = {}  # key -> the file that sets it first (NCCL's order: the probe's)
    for path, keys in probe.files.items():
        for key, value in (keys or {}).items():
            if not _nccl_key(key):
                continue
            where = f"{node}:{place} {path}"
            params = dict(key=key.strip(), value=value, file=path, place=place)
            if key != key.strip():
                findings.append(Finding(Code.NCCL_CONF_SILENT, where, f"{key!r}={_value(value)}: the spaces are part of the "
                                        f"variable's name, so NCCL never reads {key.strip()}", f"{key.strip()}=VALUE with no "
                                        "spaces around '='", warning=True, **params))
                continue
            if key in compose_env:
                if value != compose_env[key]:
                    findings.append(Finding(
                        Code.NCCL_CONF_CONFLICT, where, f"{key}={_value(value)} in {path} ({place}), the compose environment "
                        f"sets {key}={_value(compose_env[key])}", f"one value of {key}: the compose environment's (the rank "
                        "gets it; NCCL started without that environment gets the file's)", compose=compose_env[key], **params))
            elif first_file.get(key, path) == path:  # a later file's key that an earlier one set is never applied
                gets = (f"the image's ENV sets {key}={_value(image_env[key])}, which the rank gets instead" if key in image_env
                        else "the rank gets it" if place.startswith("image") else "NCCL run on the host (nccl-tests) gets it")
                findings.append(Finding(Code.NCCL_CONF_SILENT, where, f"{key}={_value(value)} set only in {path} ({place}): "
                                        f"{gets}; the compose environment does not show it",
                                        "every NCCL_* setting in the compose environment", warning=True, **params))
            first_file.setdefault(key, path)
    for key, value in image_env.items():
        if key not in compose_env:
            findings.append(Finding(Code.NCCL_CONF_SILENT, f"{node}:{place} ENV", f"{key}={_value(value)} set by the image's ENV: "
                                    "the rank gets it; the compose environment does not show it",
                                    "every NCCL_* setting in the compose environment", warning=True, key=key, value=value,
                                    file="the image's ENV (its Dockerfile)", place=place))
    return findings


def net_plugin_setting(probe: NcclConfProbe, compose_env: dict[str, str]) -> tuple[str | None, str]:
    """(NCCL_NET_PLUGIN as the rank gets it or None, where it comes from), by NCCL's precedence."""
    if "NCCL_NET_PLUGIN" in compose_env:
        return compose_env["NCCL_NET_PLUGIN"], "the compose environment"
    if probe.env and "NCCL_NET_PLUGIN" in probe.env:
        return probe.env["NCCL_NET_PLUGIN"], "the image's ENV"
    for path, keys in probe.files.items():
        if keys and "NCCL_NET_PLUGIN" in keys:
            return keys["NCCL_NET_PLUGIN"], path
    return None, "unset"


def plugin_names(setting: str | None) -> list[str]:
    """The libraries NCCL tries, in order, for NCCL_NET_PLUGIN's value (src/plugin/net.cc, src/plugin/plugin_open.cc)."""
    if setting is None or not setting.strip():
        return [DEFAULT_PLUGIN] if setting is None else []
    if setting.strip().lower() == "none":
        return []
    names = []
    for name in (n for n in setting.split(",") if n):
        names.append(name)
        if "/" not in name and not (name.startswith("lib") and name.endswith(".so")):
            names.append(f"libnccl-net-{name}.so")
    return names


def net_plugin(probe: NcclConfProbe, compose_env: dict[str, str]) -> tuple[str | None, str]:
    """(the plugin library NCCL loads in the image or None, what decides it), looked up as dlopen does: LD_LIBRARY_PATH,
    the loader's cache, the default folders; a name with a slash is a path, loaded when it exists."""
    setting, source = net_plugin_setting(probe, compose_env)
    said = f"NCCL_NET_PLUGIN={setting} ({source})" if setting is not None else "NCCL_NET_PLUGIN unset"
    libraries = probe.libraries or []
    for name in plugin_names(setting):
        if "/" in name:
            return name, f"{said}: a path, loaded if it exists in the image"
        for how in ("ld_library_path", "cache", "default"):
            found = next((path for h, n, path in libraries if h == how and n == name), None)
            if found:
                return found, f"{said}: {name} found through {how.replace('_', ' ').replace('ld library path', 'LD_LIBRARY_PATH')}"
    tried = ", ".join(plugin_names(setting))
    return None, f"{said}: {'no ' + tried + ' in the library path' if tried else 'no external plugin'}"


def judge_net_plugin(node: str, image: str, probe: NcclConfProbe, compose_env: dict[str, str],
                     wants_internal_ib: bool) -> list[Finding]:
    """A plugin NCCL would load, where the cluster wants NCCL's own IB transport: a warning (NCCL falls back to its own
    transports only when the plugin finds no device)."""
    if probe.libraries is None:
        raise ValueError("the image probe read no library list")  # the image's probe always has one: a bug of the caller
    plugin, why = net_plugin(probe, compose_env)
    if plugin is None or not wants_internal_ib:
        return []
    return [Finding(Code.NCCL_NET_PLUGIN, f"{node}:image {image}", f"NCCL loads the external net plugin {plugin} ({why}) "
                    "ahead of its own IB transport", "NCCL's own IB transport over RoCE (NCCL_NET_PLUGIN=none in the compose "
                    "environment)", warning=True, plugin=plugin, image=image)]


# ---- the NCCL environment a cabling needs ----------------------------------------------------------------------------
# Sources: NVIDIA/dgx-spark-playbooks nvidia/playbook-nccl (launch.sh --topology direct|ring|switch: a ring adds
# NCCL_IB_SUBNET_AWARE_ROUTING=1 and NCCL_NET_PLUGIN=none, direct and switch add nothing, rings of three only; NCCL
# v2.30.7-1 built from source); spark-arena/sparkrun#174; model-serving-minefield trap 139 (stock NCCL sends over the
# cable to the wrong neighbour); MiaAI-Lab/DeepSeek-v4.1-Flash-DGX-Sparks#3 and alexellis/switchless-nccl (a ring of four:
# NCCL_ALGO=Ring and a patched NCCL whose opt-in is NCCL_SWITCHLESS_RING_ONLY=1, alias NCCL_SKIP_TREE_CONNECT=1).
RING_ROUTING = "NCCL_IB_SUBNET_AWARE_ROUTING"
SWITCHLESS = ("NCCL_SWITCHLESS_RING_ONLY", "NCCL_SKIP_TREE_CONNECT")  # the patched NCCL's opt-in; stock NCCL ignores both
RING_MIN_VERSION = (2, 30)  # the first NCCL with subnet-aware routing (NVIDIA's playbook builds v2.30.7-1)


def _on(env: dict[str, str], key: str) -> bool:
    return env.get(key, "").strip() == "1"


def judge_topology_env(where: str, topology: str | None, nodes: int, env: dict[str, str], pinned_build: str | None
                       ) -> list[Finding]:
    """The NCCL variables of one rank's environment against the cabling (Cluster.cabling) of a cluster of `nodes`.

    - ring: NCCL_IB_SUBNET_AWARE_ROUTING=1 and NCCL's own IB transport (NCCL_NET_PLUGIN=none; not NCCL_NET=Socket nor
      NCCL_IB_DISABLE=1) fail when missing;
    - a ring of four or more: NCCL_ALGO=Ring and a patched NCCL (its opt-in variable set, and deploy.nccl pinning a build
      id, which test_image_nccl holds every rank to); stock NCCL is refused with the fix;
    - a pair or a switch: the switchless ring's settings (NCCL_SWITCHLESS_RING_ONLY, NCCL_SKIP_TREE_CONNECT, NCCL_ALGO=Ring)
      warn: they take away the tree NCCL would use across nodes that all reach each other.
    """
    findings: list[Finding] = []

    def shown(key: str) -> str:
        return f"{key}={env[key]}" if key in env else f"{key} unset"

    if topology == "ring":
        for var, want, ok in ((RING_ROUTING, "1", _on(env, RING_ROUTING)),
                              ("NCCL_NET_PLUGIN", "none", env.get("NCCL_NET_PLUGIN", "").strip().lower() == "none"),
                              ("NCCL_NET", "IB", env.get("NCCL_NET", "IB").strip() == "IB"),
                              ("NCCL_IB_DISABLE", "0", not _on(env, "NCCL_IB_DISABLE"))):
            if not ok:
                findings.append(Finding(Code.NCCL_RING_ENV, where, f"{shown(var)} on a ring of {nodes}",
                                        f"{var}={want} (each port reaches one neighbour: NCCL's own IB transport, routed "
                                        "by subnet)", var=var, want=want))
        if nodes >= 4:
            missing = [s for s, bad in ((shown("NCCL_ALGO"), env.get("NCCL_ALGO", "").strip().lower() != "ring"),
                                        (" and ".join(f"{k} unset" for k in SWITCHLESS), not any(_on(env, k) for k in SWITCHLESS)),
                                        ("deploy.nccl pins no build id (stock NCCL)", pinned_build is None)) if bad]
            if missing:
                findings.append(Finding(Code.NCCL_RING_STOCK, where, f"a ring of {nodes}: {'; '.join(missing)}",
                                        "NCCL_ALGO=Ring, NCCL_SWITCHLESS_RING_ONLY=1 and a patched NCCL pinned by build id "
                                        "(stock NCCL dies in ncclTransportTreeConnect)", nodes=nodes))
    elif topology in ("pair", "switch"):
        for var in (*SWITCHLESS, "NCCL_ALGO"):
            if (var == "NCCL_ALGO" and env.get(var, "").strip().lower() == "ring") or (var in SWITCHLESS and _on(env, var)):
                findings.append(Finding(Code.NCCL_RING_ONLY, where, f"{var}={env[var]} on a {topology}",
                                        f"no {var}: a switchless ring's setting", warning=True, var=var, topology=topology))
    return findings


def judge_canary_topology_env(where: str, topology: str | None, nodes: int, env: dict[str, str], compose_env: dict[str, str],
                              pinned_build: str | None) -> list[Finding]:
    """judge_topology_env on the environment a canary's rank really had (its compose environment over the image's ENV),
    less what the same rules already say of the compose environment (test_nccl_topology_env): a cause told once."""
    said = {(f.code, f.seen) for f in judge_topology_env(where, topology, nodes, compose_env, pinned_build)}
    return [f for f in judge_topology_env(f"{where}: the canary's environment", topology, nodes, env, pinned_build)
            if (f.code, f.seen) not in said]


def judge_ring_nccl_version(node: str, image: str, version: str | None, topology: str | None) -> list[Finding]:
    """A ring needs NCCL_IB_SUBNET_AWARE_ROUTING, which NCCL reads from 2.30 on: an older NCCL in the image fails."""
    if topology != "ring" or not version:
        return []
    try:
        major_minor = tuple(int(p) for p in version.split(".")[:2])
    except ValueError:
        return []  # the identity check reports an unreadable version
    if major_minor >= RING_MIN_VERSION:
        return []
    return [Finding(Code.NCCL_RING_VERSION, f"{node}:image {image}", f"NCCL {version} on a ring",
                    f"NCCL {'.'.join(map(str, RING_MIN_VERSION))} or later (subnet-aware routing)", image=image,
                    version=version)]
