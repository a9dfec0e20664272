"""Per-model profiles: what each provider's models accept, looked up by model id.

A profile decides how a mid-conversation system message lowers (native role, and where it may
stand, or wrapped into the user turn), whether tool changes are announced in place, and a few
budget figures. The rules come from the providers' documentation (cited in docs/providers.md);
an unknown model gets its provider's conservative default, so a new model never receives a
placement its API might reject. Model-name knowledge lives here too: which OpenAI models use
which published BPE encoding (``ModelProfile.tokenizer``), so exact token counting needs no
table of its own.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..errors import UnknownFormatError
from .base import ModelProfile

__all__ = [
    "ANTHROPIC_NATIVE_SYSTEM_MODELS",
    "FORMATS",
    "OPENAI_ENCODINGS",
    "default_profile",
    "openai_explicit_cache",
    "openai_tokenizer",
    "openai_tool_search",
    "profile_for",
]

FORMATS: tuple[str, ...] = ("openai-chat", "openai-responses", "anthropic-messages", "gemini")
"""The wire formats ``lower()`` knows."""

# Claude models that accept ``role: "system"`` entries inside ``messages`` (and, in beta, the
# ``tool_addition`` / ``tool_removal`` blocks on the same models). Claude Sonnet 5 is
# explicitly excluded by the documentation, so the patterns are anchored: ``claude-sonnet-5``
# alone (or with a date suffix) does not match ``claude-sonnet-5-5``.
ANTHROPIC_NATIVE_SYSTEM_MODELS: tuple[str, ...] = (
    r"claude-opus-4-8",
    r"claude-opus-5",
    r"claude-opus-5-5",
    r"claude-fable-5",
    r"claude-fable-5-1",
    r"claude-mythos-5",
    r"claude-mythos-5-1",
    r"claude-sonnet-5-5",
    r"claude-haiku-5-5",
)
_DATE_SUFFIX = r"(?:-\d{8}|-latest)?"

OPENAI_ENCODINGS: tuple[tuple[str, str], ...] = (
    ("gpt-3.5", "cl100k_base"),
    ("gpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-5", "o200k_base"),
    ("gpt-oss", "o200k_base"),
    ("chatgpt-4o", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
)
"""OpenAI model-name prefixes and their BPE encodings, most specific first (``gpt-4o`` before
``gpt-4``). Other providers publish no offline tokenizer, so their models have none."""

_DEFAULTS: dict[str, ModelProfile] = {
    # Chat Completions accepts system/developer messages at any position; "system" is the role
    # every OpenAI-compatible server understands.
    "openai-chat": ModelProfile(
        provider="openai",
        wire_format="openai-chat",
        system_placement="anywhere",
        system_role="system",
        context_window=128_000,
    ),
    "openai-responses": ModelProfile(
        provider="openai",
        wire_format="openai-responses",
        system_placement="anywhere",
        system_role="developer",
        context_window=128_000,
    ),
    # Older Claude models reject role "system" in messages: wrapping is the safe default.
    "anthropic-messages": ModelProfile(
        provider="anthropic",
        wire_format="anthropic-messages",
        system_placement="none",
        native_tool_changes=False,
        context_window=200_000,
    ),
    # Gemini has only the top-level system_instruction.
    "gemini": ModelProfile(
        provider="gemini",
        wire_format="gemini",
        system_placement="none",
        context_window=1_048_576,
    ),
}


def default_profile(fmt: str) -> ModelProfile:
    """The conservative profile of a wire format, used when no model is known."""
    try:
        return _DEFAULTS[fmt]
    except KeyError:
        raise UnknownFormatError(
            f"unknown wire format {fmt!r}; known formats: {', '.join(FORMATS)}"
        ) from None


def _anthropic_native(model: str) -> bool:
    name = model.rsplit("/", 1)[-1].lower()
    return any(
        re.fullmatch(pattern + _DATE_SUFFIX, name) for pattern in ANTHROPIC_NATIVE_SYSTEM_MODELS
    )


def openai_tokenizer(model: str) -> str | None:
    """The encoding of OpenAI model ``model`` (``"gpt-4.1"``, ``"gpt-4o-2024-08-06"``), or None.

    A prefix matches the whole name or a name continuing with ``-`` or ``.``: ``gpt-4.1-mini``
    is ``gpt-4.1``, ``o1-preview`` is ``o1``, but ``o10`` and ``gpt-40`` match nothing.
    """
    name = model.lower()
    for prefix, encoding in OPENAI_ENCODINGS:
        if name == prefix or name.startswith((prefix + "-", prefix + ".")):
            return encoding
    return None


def openai_explicit_cache(model: str) -> bool:
    """Whether OpenAI model ``model`` takes explicit cache breakpoints and cache diagnostics.

    The SDK documents both for ``gpt-5.6`` and later: GPT-5 minor versions from 6 on, and any
    later major version.
    """
    found = re.match(r"gpt-(\d+)(?:\.(\d+))?(?![\d.])", model.lower())
    if found is None:
        return False
    major, minor = int(found.group(1)), int(found.group(2) or 0)
    return major > 5 or (major == 5 and minor >= 6)


def openai_tool_search(model: str) -> bool:
    """Whether OpenAI model ``model`` has tool search on the Responses API: ``gpt-5.4`` and later.

    The tool search guide names gpt-5.4 as the first model with ``tool_search``.
    """
    found = re.match(r"gpt-(\d+)(?:\.(\d+))?(?![\d.])", model.lower())
    if found is None:
        return False
    major, minor = int(found.group(1)), int(found.group(2) or 0)
    return major > 5 or (major == 5 and minor >= 4)


def _openai_reasoning(model: str) -> bool:
    name = model.lower()
    return bool(re.match(r"(o\d|gpt-5)", name))


def profile_for(provider: str, model: str, *, wire_format: str | None = None) -> ModelProfile:
    """The profile of ``model`` at ``provider``.

    ``provider`` is one of ``openai``, ``openai-compatible``, ``anthropic``, ``gemini``;
    ``wire_format`` overrides the provider's default format (OpenAI: ``openai-responses``).
    """
    match provider:
        case "anthropic":
            base = default_profile("anthropic-messages")
            if _anthropic_native(model):
                big = bool(re.match(r"claude-(opus-5|fable|mythos)", model.lower()))
                return replace(
                    base,
                    system_placement="after_user",
                    native_tool_changes=True,
                    native_tool_search=True,
                    context_window=1_000_000 if big else base.context_window,
                    max_output_tokens=16_384,
                    cache_ttl=True,
                    cache_diagnostics=True,
                    provider_compaction=True,
                )
            compacts = bool(re.match(r"claude-(opus|sonnet)-4-[67]", model.lower()))
            return replace(
                base, cache_ttl=True, cache_diagnostics=True, provider_compaction=compacts
            )
        case "openai":
            fmt = wire_format or "openai-responses"
            base = default_profile(fmt)
            reasoning = _openai_reasoning(model)
            window = 1_047_576 if model.lower().startswith("gpt-4.1") else 400_000
            explicit = openai_explicit_cache(model)
            # Tool search's output items announce loaded tools at the end of the context, so
            # tool changes stay in place on those models (the tools list keeps the prefix).
            search = fmt == "openai-responses" and openai_tool_search(model)
            return replace(
                base,
                system_role="developer",
                reasoning=reasoning and fmt == "openai-responses",
                context_window=window,
                tokenizer=openai_tokenizer(model),
                cache_key=True,
                cache_breakpoints=explicit,
                cache_diagnostics=explicit and fmt == "openai-responses",
                # Explicit breakpoints live 30 minutes; otherwise the in-memory retention is
                # documented as 5 to 10 minutes of inactivity: cold only past its upper end.
                cache_lifetime=1800.0 if explicit else 600.0,
                native_tool_search=search,
                native_tool_changes=search,
                # ``responses.compact`` (where the installed SDK has it: the client checks)
                provider_compaction=fmt == "openai-responses",
            )
        case "openai-compatible":
            # Local servers (llama.cpp, vLLM, Ollama) speak Chat Completions; their chat
            # templates vary, so pass a profile with system_placement="none" for a template
            # that only accepts a leading system message.
            return replace(default_profile(wire_format or "openai-chat"), provider=provider)
        case "gemini":
            return default_profile("gemini")
        case _:
            from ..errors import UnknownModelError

            raise UnknownModelError(f"unknown provider {provider!r}")
