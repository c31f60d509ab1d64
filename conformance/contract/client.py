"""The contract's side of the harness's one HTTP client: :class:`Http` sends every request
through :meth:`conformance.targets.base.HttpTarget.framed` (a fresh connection each, the
client's whole-request deadline, answer bound and strict answer framing) in the framing the
case asks for, counts them, and renders an exchange as the ``curl`` line that reproduces it
(the token written as ``$MEMSPEC_TOKEN``).  The helpers read what the contract judges off an
:class:`~conformance.vocabulary.Exchange`."""

from __future__ import annotations

import re
import shlex
from dataclasses import replace

from conformance.contract.model import TOKEN_PLACEHOLDER
from conformance.targets.base import TOO_LARGE, Auth, Framing, HttpTarget
from conformance.vocabulary import Exchange, Secret, TargetConfig

#: How the client writes the token where it records the headers sent.
_ELIDED = "[token]"


def unanswered(ex: Exchange) -> str | None:
    """Why there is no answer to judge: a transport error, or an answer over the bound."""
    if ex.transport_error is not None:
        return ex.transport_error
    if ex.body_error is not None and ex.body_error.startswith(TOO_LARGE):
        return ex.body_error
    return None


def sent_headers(ex: Exchange) -> dict[str, str]:
    """The request's headers as sent, the token written as ``$MEMSPEC_TOKEN``."""
    return {k: v.replace(_ELIDED, TOKEN_PLACEHOLDER) for k, v in ex.request_headers}


def answer_headers(ex: Exchange) -> dict[str, str]:
    """The answer's headers the contract judges (its content type)."""
    return {"content-type": ex.content_type} if ex.content_type else {}


def framing(ex: Exchange) -> tuple[Framing, str | None]:
    """How the request's body was framed, and the ``Content-Length`` value it declared when
    that is not the body's true length."""
    fields = {k.lower(): v for k, v in ex.request_headers}
    if "chunked" in fields.get("transfer-encoding", ""):
        return "chunked", None
    if "content-length" not in fields:
        return "none", None
    if fields["content-length"] == str(len(ex.request_bytes)):
        return "length", None
    return "raw", fields["content-length"]


def without_token(ex: Exchange, token: Secret | None) -> Exchange:
    """``ex`` with the token elided from the headers a case wrote itself."""
    if not token:
        return ex
    secret = token.reveal()
    if not any(secret in v for _, v in ex.request_headers):
        return ex
    headers = tuple((k, v.replace(secret, _ELIDED)) for k, v in ex.request_headers)
    return replace(ex, request_headers=headers)


class Http:
    """The target's client for one contract run: every request on a connection of its own."""

    def __init__(self, config: TargetConfig) -> None:
        self.target = HttpTarget(config)
        self.base = self.target.url
        self.sent = 0

    def send(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        *,
        auth: Auth = True,
        framing: Framing = "length",
        declared_length: str = "",
        hold_body: bool = False,
    ) -> Exchange:
        """Send one request (:meth:`HttpTarget.framed`)."""
        self.sent += 1
        return self.target.framed(
            method,
            path,
            body,
            headers,
            auth=auth,
            framing=framing,
            declared_length=declared_length,
            hold_body=hold_body,
        )

    def close(self) -> None:
        self.target.close()

    def curl(self, ex: Exchange) -> str:
        """A shell line that sends the same request (the token as ``$MEMSPEC_TOKEN``)."""
        parts = ["curl", "-sS", "-i", "-X", ex.method, shlex.quote(self.base + ex.path)]
        how, declared_length = framing(ex)
        for k, v in sent_headers(ex).items():
            if k.lower() in ("content-length", "transfer-encoding"):
                continue  # written below, from the framing
            if TOKEN_PLACEHOLDER in v and '"' not in v and "`" not in v and "\\" not in v:
                # Double quotes so the shell expands the token; ${...} where a name char follows.
                shown = re.sub(r"\$MEMSPEC_TOKEN(?=\w)", "${MEMSPEC_TOKEN}", f"{k}: {v}")
                parts += ["-H", f'"{shown}"']
            else:
                parts += ["-H", shlex.quote(f"{k}: {v}")]
        if how == "none":
            return " ".join(parts)
        if how == "chunked":
            parts += ["-H", shlex.quote("Transfer-Encoding: chunked")]
        if how == "raw":
            parts += ["-H", shlex.quote(f"Content-Length: {declared_length}")]
        body = ex.request_bytes
        if len(body) > 2048 and body.strip(b" ") != body or len(body) > 8192:
            # A large body: its JSON prefix, padded with spaces to the same length.
            prefix = body.rstrip(b" ")
            if len(prefix) <= 2048 and prefix.isascii():
                pad = len(body) - len(prefix)
                gen = (
                    f"{{ printf %s {shlex.quote(prefix.decode())}; "
                    f"head -c {pad} /dev/zero | tr '\\0' ' '; }}"
                )
                return f"{gen} | {' '.join(parts)} --data-binary @-"
            return " ".join(parts) + f" --data-binary @body-{len(body)}-bytes.bin"
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text = body.decode("latin-1")
        return " ".join(parts) + " --data-binary " + shlex.quote(text)
