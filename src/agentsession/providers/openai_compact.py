"""OpenAI's standalone compaction (``responses.compact``) for the Responses client.

The call takes the conversation's input items, ``instructions`` and its cache key, but no
``tools``: the arguments are the live request's lowered body cut down to the fields of the
SDK's own ``ResponseCompactParams``. OpenAI's cached prefix starts with the tools, so for a
session that declares tools the call cannot read the prefix the conversation cached and is
billed at the full input price; a session without tools sends the same prefix and reads it.

Its answer (``CompactedResponse``) is the user messages followed by one ``compaction`` item of
encrypted content. The output list is kept as the server's raw JSON (``{"output": [...]}``),
replayed unchanged as the opening input items of the new epoch. The summary itself cannot be
read, so the text a request for another provider gets instead is the user messages the
compaction kept, under a note saying the rest of the summary is sealed.
"""

from __future__ import annotations

from typing import Any

from ..request import Request, Usage
from .base import CompactionDone

__all__ = [
    "SEALED_NOTE",
    "compact_arguments",
    "compacted",
    "compaction_input",
    "long_writes",
    "offers_compaction",
]

SEALED_NOTE = (
    "OpenAI compacted this conversation into an encrypted summary that only OpenAI can read."
    " The user's messages it kept, in order:"
)
"""What the summary text of an OpenAI compaction starts with (the summary is sealed)."""


def offers_compaction() -> bool:
    """Whether the installed ``openai`` SDK has ``responses.compact``."""
    try:
        from openai.resources.responses import AsyncResponses
    except ImportError:
        return False
    return callable(getattr(AsyncResponses, "compact", None))


def compaction_input(request: Request) -> tuple[Request, bool]:
    """What the compaction is sent of ``request`` (no tools), and whether it reads the cache."""
    return Request(request.system, request.messages, (), request.sources), not request.tools


def compact_arguments(body: dict[str, Any]) -> dict[str, Any]:
    """The ``responses.compact`` keyword arguments for a lowered ``responses.create`` body.

    Only the fields the SDK's compaction parameters declare are kept (``tools``, ``store``,
    ``include`` … are not among them), and of the cache options only those it takes.
    """
    from openai.types.responses import response_compact_params as params

    accepted = set(params.ResponseCompactParams.__annotations__)
    args = {key: value for key, value in body.items() if key in accepted}
    options = args.pop("prompt_cache_options", None)
    if isinstance(options, dict):
        kept = {k: v for k, v in options.items() if k in params.PromptCacheOptions.__annotations__}
        if kept:
            args["prompt_cache_options"] = kept
    return args


def _said(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    texts = [str(p.get("text", "")) for p in parts if isinstance(p, dict) and "text" in p]
    images = sum(isinstance(p, dict) and p.get("type") == "input_image" for p in parts)
    return " ".join([*texts, *(["[image]"] * images)])


def compacted(sent: dict[str, Any], parsed: Any, fmt: str, model: str) -> CompactionDone:
    """The compaction from the raw JSON ``sent`` and the SDK's parsed ``CompactedResponse``.

    The block is ``{"output": [...]}`` as the server sent it. Without exactly one compaction
    item the compaction failed: ``text`` is empty and only the bill is kept.
    """
    output = sent.get("output")
    items = [i for i in output if isinstance(i, dict)] if isinstance(output, list) else []
    found = [i for i in items if i.get("type") == "compaction"]
    said = [_said(i) for i in items if i.get("type") == "message" and i.get("role") == "user"]
    text = ""
    if len(found) == 1 and found[0].get("encrypted_content"):
        text = "\n\n".join([SEALED_NOTE, *(f"USER: {s}" for s in said)])
    usage = Usage()
    reported = getattr(parsed, "usage", None)
    if reported is not None:
        details = getattr(reported, "input_tokens_details", None)
        usage = Usage(
            input_tokens=reported.input_tokens,
            output_tokens=reported.output_tokens,
            cached_input_tokens=getattr(details, "cached_tokens", 0) or 0,
            cache_write_tokens=getattr(details, "cache_write_tokens", 0) or 0,
            cache_write_long_tokens=long_writes(details),
        )
    block = {"output": items} if text else {}
    return CompactionDone(fmt, block, text, usage, model)


def long_writes(details: Any) -> int:
    """The input tokens a Responses call wrote with the 12-hour retention (``ttl_12h_tokens``)."""
    split = getattr(details, "cache_write_tokens_details", None)
    return getattr(split, "ttl_12h_tokens", 0) or 0
