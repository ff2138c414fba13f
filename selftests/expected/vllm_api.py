"""Facts asserted for the captures of vllm_api/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "vllm_api/v1-models-3-served-names-gb10-jethac.json": (
        "vllm_models", {
            "#": 3,
            "0.id": "gemma4-aeon-uncensored",
            "1.id": "gemma4-fast",
            "2.id": "gemma4-deep",
            "0.root": "/models/target",
            "0.max_model_len": 262144,
            "0.owned_by": "vllm",
            "0.parent": None,
        }),
    "vllm_api/v1-models-apertus-gh200-clariden-idx62004564966.txt": (
        "vllm_models", {
            "#": 1,
            "0.id": "swiss-ai/Apertus-8B-Instruct-2509",
            "0.root": "swiss-ai/Apertus-8B-Instruct-2509",
            "0.max_model_len": 65536,
        }),
    "vllm_api/v1-models-FRAGMENT-one-entry-no-braces-author-bolded-max_model_len-markdown-stars-2024-06-vllm-issue5959.txt": (
        "vllm_models", {
            "#": 1,
            "0.id": "meta-llama/Meta-Llama-3-8B-Instruct",
            "0.root": "meta-llama/Meta-Llama-3-8B-Instruct",
            "0.max_model_len": 8192,
            "0.owned_by": "vllm",
        }),
    "vllm_api/chat-completion-stop-harness-wrapped-jethac.json": (
        "vllm_chat", {
            "wrapped": True,
            "model": "gemma4-aeon-uncensored",
            "finish_reason": "stop",
            "stop_reason": 106,
            "content": "spark-ok",
            "reasoning": None,
            "reasoning_field": None,
            "answer_in_reasoning": False,
            "prompt_tokens": 22,
            "completion_tokens": 4,
            "total_tokens": 26,
            "#tool_calls": 0,
        }),
    "vllm_api/chat-completion-reasoning-length-harness-wrapped-jethac.json": (
        "vllm_chat", {
            "wrapped": True,
            "model": "qwen36-35b-heretic",
            "finish_reason": "length",
            "content": None,
            "reasoning": "Thinking Process:\n1.  **",
            "reasoning_field": "reasoning",
            "answer_in_reasoning": False,  # cut by max_tokens, not an answer
            "prompt_tokens": 18,
            "completion_tokens": 8,
        }),
    "vllm_api/chat-completion-vllm-0.26.0-content-null-answer-in-reasoning-routed_experts-ec_transfer_params-qwen3.5-0.8b-djangodevreng.json": (
        "vllm_chat", {
            "wrapped": False,
            "model": "qwen3.5-0.8b-bf16",
            "finish_reason": "stop",
            "content": None,
            "reasoning": "Hier is een lijst met 1 tot 5:\n\n1.  **1**\n2.  **2**\n3.  **3**\n4.  **4**\n5.  **5**",
            "reasoning_field": "reasoning",
            "answer_in_reasoning": True,
            "system_fingerprint": "vllm-0.26.0-9fa4dc7a",
            "vllm_version": "0.26.0",
            "prompt_tokens": 20,
            "completion_tokens": 47,
        }),
    "vllm_api/chat-completion-TRUNCATED-by-author-at-1200-bytes-invalid-json-reasoning-length-qwen3.6-35b-djangodevreng.json": (
        "vllm_chat", {
            "parse_error": "vllm_chat: expected a chat completion JSON body as complete JSON; this body is cut short at char 1200 "
                           "(Unterminated string starting at); got '{\"id\":\"chatcmpl-a89501cdb52bcaf3\",\"object\":"
                           "\"chat.completion\",\"created\":178606359'",
        }),
    "vllm_api/error-404-model-not-found-nested-envelope-llm-d-dgxspark-idx61634039117.json": (
        "vllm_error", {
            "envelope": "nested",
            "vllm": True,
            "code": 404,
            "type": "NotFoundError",
            "param": "model",
            "message": "The model `does-not-exist-model` does not exist.",
            "wrapped_by": None,
        }),
    "vllm_api/error-400-bad-request-flat-legacy-envelope-vllm-docs-matryoshka.json": (
        "vllm_error", {
            "envelope": "flat",
            "vllm": True,
            "code": 400,
            "type": "BadRequestError",
            "param": None,
            "message": "Model \"BAAI/bge-m3\" does not support matryoshka representation, changing output dimensions will "
                       "lead to poor results.",
        }),
    "vllm_api/route-404-fastapi-detail-not-found-vllm-0.17.1-gb10-idx52511083852.json": (
        "vllm_error", {
            "envelope": "fastapi",
            "message": "Not Found",
            "code": None,
            "type": None,
        }),
    "vllm_api/error-400-nested-envelope-wrapped-in-proxy-detail-bytes-repr-trailing-comma-invalid-json-vllm-issue34340.txt": (
        "vllm_error", {
            "envelope": "nested",
            "vllm": True,
            "wrapped_by": "Upstream[decode] error",
            "code": 400,
            "type": "BadRequestError",
            "param": None,
            "message": "'max_tokens' or 'max_completion_tokens' is too large: 65536. This model's maximum context length is "
                       "262144 tokens and your request has 203462 input tokens (65536 > 262144 - 203462). None",
        }),
    "vllm_api/curl-v-400-envoy-gateway-non-vllm-msg-body-no-newline-glued-to-root-prompt-vllm-ascend-issue7535.txt": (
        "vllm_error", {
            "envelope": "gateway",
            "vllm": False,
            "status": 400,
            "server": "envoy",
            "code": None,
            "message": "Token indices sequence length is longer than the specified maximum sequence length for this model!",
        }),
    "vllm_api/sse-tool_calls-stream-2-tools-qwen3-coder-next-usage-DONE-idx51976516683.txt": (
        "vllm_sse", {
            "done": True,
            "truncated": False,
            "chunks": 11,
            "model": "Qwen/Qwen3-Coder-Next",
            "content": "",
            "finish_reason": "tool_calls",
            "#tool_calls": 2,
            "tool_calls.0.id": "call_8a738261208a4538a6a45506",
            "tool_calls.0.name": "write",
            "tool_calls.0.arguments": "{\"content\": \"123\", \"filePath\": \"/home/chju/dev/rndsoft/1/123\"}",
            "tool_calls.1.id": "call_0061065f43604133aff0488e",
            "tool_calls.1.name": "read",
            "tool_calls.1.arguments": "{\"filePath\": \"/home/chju/dev/rndsoft/1/123\"}",
            "usage_chunk": True,
            "prompt_tokens": 10663,
            "completion_tokens": 79,
            "error": None,
        }),
    "vllm_api/sse-stream-tail-stop-usage-only-chunk-DONE-vllm-omni-pr2313.txt": (
        "vllm_sse", {
            "done": True,
            "chunks": 4,
            "content": " scale.",
            "finish_reason": "stop",
            "stop_reason": None,
            "usage_chunk": True,
            "prompt_tokens": 15,
            "completion_tokens": 113,
            "first_role": None,  # the tail of a stream: the role chunk is not in it
        }),
    "vllm_api/sse-stream-head-3-events-TRUNCATED-vllm-issue35705.txt": (
        "vllm_sse", {
            "done": False,
            "truncated": False,  # cut at an event boundary
            "chunks": 3,
            "first_role": "assistant",
            "model": "qwen3_8b",
            "content": " .<think>",
            "finish_reason": None,
            "usage_chunk": False,
        }),
}
