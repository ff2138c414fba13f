"""Facts asserted for the captures of vllm_logs/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "vllm_logs/vllm-gb10-single-node-startup-jethac-server.log": (
        "vllm_log", {
            # the engine as it resolved: two attention backends (the drafter's is the second), an NvFp4 MoE on CUTLASS
            "engine.attention": ["TRITON_ATTN", "FLASH_ATTN"],
            "engine.moe": ["VLLM_CUTLASS"],
            "engine.linear": ["FlashInferCutlassNvFp4LinearKernel"],
            "engine.marlin_fallback": [],
            "engine.kv_cache_dtype": "auto",
            "engine.quantization": "compressed-tensors",
            "engine.cudagraph_mode": "FULL_AND_PIECEWISE",
            "engine.compile_mode": "VLLM_COMPILE",
            "engine.speculative": "dflash",
            "engine.enforce_eager": False,
            "marks.0.name": "compile",
            "marks.1.name": "compiled",
            "marks.1.values.took": "32.60",
            "marks.2.name": "capturing",
            "lines": 218,
            "version": "0.20.1",
            "model": "/models/target",
            "tensor_parallel_size": 1,
            "max_model_len": 262144,
            "model_gib": 17.17,
            "kv_cache_tokens": 519920,
            "max_concurrency": 1.98,
            "startup_complete": True,
            "startup_failed": False,
            "#errors": 0,
            "#request_errors": 0,
            "milestones.0.name": "distributed_init",
            "milestones.1.name": "tp_rank",
            "milestones.1.values.tp_rank": "0",
            "milestones.3.values.seconds": "127.259276",
            "milestones.4.name": "kv_cache",
            "milestones.5.name": "graph_capture",
            "milestones.5.values.gib": "1.64",
            "milestones.6.values.url": "http://0.0.0.0:8000",
            "milestones.7.name": "startup_complete",
            "milestones.7.t_s": 279.0,
            "wrapped_at": None,
        }),
    "vllm_logs/vllm-0.13.0-gb10-offline-LLM-ansi-prefix-kvcache-chunk-elizabetht-spark.log": (
        "vllm_log", {
            "lines": 9,
            "model_gib": 14.9889,
            "kv_cache_tokens": 147152,
            "max_concurrency": 1.12,
            "startup_complete": False,
            "#milestones": 3,
            "milestones.0.values.seconds": "106.98",
            "milestones.1.name": "model_loaded",
            "milestones.1.values.seconds": "107.781408",
            "milestones.2.t_s": 7.0,
            "#errors": 0,
        }),
    "vllm_logs/follower-collective_rpc-assertion-vllm-pr36875.txt": (
        "vllm_log", {
            "lines": 1,
            "#errors": 1,
            "errors.0.name": "follower_collective_rpc",
            "errors.0.hint": "rank 1+ started without --headless",
            "startup_failed": False,
        }),
    "vllm_logs/apiserver-traceback-tail-only-Engine-core-initialization-failed-Failed-core-procs-empty-dgxspark-mxfp4-spark-vllm-docker-issue45.txt": (
        "vllm_log", {
            "lines": 9,
            "#milestones": 0,
            "#errors": 1,
            "errors.0.name": "engine_core_failed",
            "errors.0.line": 9,
            "errors.0.text": "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
            "startup_failed": True,
            "startup_complete": False,
            "#request_errors": 0,
        }),
    "vllm_logs/gb10-dgxspark-enginecore-failed-triton-ptxas-sm_121a-CalledProcessError-255-fragment-TRUNCATED-MinerU-issue4350.txt": (
        "vllm_log", {
            "lines": 11,
            "#errors": 2,
            "errors.0.name": "engine_core_failed",
            "errors.0.line": 2,
            "errors.1.name": "triton_ptxas_sm121a",
            "errors.1.line": 8,
            "startup_failed": True,
            "#request_errors": 0,
        }),
    "vllm_logs/vllm-0.5.4-ray-tp16-multinode-leonardo-HARD-WRAPPED-at-160-cols-TRUNCATED-vllm-issue9738.txt": (
        "vllm_log", {
            "lines": 5,  # 11 physical lines: the engine line was wrapped into 7
            "wrapped_at": 162,
            "version": "0.5.4",
            "engine.kv_cache_dtype": "auto",  # read across the wrapped engine line
            "engine.enforce_eager": True,
            "engine.cudagraph_mode": None,  # 0.5 has no compilation config
            "engine.speculative": "none",
            "nccl_version": "2.20.5",
            "model": "/leonardo_scratch/large/userexternal/gpuccett/models/hf_llama/llama-3.1-405b-instruct-hf",
            "tensor_parallel_size": 16,
            "max_model_len": 4096,
            "#milestones": 0,
            "#errors": 0,
        }),
    "vllm_logs/vllm-2025-07-serving_chat-preprocess-traceback-no-pid-prefix-max-context-request-error-TRUNCATED-vllm-issue20409.txt": (
        "vllm_log", {
            "lines": 8,
            "#errors": 0,  # a request failed; the server was not failing
            "#request_errors": 1,
            "request_errors.0.name": "request_preprocess",
            "request_errors.0.line": 1,
            "startup_failed": False,
        }),
    "vllm_logs/vllm-source-build-version-0.1.dev1+gda1daf40b-gb10-gemma4-12b-startup-plus-requests-jethac.log": (
        "vllm_log", {
            # 110 lines in the file; read_capture (Path.read_text) turns the progress bars' lone CRs into newlines
            "lines": 110,  # lone CRs (progress bars) redraw a line: 110 log lines, as the file has
            "version": "0.1.dev1+gda1daf40b",
            "engine.attention": ["TRITON_ATTN"],
            "engine.moe": [],
            "engine.speculative": "none",
            "engine.quantization": "None",
            "engine.cudagraph_mode": "FULL_AND_PIECEWISE",
            "engine.max_num_seqs": None,  # neither asked nor in the config line: vLLM's default, not stated
            "#marks": 3,
            "model": "google/gemma-4-12B-it",
            "max_model_len": 8192,
            "model_gib": 22.83,
            "kv_cache_tokens": 336566,
            "max_concurrency": 41.08,
            "#milestones": 8,
            "milestones.5.name": "graph_capture",
            "milestones.5.values.gib": "0.33",
            "milestones.7.name": "startup_complete",
            "milestones.7.t_s": 321.0,
            "startup_complete": True,
            "#errors": 0,
            "#request_errors": 0,
        }),
}
