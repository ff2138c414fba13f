"""The suite's depth sweep next to llama-benchy's on the same server, with the same depths and lengths, one after the
other in one run: both tables, then the ratio (ours / llama-benchy's) of pp and tg t/s per depth.

    pip install -e '.[bench]'     # llama-benchy==0.4.0
    python bench/depth_sweep_vs_llama_benchy.py --base-url http://RANK0:20001/v1 --model qwen3.8-flash-next \\
        --tokenizer Qwen/Qwen3.8-Flash-Next-FP8 --depth 0 4096 16384 --pp 2048 --tg 32 --runs 3
    python bench/depth_sweep_vs_llama_benchy.py --cluster=cluster.yaml      # the same, from the cluster file's soak: section

llama-benchy runs as `llama-benchy --base-url URL --model TOKENIZER --served-model-name MODEL --pp PP --tg TG --depth
D... --runs N --exact-tg --no-cache --latency-mode generation --format json --save-result FILE`: it needs the model's
tokenizer (a Hugging Face name or a local path, --tokenizer) and, on its first run, the book it cuts prompts from
(--book-url; cached after). Its pp t/s is (context + prompt tokens) / (first response - measured latency); ours is
(context + prompt tokens) / time to the first token, so expect ours a little lower at small depths (gb10check/depth.py).
Figures, not assertions: run it on an idle server.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gb10check import depth  # noqa: E402
from gb10check.depth import pipe_table, test_name  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cluster", help="take the URL, model and the soak: section's depths and lengths from this cluster file")
    p.add_argument("--base-url", help="the server's OpenAI base URL, .../v1 (default: the cluster file's)")
    p.add_argument("--model", help="the served model name (default: deploy.served_model_name)")
    p.add_argument("--tokenizer", help="llama-benchy's tokenizer: a Hugging Face name or local path (default: deploy.model_id, "
                                       "else --model)")
    p.add_argument("--depth", type=int, nargs="+", help="context depths (default: soak.depths, else 0 4096 16384)")
    p.add_argument("--pp", type=int, help="prompt tokens after the context (default: soak.depth_prompt_tokens, else 2048)")
    p.add_argument("--tg", type=int, help="generated tokens (default: soak.depth_gen_tokens, else 32)")
    p.add_argument("--runs", type=int, help="runs per depth (default: soak.depth_runs, else 3)")
    p.add_argument("--api-key-env", help="the variable holding the API key (default: serving.api_key_env)")
    p.add_argument("--book-url", help="passed to llama-benchy (its prompt text; default: its own)")
    p.add_argument("--book-file", help="a local text for llama-benchy's prompts instead of downloading its book (offline): "
                                       "placed in its cache (~/.cache/llama-benchy/<md5 of the URL>.txt) under a file:// URL")
    p.add_argument("--llama-benchy", default="llama-benchy", help="the llama-benchy command (default: llama-benchy on PATH)")
    p.add_argument("--timeout-s", type=float, default=900, help="longest wait for one request's first token (default 900)")
    args = p.parse_args(argv)
    if args.cluster:
        from gb10check.cluster import load_cluster
        from gb10check.soak import settings

        cluster = load_cluster(args.cluster)
        s = settings(cluster)
        args.base_url = args.base_url or cluster.base_url
        args.model = args.model or cluster.deploy.served_model_name
        args.tokenizer = args.tokenizer or cluster.deploy.model_id
        args.depth = args.depth or s.depths
        args.pp, args.tg, args.runs = args.pp or s.depth_prompt_tokens, args.tg or s.depth_gen_tokens, args.runs or s.depth_runs
        args.api_key_env = args.api_key_env or cluster.serving.api_key_env
    if not args.base_url or not args.model:
        p.error("give --base-url and --model, or --cluster=FILE")
    args.depth = args.depth or [0, 4096, 16384]
    args.pp, args.tg, args.runs = args.pp or 2048, args.tg or 32, args.runs or 3
    args.tokenizer = args.tokenizer or args.model
    if args.book_file:
        args.book_url = Path(args.book_file).resolve().as_uri()
    if any(d < 0 for d in args.depth) or min(args.pp, args.tg, args.runs) < 1:
        p.error("depths must be >= 0, --pp, --tg and --runs >= 1")
    if args.tg < 2:
        p.error("--tg must be at least 2 (token generation speed needs a first and a last token)")
    return args


def llama_benchy_command(args: argparse.Namespace, out: str) -> list[str]:
    """The llama-benchy 0.4.0 command line for the same server, depths and lengths (its options, as its --help names them)."""
    cmd = [args.llama_benchy, "--base-url", args.base_url, "--model", args.tokenizer, "--served-model-name", args.model,
           "--pp", str(args.pp), "--tg", str(args.tg), "--depth", *map(str, args.depth), "--runs", str(args.runs),
           "--exact-tg", "--no-cache", "--latency-mode", "generation", "--format", "json", "--save-result", out]
    if args.book_url:
        cmd += ["--book-url", args.book_url]
    return cmd


def seed_book_cache(book_file: str, url: str) -> Path:
    """llama-benchy 0.4.0 reads its book from ~/.cache/llama-benchy/<md5(url)>.txt when it is there (corpus.py), and
    downloads it otherwise: an offline run gives it the text first."""
    cache = Path.home() / ".cache" / "llama-benchy" / (hashlib.md5(url.encode()).hexdigest() + ".txt")
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(Path(book_file).read_text(encoding="utf-8"), encoding="utf-8")
    return cache


def read_llama_benchy(report: dict) -> dict[tuple[str, int], float]:
    """{("pp" | "tg", depth): mean t/s} from llama-benchy's JSON report (--format json: its `benchmarks` list of runs,
    each with context_size and pp_throughput / tg_throughput {mean, std, values})."""
    out = {}
    for run in report.get("benchmarks", []):
        if run.get("is_context_prefill_phase"):
            continue
        for kind, key in (("pp", "pp_throughput"), ("tg", "tg_throughput")):
            metric = run.get(key)
            if metric and metric.get("mean") is not None:
                out[(kind, int(run["context_size"]))] = float(metric["mean"])
    return out


def ratio_table(model: str, pp: int, tg: int, ours: dict[tuple[str, int], float], theirs: dict[tuple[str, int], float]) -> str:
    """model | test | gb10check t/s | llama-benchy t/s | ratio, one pp and one tg row per depth either measured."""
    rows = []
    for d in sorted({d for _, d in ours} | {d for _, d in theirs}):
        for kind, n in (("pp", pp), ("tg", tg)):
            a, b = ours.get((kind, d)), theirs.get((kind, d))
            rows.append([model, test_name(kind, n, d), f"{a:.2f}" if a is not None else "", f"{b:.2f}" if b is not None else "",
                         f"{a / b:.3f}" if a is not None and b else ""])
    return pipe_table(["model", "test", "gb10check t/s", "llama-benchy t/s", "ratio"], rows)


def ours_by_depth(sweep: depth.Sweep) -> dict[tuple[str, int], float]:
    return {(kind, d): m for d in sweep.depths for kind in ("pp", "tg") if (m := sweep.mean(d, kind)) is not None}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from gb10check.serving import Api

    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    api = Api(args.base_url, api_key=key, timeout_s=args.timeout_s)
    print(f"gb10check depth sweep: {args.model} at {args.base_url}, depths {args.depth}, pp {args.pp}, tg {args.tg}, "
          f"{args.runs} runs", flush=True)
    sweep = depth.sweep(api, args.model, args.depth, args.pp, args.tg, args.runs, read_timeout_s=args.timeout_s,
                        say=lambda m: print("  " + m, flush=True))
    print(f"\n{depth.table(sweep)}\n(prompts sized by {sweep.sized_by})\n", flush=True)
    if shutil.which(args.llama_benchy) is None:
        print(f"{args.llama_benchy} not found: pip install -e '.[bench]' (llama-benchy==0.4.0)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "llama-benchy.json")
        cmd = llama_benchy_command(args, out)
        print("$ " + " ".join(cmd), flush=True)
        if key:  # after the command was printed: the key is never shown
            cmd += ["--api-key", key]
        if args.book_file:
            seed_book_cache(args.book_file, args.book_url)
        # Bounded: every depth's runs, each waiting at most --timeout-s for its first token.
        done = subprocess.run(cmd, timeout=args.timeout_s * len(args.depth) * args.runs + 600)
        if done.returncode != 0 or not Path(out).exists():
            print(f"llama-benchy exited {done.returncode}", file=sys.stderr)
            return 1
        theirs = read_llama_benchy(json.loads(Path(out).read_text()))
    print("\n" + ratio_table(args.model, args.pp, args.tg, ours_by_depth(sweep), theirs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
