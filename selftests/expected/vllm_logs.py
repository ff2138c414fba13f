"""Facts asserted for the captures of vllm_logs/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "vllm_logs/vllm-gb10-single-node-startup-jethac-server.log": (
        "vllm_log", {
            "lines": 218,
            "model_gib": 17.17,
            "kv_cache_tokens": 519920,
            "startup_complete": True,
            "#errors": 0,
            "milestones.1.name": "tp_rank",
            "milestones.1.values.tp_rank": "0",
            "milestones.4.name": "kv_cache",
            "milestones.5.name": "graph_capture",
            "milestones.5.values.gib": "1.64",
            "milestones.6.values.url": "http://0.0.0.0:8000",
            "milestones.7.name": "startup_complete",
            "milestones.7.t_s": 279.0,
        }),
    "vllm_logs/vllm-0.13.0-gb10-offline-LLM-ansi-prefix-kvcache-chunk-elizabetht-spark.log": (
        "vllm_log", {
            "model_gib": 14.9889,
            "kv_cache_tokens": 147152,
            "startup_complete": False,
            "#milestones": 3,
            "milestones.1.values.seconds": "107.781408",
        }),
    "vllm_logs/follower-collective_rpc-assertion-vllm-pr36875.txt": (
        "vllm_log", {
            "#errors": 1,
            "errors.0.name": "follower_collective_rpc",
            "errors.0.hint": "rank 1+ started without --headless",
        }),
}
