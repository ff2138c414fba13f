"""Model artifacts in the Hugging Face cache, and whether they fit the node's unified memory."""

import json
import re
from dataclasses import dataclass, field

from ..remedies import Code
from ..sizing import Fit, SizingError, fit
from ..verdict import Finding

# What the suite runs in the model's cache folder: every file and link, with mode and size.
LISTING = "cd {dir} && find . -type f -printf 'f %m %s %p\\n' && find . -type l -printf 'l %p %l\\n'"


def model_dir(hf_cache: str, repo: str) -> str:
    return f"{hf_cache}/hub/models--{repo.replace('/', '--')}"


@dataclass
class CacheListing:
    files: dict[str, tuple[int, int]] = field(default_factory=dict)  # path -> (mode, size)
    links: dict[str, str] = field(default_factory=dict)  # path -> target

    def snapshot(self) -> dict[str, int | None]:
        """Snapshot entries (first snapshot) -> size of what they point to (None: dangling)."""
        out = {}
        for path in sorted(set(self.files) | set(self.links)):
            m = re.match(r"^\./snapshots/[^/]+/(.+)$", path)
            if not m:
                continue
            if path in self.links:
                target = _resolve(path, self.links[path])
                out[m[1]] = self.files.get(target, (0, None))[1]
            else:
                out[m[1]] = self.files[path][1]
        return out


def _resolve(path: str, target: str) -> str:
    parts = path.split("/")[:-1] + target.split("/")
    stack: list[str] = []
    for p in parts:
        if p == "..":
            stack.pop() if stack else None
        elif p and p != ".":
            stack.append(p)
    return "./" + "/".join(stack)


def parse_listing(text: str) -> CacheListing:
    listing = CacheListing()
    for line in text.splitlines():
        if line.startswith("f "):
            _, mode, size, path = line.split(" ", 3)
            listing.files[path] = (int(mode, 8), int(size))
        elif line.startswith("l ") and " " in line[2:]:
            path, _, target = line[2:].partition(" ")
            listing.links[path] = target
    return listing


def judge_cache(node: str, repo: str, listing: CacheListing, index_text: str | None, head: str | None = None) -> list[Finding]:
    """The model's snapshot on the node: complete, links into blobs/, readable. Missing, its fix is the node's: rank 0
    (`head`, or the node itself when None) downloads it, every other node copies rank 0's."""
    snap = listing.snapshot()
    if not snap:
        if head is None or head == node:
            return [Finding(Code.MODEL_MISSING, node, f"no snapshot of {repo} in the cache", f"{repo} downloaded", repo=repo)]
        return [Finding(Code.MODEL_NOT_COPIED, node, f"no snapshot of {repo} in the cache", f"{repo} copied from {head}",
                        repo=repo, head=head)]
    findings = []
    try:
        wanted = set(json.loads(index_text)["weight_map"].values()) if index_text else set()
    except (ValueError, KeyError, TypeError):
        wanted = set()
        findings.append(Finding(Code.MODEL_INCOMPLETE, node, "model.safetensors.index.json unreadable", "a valid index", repo=repo))
    missing = sorted(w for w in wanted | {"config.json"} if snap.get(w) is None)
    if missing:
        findings.append(Finding(Code.MODEL_INCOMPLETE, node, f"missing {', '.join(missing[:5])}" + (" ..." if len(missing) > 5 else ""),
                                "every file of the safetensors index present", repo=repo))
    copies = sorted(p for p in listing.files if p.startswith("./snapshots/"))
    if copies:
        findings.append(Finding(Code.MODEL_DEREFERENCED, node, f"{len(copies)} regular files in snapshots/ (e.g. {copies[0]})",
                                "snapshots/ entries linking into blobs/", repo=repo))
    unreadable = sorted(p for p, (mode, _) in listing.files.items() if not mode & 0o004)
    if unreadable:
        findings.append(Finding(Code.MODEL_UNREADABLE, node, f"{len(unreadable)} files not world-readable, e.g. {unreadable[0]} "
                                f"mode {listing.files[unreadable[0]][0]:o}", "every file readable (a+r)", repo=repo))
    return findings


def judge_same_files(node: str, head: str, mine: dict, heads: dict) -> list[Finding]:
    differ = sorted(f for f in set(mine) | set(heads) if mine.get(f) != heads.get(f))
    if not differ:
        return []
    f = differ[0]
    return [Finding(Code.MODEL_DIFFERS, node, f"{len(differ)} files differ from {head}, e.g. {f}: {mine.get(f)} bytes vs "
                    f"{heads.get(f)}", f"the same files and sizes as on {head}", head=head)]


def size(config_text: str, index_text: str, cluster) -> tuple[Fit | None, str | None]:
    """The model's fit on one node from its config.json and safetensors index, or None and why it cannot be sized."""
    d = cluster.deploy
    try:
        return fit(json.loads(config_text), json.loads(index_text), d.tensor_parallel_size, d.max_model_len, d.max_num_seqs,
                   d.gpu_memory_utilization, cluster.expect.memory_gib, d.container_memory_limit), None
    except (SizingError, ValueError) as exc:
        return None, str(exc)


def judge_fit(node: str, repo: str, fit: Fit | None, error: str | None = None) -> list[Finding]:
    if fit is None:
        return [Finding(Code.MODEL_CONFIG, node, f"cannot size {repo}: {error}", "a config.json and safetensors index that "
                        "describe the model", repo=repo)]
    if fit.weights_exceed_memory:
        return [Finding(Code.MODEL_WEDGE, node, f"{repo}: {fit.weights_per_rank_gib:.1f} GiB of weights per rank",
                        f"at most {fit.memory_gib:.0f} GiB of unified memory; loading would exhaust unified memory and can "
                        "wedge the driver", repo=repo)]
    findings = []
    if not fit.fits_budget:
        findings.append(Finding(Code.MODEL_TOO_BIG, node, f"need {fit.need_gib:.1f} GiB per rank (weights {fit.weights_per_rank_gib:.1f}, "
                                f"KV {fit.kv_one_sequence_gib:.1f} for one sequence)", f"at most {fit.budget_gib:.1f} GiB "
                                "(gpu_memory_utilization x memory)", repo=repo))
    if not fit.fits_container:
        findings.append(Finding(Code.CONTAINER_LIMIT_LOW, node, f"need {fit.need_gib:.1f} GiB per rank",
                                f"under the container limit {fit.container_limit_gib:.0f} GiB"))
    return findings


def judge_available(node: str, meminfo: dict, need_gib: float, margin_gib: float) -> list[Finding]:
    available = meminfo.get("mem_available_gib")
    what = "MemAvailable"
    if available is None:  # a kernel without MemAvailable: procps' estimate, said as such
        available, what = meminfo.get("mem_available_estimate_gib") or 0.0, "MemAvailable not reported; estimated"
    findings = []
    if available < need_gib + margin_gib:
        findings.append(Finding(Code.MEMORY_LOW, node, f"{what} {available:.1f} GiB",
                                f"at least {need_gib + margin_gib:.1f} GiB (need {need_gib:.1f} + margin {margin_gib:.1f})"))
    cache = (meminfo.get("cached_gib") or 0.0) + (meminfo.get("buffers_gib") or 0.0)
    if cache > margin_gib * 2:
        findings.append(Finding(Code.PAGE_CACHE, node, f"page cache {cache:.1f} GiB", f"under {margin_gib * 2:.0f} GiB before loading",
                                warning=True))
    return findings
