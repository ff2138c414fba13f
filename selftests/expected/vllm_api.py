"""Facts asserted for the captures of vllm_api/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "vllm_api/v1-models-3-served-names-gb10-jethac.json": (
        "vllm_models", {
            "#": 3,
            "0.id": "gemma4-aeon-uncensored",
            "2.id": "gemma4-deep",
            "0.root": "/models/target",
            "0.max_model_len": 262144,
        }),
    "vllm_api/v1-models-apertus-gh200-clariden-idx62004564966.txt": (
        "vllm_models", {
            "#": 1,
            "0.id": "swiss-ai/Apertus-8B-Instruct-2509",
            "0.max_model_len": 65536,
        }),
    "vllm_api/chat-completion-stop-harness-wrapped-jethac.json": (
        "vllm_chat", {
            "finish_reason": "stop",
            "content": "spark-ok",
            "reasoning": None,
            "completion_tokens": 4,
        }),
    "vllm_api/chat-completion-reasoning-length-harness-wrapped-jethac.json": (
        "vllm_chat", {
            "finish_reason": "length",
            "content": None,
            "reasoning": "Thinking Process:\n1.  **",
            "reasoning_field": "reasoning",
            "prompt_tokens": 18,
        }),
    "vllm_api/error-404-model-not-found-nested-envelope-llm-d-dgxspark-idx61634039117.json": (
        "vllm_error", {
            "envelope": "nested",
            "code": 404,
            "type": "NotFoundError",
            "param": "model",
            "message": "The model `does-not-exist-model` does not exist.",
        }),
    "vllm_api/error-400-bad-request-flat-legacy-envelope-vllm-docs-matryoshka.json": (
        "vllm_error", {
            "envelope": "flat",
            "code": 400,
            "type": "BadRequestError",
        }),
    "vllm_api/route-404-fastapi-detail-not-found-vllm-0.17.1-gb10-idx52511083852.json": (
        "vllm_error", {
            "envelope": "fastapi",
            "message": "Not Found",
            "code": None,
        }),
    "vllm_api/sse-tool_calls-stream-2-tools-qwen3-coder-next-usage-DONE-idx51976516683.txt": (
        "vllm_sse", {
            "done": True,
            "chunks": 11,
            "finish_reason": "tool_calls",
            "#tool_calls": 2,
            "tool_calls.0.name": "write",
            "tool_calls.0.arguments": "{\"content\": \"123\", \"filePath\": \"/home/chju/dev/rndsoft/1/123\"}",
            "tool_calls.1.id": "call_0061065f43604133aff0488e",
            "usage_chunk": True,
            "completion_tokens": 79,
        }),
    "vllm_api/sse-stream-tail-stop-usage-only-chunk-DONE-vllm-omni-pr2313.txt": (
        "vllm_sse", {
            "done": True,
            "chunks": 4,
            "content": " scale.",
            "finish_reason": "stop",
            "usage_chunk": True,
            "completion_tokens": 113,
        }),
    "vllm_api/sse-stream-head-3-events-TRUNCATED-vllm-issue35705.txt": (
        "vllm_sse", {
            "done": False,
            "chunks": 3,
            "first_role": "assistant",
            "content": " .<think>",
            "finish_reason": None,
        }),
}
