"""--from-pdf: a page of your PDF -> one page of HTML, written by a model behind any OpenAI-compatible
chat endpoint (a hosted model, or `vllm serve` of a local VLM), in olmOCR's conversation.

The conversation is upstream's `generate_html_from_image`, read at run time from the olmocr 0.4.27
wheel's `olmocr/bench/synth/mine_html_templates.py` (olmocr_rl.synth.assets; sha256-checked, never
copied here): the texts, images, temperatures and token limits of its four requests are taken from
the function's source with `ast` (string literals, and f-strings whose fields are the plain names
analysis_text, png_width, png_height and initial_html; nothing is executed), and sent as OpenAI chat
messages (the page as a PNG data URL). Its control flow is ours, the wheel's: (0) the page must be
RIGHT_SIDE_UP, (1) an analysis of its layout, (2) the HTML (the last ``` code block of the answer),
(3) that HTML rendered (olmocr_rl.synth.render) and shown back with the original for (4) a revised
HTML, kept when the answer has one; a request that stops early (finish_reason other than "stop")
ends steps 1-2 without HTML and makes step 4 keep the step-2 HTML, as upstream.

Differences from f7cfe4c's own copy (newer than the wheel's): f7cfe4c also asks for sub/superscripts
as <sub>/<sup> (step 2, item 5), adds a math item to step 4's checklist and, when the step-2 tables
are not rectangular, a paragraph asking to line their columns up; it drops a page whose final tables
are not rectangular and one whose step-2 HTML fails to render (the wheel keeps the step-2 HTML).
Anthropic's extended thinking (step 4) has no OpenAI equivalent and is not sent.

The model's answer is untrusted: it must be one page of HTML (a code block of at most MAX_HTML
characters with an <html> or <body> element, valid Unicode) or the page is refused with the reason;
the HTML is then rendered like any other (render.py's bounds). Requests: a timeout each, retries with
backoff on 429 (honouring Retry-After up to 60 s), 5xx, timeouts and refused connections; token use
counted from each answer's `usage`, and no new page started once the budget is spent.
"""

from __future__ import annotations

import ast
import base64
import http.client
import json
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from olmocr_rl.errors import UserError

MAX_HTML = 2_000_000
TEMPLATE_NAMES = {"analysis_text", "png_width", "png_height", "initial_html"}
IMAGE_NAMES = {"image_base64": "page", "rendered_image_base64": "rendered"}


class ConversationError(UserError, RuntimeError):
    """The wheel's module does not hold the conversation this reader expects."""


@dataclass(frozen=True)
class Turn:
    """One request of the conversation: its parts ("image", which) / ("text", template)."""

    max_tokens: int
    temperature: float
    parts: tuple[tuple[str, Any], ...]


