"""The suite's decode tok/s next to `vllm bench serve` on the same server, in one run.

Same server, same request (the field report's "count from 1 to 80", chat endpoint, temperature 0),
same output length (the suite's run decides it; vllm bench is told to produce exactly as many
tokens, --ignore-eos), concurrency 1. vLLM's figure: 1000 / mean TPOT (time per output token after
the first), which is the suite's definition measured by the server's own client.

    python bench/serving_throughput.py --cluster=/run/gb10check-sim/cluster.yaml [--runs 3]

Needs a `vllm` command (default: the simulated cluster's, from `gb10check sim provision`) and the
model's tokenizer in an HF cache (default: the provisioned one).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gb10check.cluster import load_cluster  # noqa: E402
from gb10check.checks.serving import judge_decode_run  # noqa: E402
from gb10check.serving import THROUGHPUT_PROMPT, api_of, measure_decode, medians  # noqa: E402
from gb10check.sim import provision  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cluster", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--vllm", default=str(provision.vllm_bin()))
    ap.add_argument("--hf-home", default=str(provision.hub()))
    args = ap.parse_args()
    cluster = load_cluster(args.cluster)
    api = api_of(cluster)
    runs = []
    for _ in range(args.runs):
        reply, timed = measure_decode(api, cluster.deploy.served_model_name, cluster.serving.decode_max_tokens)
        if problems := judge_decode_run(cluster.head.name, reply, timed, cluster.deploy.served_model_name):
            print("\n".join(p.text for p in problems), file=sys.stderr)
            return 1
        runs.append(timed)
    ours = medians(runs)
    out_len = int(ours["completion_tokens"])
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "prompts.jsonl"
        data.write_text(json.dumps({"prompt": THROUGHPUT_PROMPT}) + "\n")
        result = Path(tmp) / "result.json"
        cmd = [args.vllm, "bench", "serve", "--backend", "openai-chat", "--base-url", api.root,
               "--endpoint", "/v1/chat/completions", "--model", cluster.deploy.model_id,
               "--served-model-name", cluster.deploy.served_model_name, "--dataset-name", "custom",
               "--dataset-path", str(data), "--custom-output-len", str(out_len), "--num-prompts", str(args.runs),
               "--max-concurrency", "1", "--ignore-eos", "--temperature", "0", "--save-result",
               "--result-dir", tmp, "--result-filename", result.name]
        env = {**os.environ, "HF_HOME": args.hf_home, "HF_HUB_OFFLINE": "1"}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        if proc.returncode != 0 or not result.exists():
            print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n", file=sys.stderr)
            print(f"vllm bench serve failed (exit {proc.returncode})", file=sys.stderr)
            return 1
        bench = json.loads(result.read_text())
    ours_decode, ours_e2e = ours["decode_tok_s"], ours["e2e_tok_s"]
    vllm_decode = 1000 / bench["mean_tpot_ms"]
    print(f"server            {api.base_url} ({cluster.deploy.served_model_name})")
    print(f"output length     {out_len} tokens, concurrency 1, {args.runs} runs each")
    print(f"gb10check decode  {ours_decode:8.2f} tok/s (median; e2e {ours_e2e:.2f} tok/s, "
          f"TTFT {ours['ttft_s']:.3f} s)")
    print(f"vllm bench decode {vllm_decode:8.2f} tok/s (1000 / mean TPOT {bench['mean_tpot_ms']:.2f} ms; "
          f"output throughput {bench['output_throughput']:.2f} tok/s, mean TTFT {bench['mean_ttft_ms'] / 1000:.3f} s)")
    print(f"ratio             {ours_decode / vllm_decode:8.3f} (gb10check / vllm bench)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
