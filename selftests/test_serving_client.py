"""The serving client's pure parts: error envelopes, stream timing, the key kept out of reprs."""

from gb10check.facts.vllm_api import parse_error
from gb10check.serving import Api, Reply, Timed
from gb10check.facts.vllm_api import reassemble


def test_the_api_key_middlewares_string_envelope_is_understood():
    # What vLLM 0.32's --api-key middleware answers (seen on the simulated head): no message object.
    err = parse_error('{"error":"Unauthorized"}')
    assert (err.envelope, err.message) == ("string", "Unauthorized")


def test_an_unknown_error_body_is_reported_not_crashed_on():
    assert Reply(502, "<html>Bad Gateway</html>").error == "(unrecognised error body) '<html>Bad Gateway</html>'"
    assert Reply(404, '{"object":"error","message":"The model `x` does not exist.","code":404}').error == \
        "The model `x` does not exist."


def test_the_key_is_not_in_the_repr():
    api = Api("http://198.18.0.10:20001/v1", api_key="sk-secret-123")
    assert "sk-secret-123" not in repr(api)
    assert api.root == "http://198.18.0.10:20001"


def test_decode_rate_is_tokens_after_the_first_over_first_to_last():
    t = Timed(reassemble([]), True, ttft_s=0.5, last_token_s=10.5, total_s=11.0, token_chunks=200, completion_tokens=201)
    assert t.decode_tok_s == 20.0
    assert round(t.e2e_tok_s, 3) == round(201 / 11.0, 3)
    assert Timed(reassemble([]), True, None, None, 1.0, 0, None).decode_tok_s is None