def read_conversation(module: Path) -> list[Turn]:
    """The four requests of `generate_html_from_image` in `module`, in source order."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.AsyncFunctionDef) and n.name == "generate_html_from_image"), None)
    if fn is None:
        raise ConversationError(f"{module}: no generate_html_from_image()")
    turns = []
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and any(k.arg == "messages" for k in n.keywords)]
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
        kw = {k.arg: k.value for k in call.keywords}
        try:
            (message,) = kw["messages"].elts  # type: ignore[attr-defined]
            content = dict(zip((ast.literal_eval(k) for k in message.keys), message.values))["content"]
            parts = tuple(_part(p) for p in content.elts)
            turns.append(Turn(int(ast.literal_eval(kw["max_tokens"])), float(ast.literal_eval(kw["temperature"])), parts))
        except (KeyError, ValueError, TypeError, AttributeError) as e:
            raise ConversationError(f"{module}:{call.lineno}: a request this reader does not understand ({e})") from None
    if len(turns) != 4:
        raise ConversationError(f"{module}: {len(turns)} requests in generate_html_from_image(), expected 4")
    return turns


def _part(node: Any) -> tuple[str, Any]:
    fields = dict(zip((ast.literal_eval(k) for k in node.keys), node.values))
    kind = ast.literal_eval(fields["type"])
    if kind == "image":
        source = dict(zip((ast.literal_eval(k) for k in fields["source"].keys), fields["source"].values))
        if not isinstance(source["data"], ast.Name) or source["data"].id not in IMAGE_NAMES:
            raise ValueError("an image that is not the page or its rendering")
        return "image", IMAGE_NAMES[source["data"].id]
    if kind == "text":
        _check_template(fields["text"])
        return "text", fields["text"]
    raise ValueError(f"a part of type {kind!r}")


def _check_template(node: Any) -> None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return
    if not isinstance(node, ast.JoinedStr):
        raise ValueError("a text that is neither a string nor an f-string")
    for value in node.values:
        if isinstance(value, ast.FormattedValue):
            if not (isinstance(value.value, ast.Name) and value.value.id in TEMPLATE_NAMES) or value.format_spec or value.conversion != -1:
                raise ValueError(f"an f-string field {ast.unparse(value)}")


def fill(node: Any, variables: dict[str, Any]) -> str:
    """The text of a template (`_check_template` accepted it) with `variables` put in."""
    if isinstance(node, ast.Constant):
        return node.value
    return "".join(v.value if isinstance(v, ast.Constant) else str(variables[v.value.id]) for v in node.values)


def extract_code_block(text: str) -> str | None:
    """The last ```html block of the answer, else the last ``` block, each first with a newline
    after the fence, then without (upstream's rule); stripped; None without one."""
    for pattern in (r"```html\n(.*?)```", r"```\n(.*?)```", r"```html(.*?)```", r"```(.*?)```"):
        blocks = re.findall(pattern, text, re.DOTALL)
        if blocks:
            return blocks[-1].strip()
    return None


def html_problem(html: str | None) -> str | None:
    """Why an answer's code block is not one page of HTML, or None."""
    if not html:
        return "the answer has no ``` code block"
    if len(html) > MAX_HTML:
        return f"its HTML has {len(html)} characters (more than {MAX_HTML})"
    try:
        html.encode("utf-8")
    except UnicodeEncodeError:
        return "its HTML is not valid Unicode"
    from olmocr_rl.synth.markdown import soup_of

    if soup_of(html).find(["html", "body"]) is None:
        return "its code block is not an HTML page (no <html> or <body> element)"
    return None


class EndpointError(RuntimeError):
    """A request that failed for good (after its retries); the message says how."""


class _Transient(Exception):
    def __init__(self, why: str, retry_after: float | None = None) -> None:
        super().__init__(why)
        self.retry_after = retry_after


@dataclass
class EndpointOptions:
    url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 300.0
    retries: int = 3
    max_tokens: int | None = None  # a cap on each request's max_tokens (upstream: 1000 to 40000)
    budget: int | None = None  # tokens (prompt + completion) after which no new page starts
    concurrency: int = 4
    backoff_s: float = 1.0


@dataclass
class Usage:
    """Tokens used so far, from the answers' `usage` (thread-safe)."""

    prompt: int = 0
    completion: int = 0
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, usage: object) -> None:
        with self.lock:
            self.requests += 1
            if isinstance(usage, dict):
                self.prompt += _count(usage.get("prompt_tokens"))
                self.completion += _count(usage.get("completion_tokens"))

    def total(self) -> int:
        return self.prompt + self.completion


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 40 else 0


