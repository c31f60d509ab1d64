"""The answers of the recording stand-in: the smallest valid completion of each provider API
(Anthropic Messages, OpenAI-compatible chat completions), streamed as server-sent events when
the request asks for ``"stream": true``.  The answer text is :data:`REPLY_TEXT`."""

from __future__ import annotations

import json
import time
from typing import Any

REPLY_TEXT = "ok"


def _anthropic_reply(index: int, model: str, stream: bool) -> tuple[str, bytes]:
    msg_id = f"msg_memspec_audit_{index:06d}"
    if not stream:
        body = {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": REPLY_TEXT}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 1},
        }
        return "application/json", json.dumps(body).encode()
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 0, "output_tokens": 0},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": REPLY_TEXT},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    text = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    return "text/event-stream", text.encode()


USAGE_OPENAI = {"prompt_tokens": 0, "completion_tokens": 1, "total_tokens": 1}


def _openai_reply(
    index: int, model: str, stream: bool, include_usage: bool = False
) -> tuple[str, bytes]:
    """A chat completion; streamed, with ``include_usage`` (the request's
    ``stream_options.include_usage``) every chunk carries ``"usage": null`` and one last chunk
    with no choices carries the usage, as OpenAI's own endpoint sends it."""
    cid = f"chatcmpl-memspec-audit-{index:06d}"
    created = int(time.time())
    if not stream:
        body = {
            "id": cid,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": REPLY_TEXT},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": USAGE_OPENAI,
        }
        return "application/json", json.dumps(body).encode()
    base: dict[str, Any] = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
    }
    chunks = [
        {
            **base,
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "content": REPLY_TEXT},
                    "logprobs": None,
                    "finish_reason": None,
                }
            ],
        },
        {
            **base,
            "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}],
        },
    ]
    if include_usage:
        chunks = [{**c, "usage": None} for c in chunks]
        chunks.append({**base, "choices": [], "usage": USAGE_OPENAI})
    text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return "text/event-stream", text.encode()


def provider_reply(provider: str, index: int, body: bytes) -> tuple[int, str, bytes]:
    """Status, content type and body answering a request of ``provider``'s API."""
    try:
        req = json.loads(body)
    except ValueError:
        req = None
    if not isinstance(req, dict):
        msg = "memspec audit capture: the request body is not a JSON object (recorded anyway)"
        if provider == "anthropic":
            err: dict[str, Any] = {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": msg},
            }
        else:
            err = {"error": {"message": msg, "type": "invalid_request_error", "code": None}}
        return 400, "application/json", json.dumps(err).encode()
    model = req.get("model") if isinstance(req.get("model"), str) else "memspec-audit-capture"
    assert isinstance(model, str)
    stream = req.get("stream") is True
    if provider == "anthropic":
        ctype, payload = _anthropic_reply(index, model, stream)
    else:
        options = req.get("stream_options")
        usage = isinstance(options, dict) and options.get("include_usage") is True
        ctype, payload = _openai_reply(index, model, stream, usage)
    return 200, ctype, payload
