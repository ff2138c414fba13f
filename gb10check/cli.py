"""gb10check command line: init, check (the suite's stages), parse, the helper steps, the gate, the simulation."""

import argparse
import contextlib
import difflib
import json
import os
from pathlib import Path
import re
import signal
import sys

from . import facts, version
from .errors import UserError, line


def cmd_parse(args: argparse.Namespace) -> int:
    if args.list or not args.kind:
        width = max(map(len, facts.KINDS))
        for name, kind in facts.KINDS.items():
            print(f"{name:<{width}}  {kind.what}")
        return 0
    kind = args.kind.replace("-", "_")  # the tool's own spelling (nvidia-smi) names the kind (nvidia_smi)
    if kind not in facts.KINDS:
        close = difflib.get_close_matches(kind, facts.KINDS, n=1)
        print(f"gb10check parse: unknown kind {args.kind!r}" + (f" (did you mean {close[0]}?)" if close else "")
              + "; `gb10check parse --list` shows the kinds", file=sys.stderr)
        return 2
    try:
        text = sys.stdin.read() if args.file in (None, "-") else open(args.file, encoding="utf-8", errors="replace").read()
    except OSError as exc:
        print(f"gb10check parse: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        result = facts.parse(kind, text)
    except facts.ParseError as exc:
        print(f"gb10check parse: {exc}", file=sys.stderr)
        return 1
    json.dump(facts.to_jsonable(result), sys.stdout, indent=2)
    print()
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    from . import suite

    path = Path(args.path)
    if path.exists() and not args.force:
        print(f"gb10check init: {path} exists; edit it, or write another path (--force overwrites it)", file=sys.stderr)
        return 1
    try:
        text = suite.example().read_text()
        path.write_text(text)
    except (OSError, suite.SuiteMissing) as exc:
        print(f"gb10check init: cannot write {path}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return 1
    print(f"wrote {path}: the field report's PGX pair, profile gb10. Edit ssh, nodes (addresses, links) and deploy, "
          f"then: gb10check check preflight --cluster={path}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    import subprocess

    from . import suite

    # After the stage everything is pytest's but gb10check's own --cluster and -m, read here.
    late = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    late.add_argument("--cluster")
    late.add_argument("-m", dest="marker")
    got, rest = late.parse_known_args(args.pytest_args)
    cluster, narrower = got.cluster or args.cluster, got.marker or args.marker
    marker = f"{args.stage} and ({narrower})" if narrower else args.stage
    try:
        argv = [sys.executable, "-m", "pytest", *suite.pytest_argv(marker, cluster, rest)]
    except suite.SuiteMissing as exc:
        print(f"gb10check check: {exc}", file=sys.stderr)
        return 2
    with subprocess.Popen(argv) as proc:
        try:
            return proc.wait()
        except KeyboardInterrupt:  # pytest got it too: it stops the run and writes what it has
            return proc.wait()


def cmd_record(args: argparse.Namespace) -> int:
    from .gather import recording

    path = cluster_file(args.cluster)
    got = recording.record(cluster_from(args.cluster), Path(path).read_text(), args.source or f"gb10check record of {path}")
    fd = os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(got, f, indent=1, sort_keys=True)
        f.write("\n")
    unreachable = [name for name, got in got["facts"].items() if isinstance(got, dict)]
    print(f"recorded {sum(len(v) for v in got['facts'].values() if isinstance(v, list))} facts of "
          f"{len(got['facts'])} nodes in {args.output}" + (f"; unreachable: {', '.join(unreachable)}" if unreachable else ""))
    return 1 if unreachable else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gb10check", description="Checks for vLLM tensor parallelism across GB10 machines.")
    parser.add_argument("--version", action="version", version=f"gb10check {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("init", help="write a commented cluster file to edit (the field report's PGX pair, profile gb10)")
    p.add_argument("path", nargs="?", default="cluster.yaml", help="the file to write (default ./cluster.yaml)")
    p.add_argument("--force", action="store_true", help="overwrite the file if it exists")
    p.set_defaults(func=cmd_init)
    from .suite import STAGES

    p = sub.add_parser("check", allow_abbrev=False, help="run a stage of the suite's checks (pytest; its options pass through)",
                       description="Run one stage of the suite's checks: pytest with the suite's ini, markers and plugin. "
                                   "Any option gb10check does not know is pytest's (-n 4, -k EXPR, -x, --junitxml=FILE, "
                                   "--report-dir=DIR ...).")
    p.add_argument("stage", choices=STAGES, help="the stage (a pytest marker)")
    p.add_argument("--cluster", help="cluster file (default: $GB10CHECK_CLUSTER, else ./cluster.yaml)")
    p.add_argument("-m", dest="marker", metavar="EXPR", help="narrow the stage further: runs -m 'STAGE and (EXPR)' "
                                                             "(e.g. -m 'not slow'; a partial run, the gate stays shut)")
    p.add_argument("pytest_args", nargs=argparse.REMAINDER, help="pytest's options (and --cluster, -m), after the stage")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("parse", help="print what the suite reads from a tool's output, as JSON")
    p.add_argument("kind", nargs="?", help="what the text is (see --list; a tool's dashes may stand for underscores)")
    p.add_argument("file", nargs="?", help="file to read; - or nothing for standard input")
    p.add_argument("--list", action="store_true", help="list the kinds")
    p.set_defaults(func=cmd_parse)
    p = sub.add_parser("record", help="gather every fact the checks can read from every node once and write it as JSON "
                                      "(what `gb10check` saw; the self-tests replay such recordings)")
    p.add_argument("--cluster", help="cluster definition (default: $GB10CHECK_CLUSTER, else ./cluster.yaml)")
    p.add_argument("-o", "--output", required=True, help="the JSON file to write (mode 600: it holds the nodes' .env)")
    p.add_argument("--source", default="", help="where the recording comes from, written into it")
    p.set_defaults(func=cmd_record)
    p = sub.add_parser("size", help="will a checkpoint fit a node's unified memory? (offline, from config.json and the index)")
    p.add_argument("model_id", nargs="?", metavar="MODEL_ID", help="the model, ORG/NAME: its config.json and "
                                                                      "model.safetensors.index.json from the Hugging Face cache "
                                                                      "(nothing is downloaded); the same as --model")
    p.add_argument("--model", metavar="ORG/NAME", help="read config.json and model.safetensors.index.json from the Hugging "
                                                       "Face cache (nothing is downloaded)")
    p.add_argument("--hf-cache", metavar="DIR", help="the cache with --model (default: $HF_HUB_CACHE, else $HF_HOME, else "
                                                          "~/.cache/huggingface)")
    p.add_argument("--config", help="the model's config.json (instead of --model's)")
    p.add_argument("--index", help="its model.safetensors.index.json (instead of --model's)")
    p.add_argument("--tp", type=int, required=True, help="tensor parallel size (one rank per node on GB10)")
    p.add_argument("--max-model-len", type=int, required=True)
    p.add_argument("--max-num-seqs", type=int, default=8)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.8)
    p.add_argument("--memory", default="119 GiB", help="unified memory per node (default 119 GiB)")
    p.add_argument("--container-limit", help="the container's memory limit, e.g. 105G")
    p.add_argument("--kv-dtype", default="bfloat16")
    p.add_argument("--overhead", default="4 GiB", help="activations and runtime per rank (default 4 GiB)")
    p.add_argument("--profile", default="gb10", help="the hardware profile whose memory bandwidth and decode efficiency "
                                                      "give the decode floor (default gb10; a name or a profile file)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(func=cmd_size)
    p = sub.add_parser("compose-render", help="render the compose file and each node's .env, show the diff, push them")
    p.add_argument("--cluster", help="cluster file (default: $GB10CHECK_CLUSTER, else ./cluster.yaml)")
    p.add_argument("--check", action="store_true", help="only show what would change; exit 1 if anything would")
    gate_options(p)
    p.set_defaults(func=cmd_compose_render)
    p = sub.add_parser("ssh-keys", help="one cluster key on every node, peers in ~/.ssh/config and known_hosts, then verify the mesh")
    p.add_argument("--cluster", help="cluster file (default: $GB10CHECK_CLUSTER, else ./cluster.yaml)")
    p.add_argument("--check", action="store_true", help="only show what would change; exit 1 if anything would")
    gate_options(p)
    p.set_defaults(func=cmd_ssh_keys)
    p = sub.add_parser("netplan", help="render each node's QSFP links as /etc/netplan/40-cx7.yaml, show the diff, install "
                                       "(mode 600), netplan apply, verify the addresses")
    p.add_argument("--cluster", help="cluster file (default: $GB10CHECK_CLUSTER, else ./cluster.yaml)")
    p.add_argument("--check", action="store_true", help="only show what would change; exit 1 if anything would")
    gate_options(p)
    p.set_defaults(func=cmd_netplan)
    p = sub.add_parser("hold-driver", help="hold the NVIDIA driver packages test_driver_packages_held warns about (apt-mark "
                                           "hold), after showing them; --blacklist: also keep them out of unattended-upgrades")
    p.add_argument("--cluster", help="cluster file (default: $GB10CHECK_CLUSTER, else ./cluster.yaml)")
    p.add_argument("--node", action="append", metavar="NAME", help="only this node (repeatable; default: every node)")
    p.add_argument("--blacklist", action="store_true", help="also list every installed driver package in unattended-upgrades' "
                                                            "Package-Blacklist, in /etc/apt/apt.conf.d/51gb10check-hold-nvidia")
    p.add_argument("--check", action="store_true", help="only show what would change; exit 1 if anything would")
    gate_options(p)
    p.set_defaults(func=cmd_hold_driver)
    p = sub.add_parser("nm-release-qsfp", help="make the NetworkManager DHCP profiles on QSFP netdevs inert (autoconnect no, "
                                               "down), after showing them; --delete: delete them")
    p.add_argument("--cluster", help="cluster file (default: $GB10CHECK_CLUSTER, else ./cluster.yaml)")
    p.add_argument("--node", action="append", metavar="NAME", help="only this node (repeatable; default: every node)")
    p.add_argument("--delete", action="store_true", help="delete the profiles (nmcli connection delete) instead")
    p.add_argument("--check", action="store_true", help="only show what would change; exit 1 if anything would")
    gate_options(p)
    p.set_defaults(func=cmd_nm_release_qsfp)
    p = sub.add_parser("sync", help="copy the image (docker save | docker load) and the model's HF cache (rsync) from rank 0 "
                                    "to every node over the first QSFP link, then verify")
    p.add_argument("--cluster", help="cluster file (default: $GB10CHECK_CLUSTER, else ./cluster.yaml)")
    p.add_argument("--check", action="store_true", help="only show what would be copied; exit 1 if anything would")
    gate_options(p)
    p.set_defaults(func=cmd_sync)
    p = sub.add_parser("deploy", help="drop page caches, start rank 0 then the followers (docker compose), watch until it serves")
    p.add_argument("--cluster", help="cluster file (default: $GB10CHECK_CLUSTER, else ./cluster.yaml)")
    p.add_argument("--stall-timeout", type=float, help="seconds without a new startup milestone before giving up "
                                                      "(default: deploy.watchdog.stall_timeout_s)")
    gate_options(p)
    p.set_defaults(func=cmd_deploy)
    p = sub.add_parser("down", help="take the stack down on every node (docker compose down, followers first); never asks "
                                    "the gate: stopping is always allowed, and a node it cannot reach leaves the others "
                                    "to be taken down")
    p.add_argument("--cluster", help="cluster file (default: $GB10CHECK_CLUSTER, else ./cluster.yaml)")
    p.set_defaults(func=cmd_down)
    p = sub.add_parser("gate", help="exit 0 when fresh full preflight and network runs passed for this cluster file (every "
                                    "step that changes the cluster asks it)")
    p.add_argument("--cluster", help="cluster file (default: $GB10CHECK_CLUSTER, else ./cluster.yaml)")
    p.add_argument("--max-age-h", type=float, default=24, help="how old the passing run may be, in hours (default 24)")
    p.add_argument("--override", metavar="REASON", help="go on anyway; the reason is logged beside the status")
    p.set_defaults(func=cmd_gate)
    p = sub.add_parser("rehearse", help="on the simulated pair (root): provision, preflight+network, gate, serve, serving, down")
    p.add_argument("--out", default=None, help="folder for reports (default ./gb10check-rehearsal/TIME)")
    p.add_argument("--no-slow", action="store_true", help="skip the slow bandwidth and NCCL runs")
    p.set_defaults(func=cmd_rehearse)
    prof = sub.add_parser("profile", help="hardware profiles: list the shipped ones, or write a healthy cluster's as a profile")
    profsub = prof.add_subparsers(dest="profile_command", required=True)
    profsub.add_parser("list", help="the shipped profiles (gb10check/profiles/) and what each describes")
    p = profsub.add_parser("snapshot", help="write a profile from the nodes' GPU, driver, memory and link speed (and a full "
                                            "run's ib_write_bw, TFLOP/s and NCCL figures, less a margin)")
    p.add_argument("--cluster", help="cluster file (default: $GB10CHECK_CLUSTER, else ./cluster.yaml)")
    p.add_argument("-o", "--output", help="the profile file to write (default: print it)")
    p.add_argument("--from-report", metavar="DIR", help="a full run's report folder (its findings.json): its measured figures "
                                                        "become the floors, each less the margin")
    p.add_argument("--margin", type=float, default=None, help="fraction under the slowest measured figure (default 0.15)")
    prof.set_defaults(func=cmd_profile)
    p = sub.add_parser("history", help="the run history: list the runs (newest first), or `history show ID` for one run's "
                                         "outcomes, findings, figures and versions")
    p.add_argument("action", nargs="?", choices=("list", "show"), default="list", help="list (default) or show")
    p.add_argument("run_id", nargs="?", type=int, metavar="ID", help="the run to show")
    p.add_argument("--history", metavar="PATH", help="the history file (default: $GB10CHECK_HISTORY, else "
                                                     "$XDG_DATA_HOME/gb10check/history.sqlite)")
    p.add_argument("--cluster-name", metavar="NAME", help="only this cluster's runs")
    p.add_argument("--limit", type=int, default=30, help="how many runs to list (default 30)")
    p.set_defaults(func=cmd_history)
    p = sub.add_parser("watch", help="look at the deployed cluster every few minutes: one small timed request, memory, "
                                     "temperatures, reboots, which rank stopped; each tick a JSON line and a history run")
    p.add_argument("--cluster", metavar="FILE", help="the cluster file (default: $GB10CHECK_CLUSTER, else ./cluster.yaml)")
    p.add_argument("--every", metavar="DURATION", type=duration, help="between ticks: 90s, 10m, 1h (default: watch.every_s "
                                                                     "of the cluster file)")
    p.add_argument("--once", action="store_true", help="one tick, then exit with its status (for a systemd timer or cron)")
    p.add_argument("--history", metavar="PATH", help="the history file each tick is recorded in (default: "
                                                     "$GB10CHECK_HISTORY, else $XDG_DATA_HOME/gb10check/history.sqlite; off)")
    p.add_argument("--metrics-file", metavar="PATH", help="write each tick's figures there as Prometheus text")
    p.set_defaults(func=cmd_watch)
    sim = sub.add_parser("sim", help="the simulated GB10 cluster (root): up, down, status, apply, scenarios")
    simsub = sim.add_subparsers(dest="sim_command", required=True)
    p = simsub.add_parser("up", help="start the simulated cluster and write its cluster file")
    p.add_argument("--nodes", type=int, default=2, help="2 (the field report's pair, default) to 8 (a ring or behind a switch)")
    p.add_argument("--topology", choices=("ring", "switch"), default=None,
                   help="3 nodes or more: NVIDIA's ring wiring (port 0 to the next node's port 1) or a switch (default)")
    p.add_argument("--scenario", help="apply this fault scenario once up (see `gb10check sim scenarios`)")
    p.add_argument("--init", choices=["plain", "systemd"], default="plain",
                   help="plain (default: our small init, fastest) or systemd as PID 1 of each node (services are units)")
    p.add_argument("--executor", choices=["mp", "ray"], default="mp",
                   help="deploy.executor of the sim's cluster file: mp (default, the field report's) or ray (NVIDIA's "
                        "two-node playbook: a Ray head and workers; needs `gb10check sim provision` with Ray)"),
    simsub.add_parser("down", help="remove every namespace, link, mount and process of the simulation")
    simsub.add_parser("status", help="nodes, their init and sshd")
    p = simsub.add_parser("apply", help="apply a fault scenario to the running simulation")
    p.add_argument("scenario")
    simsub.add_parser("scenarios", help="list the fault scenarios")
    p = simsub.add_parser("record-scenarios", help="run each fault scenario the self-tests judge from a recording on the live "
                                                   "pair and write its recording (selftests/captures/facts/scenarios/)")
    p.add_argument("names", nargs="*", metavar="NAME", help="the scenarios to record (default: all of them)")
    p = simsub.add_parser("deploy", help="start the two-node TP stack rank 0 first, followers headless, with the memory watchdog")
    p.add_argument("--stall-timeout", type=float, help="seconds without a new startup milestone before giving up "
                                                      "(default: deploy.watchdog.stall_timeout_s)")
    gate_options(p)
    p = simsub.add_parser("provision", help="install vLLM for CPU and the small model the simulation serves (once, cached)")
    p.add_argument("--cuda-torch", action="store_true", help="also a CUDA build of torch with NCCL 2.30.4 (about 5 GB), "
                                                              "which recording the image-NCCL scenarios needs")
    p = simsub.add_parser("serve", help="start the head node's real vLLM and wait until it serves (--stop: stop it)")
    p.add_argument("--stop", action="store_true")
    p.add_argument("--timeout", type=float, default=300, help="seconds to wait for /health (default 300)")
    p = simsub.add_parser("exec", help="run a shell command as root inside a node")
    p.add_argument("node")
    p.add_argument("command")
    sim.set_defaults(func=cmd_sim)
    return parser


def gate_options(p: argparse.ArgumentParser) -> None:
    """A step that changes the cluster asks `gb10check gate` first; these are its way round, logged."""
    p.add_argument("--override", metavar="REASON", help="run although the gate is closed (no full passing preflight and "
                                                        "network run of this cluster file); the reason is logged")
    p.add_argument("--max-age-h", type=float, default=24, help="how old the passing runs may be, in hours (default 24)")


REFUSED = 3  # a step the gate refused


def gated(args: argparse.Namespace, step: str):
    """The cluster file, read, then the gate, asked before a step changes the cluster (None: refused); `--check` (which
    changes nothing) does not ask. A cluster file that cannot be read is an error of its own (UserError), not a refusal
    to override."""
    from .stage import gate

    cluster = cluster_from(args.cluster)
    if getattr(args, "check", False):
        return cluster
    return cluster if gate(Path(cluster_file(args.cluster)), args.max_age_h * 3600, args.override, step=step) else None


def cmd_size(args: argparse.Namespace) -> int:
    from .checks.serving import derive_floor
    from .cluster import gib, load_profile
    from .sizing import SizingError, fit, load_json

    if args.model_id and args.model and args.model_id != args.model:
        print(f"gb10check size: two models named ({args.model_id} and --model {args.model}): name one", file=sys.stderr)
        return 2
    try:
        config, index = model_files(args.model_id or args.model, args.hf_cache, args.config, args.index)
        loaded = load_json(config, "config"), load_json(index, "index")
        result = fit(*loaded, args.tp, args.max_model_len, args.max_num_seqs, args.gpu_memory_utilization, gib(args.memory),
                     gib(args.container_limit) if args.container_limit else None, args.kv_dtype, overhead_gib=gib(args.overhead))
        profile = load_profile(args.profile)
    except (SizingError, ValueError) as exc:
        print(f"gb10check size: {exc}", file=sys.stderr)
        return 2
    floor = derive_floor(tuple(json.dumps(f) for f in loaded), None, args.tp, profile.values["memory_bandwidth_gbs"],
                         profile.values["decode_efficiency"], profile.name)
    if args.json:
        json.dump({**result.as_dict(), "decode_floor_tok_s": floor.tok_s, "decode_floor": floor.how}, sys.stdout, indent=2)
        print()
    else:
        print(result.table())
        shown = f"{floor.tok_s:.2f} tok/s" if floor.tok_s is not None else "not derived"
        print(f"decode floor at batch 1 (profile {profile.name}): {shown}: {floor.how}")
    return 0 if result.ok else 1


HF_FILES = ("config.json", "model.safetensors.index.json")


def hf_hub_dirs(given: str | None) -> list[Path]:
    """Where a Hugging Face cache keeps models--ORG--NAME: DIR/hub (DIR as HF_HOME, or the hub folder itself), else
    $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub (huggingface_hub's own order)."""
    if given:
        root = Path(given).expanduser()
        return [root / "hub", root]
    if os.environ.get("HF_HUB_CACHE"):
        return [Path(os.environ["HF_HUB_CACHE"]).expanduser()]
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface"
    return [Path(home).expanduser() / "hub"]


def model_files(model: str | None, hf_cache: str | None, config: str | None, index: str | None) -> tuple[str, str]:
    """config.json and the safetensors index: given, or read from the model's snapshot in the cache (refs/main's first,
    then the newest); a SizingError says which files are missing and where it looked."""
    from .sizing import SizingError

    if not model:
        if not (config and index):
            raise SizingError("give --model ORG/NAME (its files from the Hugging Face cache), or both --config and --index")
        return config, index
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", model):
        raise SizingError(f"--model {model!r}: expected a Hugging Face model id, ORG/NAME (e.g. Qwen/Qwen3-32B)")
    wanted = [name for name, given in zip(HF_FILES, (config, index)) if not given]
    if not wanted:
        return config, index
    looked, best = [], (0, None)
    for hub in hf_hub_dirs(hf_cache):
        entry = hub / f"models--{model.replace('/', '--')}"
        looked.append(f"{entry}/snapshots/*/")
        snapshots = sorted((p for p in entry.glob("snapshots/*") if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
        with contextlib.suppress(OSError):
            main = entry / "snapshots" / (entry / "refs" / "main").read_text().strip()
            snapshots = [main] + [p for p in snapshots if p != main]
        for snap in snapshots:
            present = sum((snap / name).is_file() for name in wanted)
            if present == len(wanted):
                found = dict(zip(HF_FILES, (config, index)))
                found.update({name: str(snap / name) for name in wanted})
                return found["config.json"], found["model.safetensors.index.json"]
            if present > best[0]:
                best = (present, snap)
    lacking = wanted
    if best[1] is not None:
        lacking = [name for name in wanted if not (best[1] / name).is_file()]
        where = f"{best[1]} has {', '.join(n for n in wanted if n not in lacking)} but not {', '.join(lacking)}"
    else:
        where = f"not in {' or '.join(looked)}"
    flags = " and ".join(f"--{'config' if n == HF_FILES[0] else 'index'}" for n in lacking)
    raise SizingError(f"--model {model} needs {' and '.join(wanted)} from the Hugging Face cache: {where}; nothing is "
                      f"downloaded: `hf download {model} {' '.join(lacking)}` puts them there, or give {flags}")


def cluster_file(arg: str | None) -> str:
    from .cluster import cluster_file_path

    return str(cluster_file_path(arg))


def cluster_from(arg: str | None):
    """The cluster file, read and checked; a UserError (exit 2) says why not, a line per mistake."""
    from .cluster import ClusterError, load_cluster

    path = Path(cluster_file(arg))
    if not path.exists():
        raise UserError(f"no cluster file at {path}: give --cluster PATH, or set GB10CHECK_CLUSTER to it")
    try:
        return load_cluster(path)
    except ClusterError as exc:
        raise UserError("\n".join(f"invalid cluster file: {l}" for l in str(exc).splitlines() if l.strip())) from None


@contextlib.contextmanager
def connected(cluster, names: list[str] | None = None):
    """Every node of the cluster (or those named) over the suite's remote layer, in rank order; closed afterwards."""
    from .remote import RemoteNode

    unknown = sorted(set(names or []) - {n.name for n in cluster.nodes})
    if unknown:
        raise UserError(f"no node {', '.join(unknown)} in the cluster file (its nodes: {', '.join(n.name for n in cluster.by_rank())})")
    nodes = [RemoteNode(n, cluster.ssh) for n in cluster.by_rank() if not names or n.name in names]
    try:
        reach_first(cluster, nodes)
        yield nodes
    finally:
        for n in nodes:
            n.close()


def reach_first(cluster, nodes) -> None:
    """Before a step changes anything: the runner's own SSH set-up, then every node reached (at once); a UserError with
    a line and its fix for each problem otherwise, so no step stops half-way on the last node."""
    from .cluster import runner_problems
    from .errors import unreachable

    problems = runner_problems(cluster.ssh, any(n.spec.connection != "local" for n in nodes)) or unreachable(nodes)
    if problems:
        raise UserError("\n".join(problems))


def cmd_compose_render(args: argparse.Namespace) -> int:
    from .deploy import stack

    cluster = gated(args, "compose-render")
    if cluster is None:
        return REFUSED
    with connected(cluster) as nodes:
        return stack.push(cluster, nodes, args.check)


def cmd_ssh_keys(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .deploy import sshkeys

    cluster = gated(args, "ssh-keys")
    if cluster is None:
        return REFUSED
    with connected(cluster) as nodes:
        try:
            return sshkeys.run(cluster, nodes, Path(cluster.ssh.cluster_key), args.check)
        except sshkeys.SshStepError as exc:
            print(f"gb10check ssh-keys: {exc}", file=sys.stderr)
            return 2


def cmd_netplan(args: argparse.Namespace) -> int:
    from .deploy import netplan

    cluster = gated(args, "netplan")
    if cluster is None:
        return REFUSED
    with connected(cluster) as nodes:
        return netplan.step(cluster, nodes, args.check)


def cmd_hold_driver(args: argparse.Namespace) -> int:
    from .deploy import holddriver

    cluster = gated(args, "hold-driver")
    if cluster is None:
        return REFUSED
    with connected(cluster, args.node) as nodes:
        return holddriver.step(nodes, args.check, blacklist=args.blacklist)


def cmd_nm_release_qsfp(args: argparse.Namespace) -> int:
    from .deploy import nmrelease

    cluster = gated(args, "nm-release-qsfp")
    if cluster is None:
        return REFUSED
    with connected(cluster, args.node) as nodes:
        return nmrelease.step(nodes, args.check, delete=args.delete)


def cmd_sync(args: argparse.Namespace) -> int:
    from .deploy import sync

    cluster = gated(args, "sync")
    if cluster is None:
        return REFUSED
    with connected(cluster) as nodes:
        return sync.run(cluster, nodes, args.check)


def cmd_deploy(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .deploy.run import DeployFailed, deploy, launcher_for
    from .stage import deployment_record_path

    cluster = gated(args, "deploy")
    if cluster is None:
        return REFUSED
    launcher = launcher_for(cluster)
    try:
        reach_first(cluster, list(launcher.nodes.values()))  # every rank or none: nothing starts while a node is off
        deploy(cluster, launcher, deployment_record_path(Path(cluster_file(args.cluster))), stall_timeout_s=args.stall_timeout)
        return 0
    except DeployFailed as exc:
        print(f"gb10check deploy: FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        launcher.close()


def cmd_down(args: argparse.Namespace) -> int:
    """Never gated, and every node it reaches is taken down even when another cannot be reached: stopping is always
    allowed."""
    from .deploy.run import down, launcher_for

    cluster = cluster_from(args.cluster)
    launcher = launcher_for(cluster)
    try:
        return 0 if down(launcher, [n.name for n in cluster.by_rank()]) else 2
    finally:
        launcher.close()


def cmd_gate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .stage import gate

    path = Path(cluster_file(args.cluster))
    if not path.exists():
        cluster_from(args.cluster)  # says so, with the fix
    return 0 if gate(path, args.max_age_h * 3600, args.override) else 1


def cmd_rehearse(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from .rehearse import rehearse

    out = Path(args.out or f"gb10check-rehearsal/{time.strftime('%Y%m%d-%H%M%S')}")
    return rehearse(out, slow=not args.no_slow)


def cmd_sim(args: argparse.Namespace) -> int:
    from .sim import control, provision, scenarios, serve

    try:
        if args.sim_command == "up":
            path = control.up(args.nodes, init=args.init, executor=args.executor, topo=args.topology)
            if args.scenario:
                scenarios.apply(args.scenario)
                print(f"scenario {args.scenario} applied", file=sys.stderr)
            print(path)
        elif args.sim_command == "down":
            control.down()
        elif args.sim_command == "status":
            json.dump(control.status(), sys.stdout, indent=2)
            print()
        elif args.sim_command == "apply":
            scenarios.apply(args.scenario)
        elif args.sim_command == "scenarios":
            for s in scenarios.SCENARIOS.values():
                print(f"{s.name:<24} {s.summary}")
                for proof in s.proves:
                    print(f"{'':<24}   proves {proof.replace(':', ' [') + ']'}")
        elif args.sim_command == "record-scenarios":
            from .sim import recordings

            for path in recordings.record_all(args.names, say=lambda msg: print(msg, file=sys.stderr)):
                print(path)
        elif args.sim_command == "deploy":  # the same deploy as on GB10s, against the sim's cluster file
            args.cluster = str(control.state_dir() / "cluster.yaml")
            return cmd_deploy(args)
        elif args.sim_command == "provision":
            provision.provision(cuda_torch=args.cuda_torch)
        elif args.sim_command == "serve":
            if args.stop:
                serve.stop(quiet=False)
            else:
                serve.start(timeout_s=args.timeout, say=lambda msg: print(msg, file=sys.stderr))
        elif args.sim_command == "exec":
            done = control.node_exec(args.node, args.command, check=False)
            sys.stdout.write(done.stdout)
            sys.stderr.write(done.stderr)
            return done.returncode
    except (control.SimError, scenarios.ScenarioError, provision.ProvisionError, serve.ServeError, ValueError) as exc:
        print(f"gb10check sim: {exc}", file=sys.stderr)
        return 1
    return 0


def duration(text: str) -> float:
    """90, 90s, 10m, 1h -> seconds (more than 0)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text or "")
    if not m or float(m[1]) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration: write 90s, 10m or 1h")
    return float(m[1]) * {"": 1, "s": 1, "m": 60, "h": 3600}[m[2]]


def cmd_watch(args: argparse.Namespace) -> int:
    """One tick (--once), or a tick every --every until interrupted; a node or the API that cannot be reached is that
    tick's finding, and the next tick looks again."""
    import time

    from . import history, tick

    path = Path(cluster_file(args.cluster))
    cluster = cluster_from(args.cluster)
    where = history.chosen(args.history)
    store = history.History.open(where) if where is not None else None
    metrics_file = Path(args.metrics_file) if args.metrics_file else None
    every = args.every or cluster.watch.every_s
    try:
        while True:
            started = time.monotonic()
            status = tick.tick(cluster, path, store, metrics_file)
            if args.once:
                return status
            time.sleep(max(0.0, every - (time.monotonic() - started)))
    finally:
        if store is not None:
            store.close()


def cmd_history(args: argparse.Namespace) -> int:
    import time

    from . import history, report

    path = history.chosen(args.history)
    if path is None:
        raise UserError("the history is off (GB10CHECK_HISTORY=off); fix: name a file with --history PATH")
    if not path.exists():
        raise UserError(f"no history at {path}: no run recorded there yet; fix: run a stage (`gb10check check preflight`), "
                        "or name the file with --history PATH")
    store = history.History.open(path)
    try:
        if args.action == "list":
            runs = store.runs(args.cluster_name, limit=args.limit)
            for r in runs:
                counts = ", ".join(f"{n} {k}" for k, n in sorted(r.counts.items()))
                print(f"#{r.id:<5} {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(r.started))}  {r.cluster:<20} "
                      f"{'green ' if r.green else 'FAILED' if {'failed', 'error'} & set(r.counts) else 'not green'}  "
                      f"{','.join(r.stages) or '-'}: {counts}")
            if not runs:
                print(f"no runs in {path}" + (f" for cluster {args.cluster_name}" if args.cluster_name else ""))
            return 0
        if args.run_id is None:
            raise UserError("history show: which run? fix: `gb10check history show ID` (`gb10check history` lists them)")
        r = store.show(args.run_id)
        print(f"run #{r.id}: cluster {r.cluster} ({r.cluster_file}, sha256 {r.cluster_sha256[:12]}), "
              f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(r.started))} to "
              f"{time.strftime('%H:%M:%S', time.localtime(r.finished))}, {'green' if r.green else 'not green'}")
        print(f"stages: {', '.join(r.stages) or '-'} (full: {', '.join(r.complete_stages) or 'none'}); "
              + ", ".join(f"{n} {k}" for k, n in sorted(r.counts.items())))
        for f in r.findings:
            print(f"{f['severity']}: {report.finding_text(f).splitlines()[0]}  ({f['test'].split('::', 1)[-1]})")
        if r.figures:
            print("figures:")
            for what, where, value, unit in r.figures:
                print(f"  {what:<28} {where:<56} {report.shown(value):>10} {unit}")
        if r.versions:
            print("versions:")
            for node, theirs in r.versions.items():
                for what, value in theirs.items():
                    print(f"  {node}: {what}: {value}")
        return 0
    finally:
        store.close()


def cmd_profile(args: argparse.Namespace) -> int:
    from .cluster import known_profiles, load_profile

    if args.profile_command == "list":
        for name in known_profiles():
            print(f"{name:<6} {load_profile(name).about}")
        return 0
    return cmd_profile_snapshot(args)


def cmd_profile_snapshot(args: argparse.Namespace) -> int:
    """Read each node's facts through the library (gather.Fleet), the report's figures, and write the profile."""
    from datetime import datetime, timezone
    from pathlib import Path

    from . import gather, profile
    from .cluster import load_profile
    from .remote import RemoteError

    path = cluster_file(args.cluster)
    cluster = cluster_from(args.cluster)
    command = f"gb10check profile snapshot --cluster={path}"
    measurements = None
    try:
        if args.from_report:
            report = Path(args.from_report)
            report = report / "findings.json" if report.is_dir() else report
            command += f" --from-report={args.from_report}"
            try:
                measurements = profile.report_measurements(json.loads(report.read_text()))
            except OSError as exc:
                raise profile.SnapshotError(f"cannot read {report}: {exc.strerror}") from None
            except ValueError as exc:
                raise profile.SnapshotError(f"{report} is not JSON: {exc}") from None
        fleet = gather.Fleet(cluster)
        fleet.wanted = set(profile.FACTS)
        got = {}
        try:
            for spec in cluster.by_rank():
                node = fleet.node(spec.name)

                def read(name: str, arg=None) -> str:
                    try:
                        return gather.registry.text(node, name, arg)
                    except gather.Unreadable as exc:
                        raise profile.SnapshotError(f"{node.name}: {exc.why}") from None
                got[node.name] = profile.NodeFacts(read("gpu_inventory"), read("meminfo"),
                                                   {link.netdev: read("ethtool", link.netdev) for link in spec.links})
        finally:
            for n in fleet.nodes.values():
                n.close()
        base = load_profile(cluster.expect.profile, Path(path).parent)
        when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        margin = profile.MARGIN if args.margin is None else args.margin
        doc = profile.snapshot(cluster, base, got, measurements, when, margin)
    except (profile.SnapshotError, RemoteError) as exc:
        print(f"gb10check profile snapshot: {exc}", file=sys.stderr)
        return 1
    text = profile.render(doc, command)
    if args.output:
        Path(args.output).write_text(text)
        print(f"gb10check profile snapshot: wrote {args.output}; name it in the cluster file as expect.profile", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def debug_options(parser: argparse.ArgumentParser) -> None:
    """A hidden --debug on every subcommand (an error then shows its traceback), except a subcommand that hands the rest
    of its command line to pytest (set_defaults(passthrough=True), or an argument of nargs=REMAINDER): there --debug is
    pytest's to read."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                debug_options(sub)
    passes_on = parser.get_default("passthrough") or any(a.nargs == argparse.REMAINDER for a in parser._actions)
    if not passes_on and "--debug" not in parser._option_string_actions:
        parser.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    """The subcommand; an error is one line per problem with its fix, `gb10check STEP: ...`, exit 2 (with --debug: the
    traceback)."""
    step = " ".join(filter(None, (args.command, getattr(args, "sim_command", None) or getattr(args, "profile_command", None))))
    try:
        return args.func(args)
    except KeyboardInterrupt:
        if getattr(args, "debug", False):
            raise
        print(f"gb10check {step}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001  (every error, said in one line; --debug shows where)
        if getattr(args, "debug", False):
            raise
        for said in line(exc).splitlines():
            print(f"gb10check {step}: {said}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    """The command, callable in-process: it changes no process-wide state."""
    parser = build_parser()
    debug_options(parser)
    return run(parser.parse_args(argv))


def console_main() -> None:
    """The installed command: a reader that closes the pipe (`| head`) ends it quietly, as it ends other tools."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())


if __name__ == "__main__":
    console_main()