class ChatClient:
    """POSTs chat completions to `url` (`.../v1`, or the full `.../chat/completions`)."""

    def __init__(self, options: EndpointOptions, usage: Usage) -> None:
        self.options = options
        self.usage = usage
        url = options.url.rstrip("/")
        self.url = url if url.endswith("/chat/completions") else url + "/chat/completions"

    def ask(self, turn: Turn, variables: dict[str, Any], images: dict[str, str]) -> tuple[str, str]:
        """The answer's text and finish_reason."""
        content = []
        for kind, value in turn.parts:
            if kind == "image":
                content.append({"type": "image_url", "image_url": {"url": f"data:image/png;base64,{images[value]}"}})
            else:
                content.append({"type": "text", "text": fill(value, variables)})
        max_tokens = min(turn.max_tokens, self.options.max_tokens or turn.max_tokens)
        body = {"model": self.options.model, "messages": [{"role": "user", "content": content}], "max_tokens": max_tokens,
                "temperature": turn.temperature}  # fmt: skip
        answer = self._post_with_retries(json.dumps(body).encode())
        return self._read(answer)

    def _post_with_retries(self, data: bytes) -> Any:
        retries = self.options.retries
        for attempt in range(retries + 1):
            try:
                return self._post(data)
            except _Transient as e:
                if attempt == retries:
                    raise EndpointError(f"{e} (after {retries} retries)") from None
                delay = e.retry_after if e.retry_after is not None else self.options.backoff_s * 2**attempt
                time.sleep(min(60.0, max(0.0, delay)))
        raise AssertionError("unreachable")

    def _post(self, data: bytes) -> Any:
        headers = {"Content-Type": "application/json"}
        if self.options.api_key:
            headers["Authorization"] = f"Bearer {self.options.api_key}"
        request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.options.timeout_s) as response:
                raw = response.read(64 << 20)
        except urllib.error.HTTPError as e:
            detail = e.read(300).decode("utf-8", "replace").strip()
            if e.code == 429 or e.code >= 500:
                raise _Transient(f"HTTP {e.code} from {self.url}", _retry_after(e.headers.get("Retry-After"))) from None
            raise EndpointError(f"HTTP {e.code} from {self.url}: {detail[:200]}") from None
        except (TimeoutError, OSError, http.client.HTTPException) as e:  # URLError is an OSError; a read timeout is TimeoutError
            reason = getattr(e, "reason", e)
            if isinstance(reason, TimeoutError) or "timed out" in str(reason):
                raise _Transient(f"no answer from {self.url} within {self.options.timeout_s:g} s") from None
            raise _Transient(f"cannot reach {self.url} ({reason or type(reason).__name__})") from None
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            raise EndpointError(f"the answer from {self.url} is not JSON ({raw[:80]!r})") from None

    def _read(self, answer: Any) -> tuple[str, str]:
        try:
            choice = answer["choices"][0]
            content = choice["message"]["content"]
            finish = choice.get("finish_reason") or ""
        except (KeyError, IndexError, TypeError):
            raise EndpointError(f"the answer from {self.url} is not a chat completion ({json.dumps(answer)[:120]})") from None
        self.usage.add(answer.get("usage"))
        if isinstance(content, list):  # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
        if not isinstance(content, str):
            raise EndpointError(f"the answer from {self.url} has no text content")
        return content, str(finish)


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def page_html(
    client: ChatClient, turns: list[Turn], png: bytes, size: tuple[int, int], render_png: Callable[[str], bytes | None]
) -> tuple[str | None, str]:
    """The HTML the model writes for one page image (`size`: its width and height, px), or None
    and why not. `render_png` renders an HTML page to a PNG (None when it does not render)."""
    images = {"page": base64.b64encode(png).decode()}
    variables: dict[str, Any] = {"png_width": size[0], "png_height": size[1]}
    orientation, _ = client.ask(turns[0], variables, images)
    if "RIGHT_SIDE_UP" not in orientation.strip():
        return None, f"the model does not find the page upright ({orientation.strip()[:40]!r})"
    analysis, finish = client.ask(turns[1], variables, images)
    if finish != "stop":
        return None, f"the model's analysis stopped early (finish_reason {finish!r})"
    variables["analysis_text"] = analysis
    answer, finish = client.ask(turns[2], variables, images)
    if finish != "stop":
        return None, f"the model's HTML stopped early (finish_reason {finish!r})"
    initial = extract_code_block(answer)
    if problem := html_problem(initial):
        return None, f"the model's HTML is refused: {problem}"
    assert initial is not None
    rendered = render_png(initial)
    if rendered is None:
        return initial, ""
    images["rendered"] = base64.b64encode(rendered).decode()
    variables["initial_html"] = initial
    answer, finish = client.ask(turns[3], variables, images)
    if finish != "stop":
        return initial, ""
    refined = extract_code_block(answer)
    if refined is None:
        return initial, ""
    if problem := html_problem(refined):
        return None, f"the model's revised HTML is refused: {problem}"
    return refined, ""
