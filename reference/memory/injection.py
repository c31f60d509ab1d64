"""Folding the memory block onto the system prompt (MEM-INJECT).

Memory never touches messages, tools or budgets; it only ever changes the system prompt, and
only when a block was produced.
"""

from __future__ import annotations

from typing import Any, Final, Literal

Provider = Literal["anthropic", "openai"]
PART_JOIN: Final = "\n\n"


def fold_memory_block(system: str | None, block: str | None) -> str | None:
    """The system prompt with the block in front (MEM-INJECT.1, MEM-INJECT.2).

    No block (``None`` or ``""``) returns ``system`` itself, unchanged.  Otherwise the non-empty
    parts ``[block, system]`` joined with ``"\\n\\n"``; with an empty or absent system text the
    result is just the block.
    """
    if not block:
        return system
    if not system:
        return block
    return block + PART_JOIN + system


def fold_into_parts(parts: list[Any], block: str, list_fold: bool) -> list[Any]:
    """A list-form system prompt with the block in front (MEM-INJECT.5).

    ``list_fold`` false: ``{"type": "text", "text": block}`` inserted first.  True: the block
    folded into the first text block's text (``fold_memory_block``), every other key of that
    block (``cache_control``) kept; a list without a text block gets the block inserted first.
    """
    if list_fold:
        for i, part in enumerate(parts):
            if isinstance(part, dict) and part.get("type") == "text":
                text = part.get("text")
                if text is None or isinstance(text, str):
                    return [
                        *parts[:i],
                        {**part, "text": fold_memory_block(text, block)},
                        *parts[i + 1 :],
                    ]
    return [{"type": "text", "text": block}, *parts]


def inject(
    request: dict[str, Any], block: str | None, provider: Provider, *, list_fold: bool = False
) -> dict[str, Any]:
    """Put the block in front of a provider request's system prompt (MEM-INJECT.1, MEM-INJECT.2,
    MEM-INJECT.3, MEM-INJECT.4, MEM-INJECT.5).

    * No block (``None`` or ``""``): the very same ``request`` object is returned, untouched.
    * ``anthropic``: the top-level ``system``.  A string (or an absent key) is folded with
      ``fold_memory_block``; a list of content blocks goes through ``fold_into_parts`` (a text
      block inserted first, or with ``list_fold`` the block folded into the first text block).
    * ``openai``: ``messages``.  When ``messages[0]`` has role ``system`` its content is folded
      (string content) or goes through ``fold_into_parts`` (list content); otherwise a new
      ``{"role": "system", "content": block}`` message is inserted at index 0.

    The input is never mutated: a shallow copy is returned in which only the system prompt
    differs, and every other value is the very same object as in ``request``.
    """
    if not block:
        return request
    out = dict(request)
    if provider == "anthropic":
        system = request.get("system")
        if isinstance(system, list):
            out["system"] = fold_into_parts(system, block, list_fold)
        elif system is None or isinstance(system, str):
            out["system"] = fold_memory_block(system, block)
        else:
            raise TypeError("anthropic request 'system' must be a string or a list of blocks")
        return out
    if provider == "openai":
        messages = request.get("messages")
        if messages is None:
            messages = []
        if not isinstance(messages, list):
            raise TypeError("openai request 'messages' must be a list")
        first = messages[0] if messages else None
        if isinstance(first, dict) and first.get("role") == "system":
            content = first.get("content")
            new_first = dict(first)
            if isinstance(content, list):
                new_first["content"] = fold_into_parts(content, block, list_fold)
            elif content is None or isinstance(content, str):
                new_first["content"] = fold_memory_block(content, block)
            else:
                raise TypeError("openai system message 'content' must be a string or a list")
            out["messages"] = [new_first, *messages[1:]]
        else:
            out["messages"] = [{"role": "system", "content": block}, *messages]
        return out
    raise ValueError(f"unknown provider {provider!r}")
