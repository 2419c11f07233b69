"""A small, strict implementation of Go's ``text/template`` language, enough for prompt files.

lcm-tui stores its depth-aware prompts as Go templates (``{{.TargetTokens}}``,
``{{if .PreviousContext -}} … {{else -}} … {{end -}}``). To replay a user's exported template
directory we execute the same language here. Supported: text, ``{{.Field}}``, ``{{.}}``,
``{{if}}/{{else if}}/{{else}}/{{end}}``, ``{{with}}``, ``{{range}}`` (with ``{{else}}``),
comments ``{{/* … */}}``, trim markers ``{{-``/``-}}``, pipelines with ``|``, parenthesised
pipelines, string/number/bool literals and the builtins ``not and or eq ne lt le gt ge len
index print printf println``. Anything else is a :class:`TemplateError` naming the template
and line — never silently rendered as text.

A rendering is bounded: it may add at most :data:`MAX_ADDED_CHARS` (16,000,000 characters, about
4 million tokens: more than any model's context) to the text values it is given. Each piece is
counted before it is kept and nothing is joined until the end, so a template that repeats
``{{.SourceText}}`` thousands of times, a ``{{range}}`` over a huge number or a ``printf`` with a
huge width is refused with its name and size after a few megabytes, never built (a 105 KB
template repeating a 100 KB source 7,000 times took 1.4 GB to render; in a model replay, 10.8 GB).

>>> Template("t", "Hi {{.Name}}{{if .Extra}} ({{.Extra}}){{end}}.").render({"Name": "Ada", "Extra": ""})
'Hi Ada.'
>>> Template("t", "{{- /* trimmed */ -}}\\n  {{printf \\"%d tokens\\" .N}}").render({"N": 5})
'5 tokens'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lcm_lab.errors import SpecError


class TemplateError(SpecError):
    """A template that cannot be parsed or executed; the message names template and line."""


# What a rendering may add to its values. The lab's own templates add about 2 KB to a source of
# about 80 KB (20,000 tokens, the plugin's leaf chunk); a value used once, however long, always fits.
MAX_ADDED_CHARS = 16_000_000
# Actions, texts and {{range}} rounds one rendering may execute: a prompt template runs each of its
# few hundred about once; nested ranges over big numbers would otherwise spin for hours printing nothing.
MAX_STEPS = 1_000_000


class _Sink:
    """The pieces of one rendering and their running length, refused past ``limit`` before a
    piece is kept (pieces are the values themselves, so keeping them copies nothing)."""

    __slots__ = ("name", "limit", "values", "pieces", "size", "steps")

    def __init__(self, name: str, values: int) -> None:
        self.name = name
        self.values = values
        self.limit = values + MAX_ADDED_CHARS
        self.pieces: list[str] = []
        self.size = 0
        self.steps = 0

    def step(self, where: str) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise TemplateError(f"{where}: rendering takes more than {MAX_STEPS:,} steps (a {{{{range}}}} over a "
                                f"huge number?); a prompt template runs each of its actions about once")

    def room(self, adding: int, where: str) -> None:
        """Refuse if ``adding`` more characters would pass the limit."""
        if self.size + adding > self.limit:
            raise TemplateError(
                f"{where}: the rendered prompt would pass {self.limit:,} characters (at least {self.size + adding:,}): "
                f"a template may add at most {MAX_ADDED_CHARS:,} characters (about 4 million tokens, more than any "
                f"model reads) to the {self.values:,} characters of its values; does it repeat a long value such as "
                f"{{{{.SourceText}}}}?"
            )

    def add(self, text: str, where: str) -> None:
        self.room(len(text), where)
        self.pieces.append(text)
        self.size += len(text)


# -- lexing ----------------------------------------------------------------------------------

_ACTION = re.compile(r"\{\{(-\s)?(/\*.*?\*/|.*?)(\s-)?\}\}", re.DOTALL)
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<raw>`[^`]*`)
  | (?P<number>-?\d+(?:\.\d+)?)
  | (?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+)
  | (?P<dot>\.)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<pipe>\|)
  | (?P<lparen>\()
  | (?P<rparen>\))
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class _Tok:
    kind: str
    value: str


def _tokenize(source: str, where: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    pos = 0
    while pos < len(source):
        match = _TOKEN.match(source, pos)
        if match is None:
            raise TemplateError(f"{where}: unexpected {source[pos:pos + 12]!r} in action")
        kind = match.lastgroup or ""
        if kind != "ws":
            tokens.append(_Tok(kind, match.group()))
        pos = match.end()
    return tokens


# -- the tree --------------------------------------------------------------------------------


@dataclass
class _Text:
    text: str


@dataclass
class _Output:
    pipeline: list[_Tok]
    line: int


@dataclass
class _Branch:
    kind: str  # "if" | "with" | "range"
    pipeline: list[_Tok]
    line: int
    body: list[Any] = field(default_factory=list)
    otherwise: list[Any] = field(default_factory=list)


_BUILTINS = frozenset({"not", "and", "or", "eq", "ne", "lt", "le", "gt", "ge", "len", "index", "print", "printf", "println"})


class Template:
    """A parsed Go template. ``name`` is used in error messages (e.g. the file path)."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text
        self._tree = self._parse(text)

    # -- parsing -----------------------------------------------------------------------------
    def _parse(self, text: str) -> list[Any]:
        root: list[Any] = []
        stack: list[tuple[_Branch, list[Any]]] = []  # open branches and the list being filled
        current = root
        pos = 0
        trim_next = False
        for match in _ACTION.finditer(text):
            chunk = text[pos : match.start()]
            if trim_next:
                chunk = chunk.lstrip()
            if match.group(1):
                chunk = chunk.rstrip()
            if chunk:
                current.append(_Text(chunk))
            trim_next = bool(match.group(3))
            pos = match.end()
            line = text.count("\n", 0, match.start()) + 1
            where = f"{self.name}:{line}"
            body = match.group(2).strip()
            if body.startswith("/*"):
                if not body.endswith("*/"):
                    raise TemplateError(f"{where}: unclosed comment")
                continue
            if not body:
                raise TemplateError(f"{where}: empty action {{{{}}}}")
            tokens = _tokenize(body, where)
            head = tokens[0]
            if head.kind == "ident" and head.value in ("if", "with", "range"):
                if len(tokens) < 2:
                    raise TemplateError(f"{where}: missing value for {head.value}")
                branch = _Branch(head.value, tokens[1:], line)
                current.append(branch)
                stack.append((branch, current))
                current = branch.body
            elif head.kind == "ident" and head.value == "else":
                if not stack:
                    raise TemplateError(f"{where}: unexpected {{{{else}}}}")
                branch, _parent = stack[-1]
                if current is branch.otherwise:
                    raise TemplateError(f"{where}: {{{{else}}}} after {{{{else}}}}")
                if len(tokens) > 1:
                    # ``else if X`` / ``else with X``: a nested branch closed by the same ``end``.
                    kind = tokens[1].value
                    if tokens[1].kind != "ident" or kind not in ("if", "with") or len(tokens) < 3:
                        raise TemplateError(f"{where}: unsupported else clause {body!r}")
                    nested = _Branch(kind, tokens[2:], line)
                    branch.otherwise.append(nested)
                    stack[-1] = (nested, _parent)  # later else/end apply to the nested branch
                    current = nested.body
                else:
                    current = branch.otherwise
            elif head.kind == "ident" and head.value == "end":
                if not stack:
                    raise TemplateError(f"{where}: unexpected {{{{end}}}}")
                _branch, parent = stack.pop()
                current = parent
            elif head.kind == "ident" and head.value in ("define", "template", "block", "break", "continue"):
                raise TemplateError(f"{where}: {{{{{head.value}}}}} is not supported in prompt templates")
            else:
                _check_pipeline(tokens, where)
                current.append(_Output(tokens, line))
        if stack:
            branch, _ = stack[-1]
            raise TemplateError(f"{self.name}:{branch.line}: unclosed {{{{{branch.kind}}}}} (missing {{{{end}}}})")
        tail = text[pos:]
        if trim_next:
            tail = tail.lstrip()
        if "{{" in tail:
            line = text.count("\n", 0, pos + tail.index("{{")) + 1
            raise TemplateError(f"{self.name}:{line}: unclosed action")
        if tail:
            current.append(_Text(tail))
        return root

    # -- execution ---------------------------------------------------------------------------
    def render(self, data: Any) -> str:
        """Execute with ``data`` as dot (a mapping, dataclass or object with attributes).

        Raises :class:`TemplateError` before the text passes its bound (the module docstring):

        >>> Template("t.tmpl", "{{.S}}" * 20).render({"S": "x" * 1_000_000})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lcm_lab.prompts.gotemplate.TemplateError: t.tmpl:1: the rendered prompt would pass 17,000,000 characters (at least 18,000,000): ...
        """
        values = sum(len(v) for v in data.values() if isinstance(v, str)) if isinstance(data, Mapping) else 0
        sink = _Sink(self.name, values)
        self._exec(self._tree, data, sink)
        return "".join(sink.pieces)

    @property
    def fields(self) -> frozenset[str]:
        """Top-level field names referenced anywhere (``{{.TargetTokens}}`` → ``TargetTokens``)."""
        return frozenset(m.group(1) for m in re.finditer(r"(?<![A-Za-z0-9_)])\.([A-Za-z_][A-Za-z0-9_]*)", _actions_only(self.text)))

    def _exec(self, nodes: list[Any], dot: Any, sink: _Sink) -> None:
        for node in nodes:
            sink.step(self.name)
            if isinstance(node, _Text):
                sink.add(node.text, self.name)
            elif isinstance(node, _Output):
                sink.add(_format(self._eval(node.pipeline, dot, node.line, sink)), f"{self.name}:{node.line}")
            else:
                self._exec_branch(node, dot, sink)

    def _exec_branch(self, node: _Branch, dot: Any, sink: _Sink) -> None:
        value = self._eval(node.pipeline, dot, node.line, sink)
        if node.kind == "range":
            items = _iterate(value, f"{self.name}:{node.line}")
            if items:
                for item in items:
                    sink.step(f"{self.name}:{node.line}")
                    self._exec(node.body, item, sink)
            else:
                self._exec(node.otherwise, dot, sink)
            return
        if _truthy(value):
            self._exec(node.body, value if node.kind == "with" else dot, sink)
        else:
            self._exec(node.otherwise, dot, sink)

    def _eval(self, tokens: list[_Tok], dot: Any, line: int, sink: _Sink) -> Any:
        where = f"{self.name}:{line}"
        return self._eval_tokens(tokens, dot, where, sink)

    def _command(self, tokens: list[_Tok], dot: Any, where: str, piped: Any, sink: _Sink) -> Any:
        if not tokens:
            raise TemplateError(f"{where}: empty command in pipeline")
        head = tokens[0]
        rest = tokens[1:]
        # Parse the argument list (operands, with parentheses as sub-pipelines).
        operands: list[Any] = []
        i = 0
        while i < len(rest):
            tok = rest[i]
            if tok.kind == "lparen":
                depth, j = 1, i + 1
                while j < len(rest) and depth:
                    depth += {"lparen": 1, "rparen": -1}.get(rest[j].kind, 0)
                    j += 1
                if depth:
                    raise TemplateError(f"{where}: unclosed parenthesis")
                operands.append(self._eval_tokens(rest[i + 1 : j - 1], dot, where, sink))
                i = j
            else:
                operands.append(self._operand(tok, dot, where, sink))
                i += 1
        if piped is not _NOTHING:
            operands.append(piped)
        if head.kind == "ident" and head.value in _BUILTINS:
            return _call(head.value, operands, where, sink)
        if head.kind == "lparen":
            raise TemplateError(f"{where}: a parenthesised pipeline cannot start a command")
        if head.kind == "ident" and head.value not in ("true", "false", "nil"):
            raise TemplateError(f'{where}: function "{head.value}" not defined')
        if operands:
            raise TemplateError(f"{where}: {head.value!r} is not a function and takes no arguments")
        return self._operand(head, dot, where, sink)

    def _eval_tokens(self, tokens: list[_Tok], dot: Any, where: str, sink: _Sink) -> Any:
        value: Any = _NOTHING
        for command in _split(tokens, "pipe"):
            value = self._command(command, dot, where, value, sink)
        return value

    def _operand(self, tok: _Tok, dot: Any, where: str, sink: _Sink) -> Any:
        if tok.kind == "dot":
            return dot
        if tok.kind == "field":
            value = dot
            for name in tok.value.split(".")[1:]:
                value = _field(value, name, where)
            return value
        if tok.kind == "string":
            return _unquote(tok.value, where)
        if tok.kind == "raw":
            return tok.value[1:-1]
        if tok.kind == "number":
            if len(tok.value) > 100:  # int() refuses past 4,300 digits with a ValueError
                raise TemplateError(f"{where}: a number literal of {len(tok.value):,} digits")
            return float(tok.value) if "." in tok.value else int(tok.value)
        if tok.kind == "ident":
            if tok.value in ("true", "false"):
                return tok.value == "true"
            if tok.value == "nil":
                return None
            if tok.value in _BUILTINS:
                return _call(tok.value, [], where, sink)
            raise TemplateError(f'{where}: function "{tok.value}" not defined')
        raise TemplateError(f"{where}: unexpected {tok.value!r}")


_NOTHING = object()


def _actions_only(text: str) -> str:
    return " ".join(m.group(2) for m in _ACTION.finditer(text) if not m.group(2).strip().startswith("/*"))


def _check_pipeline(tokens: list[_Tok], where: str) -> None:
    for command in _split(tokens, "pipe"):
        if not command:
            raise TemplateError(f"{where}: empty command in pipeline")


def _split(tokens: list[_Tok], kind: str) -> list[list[_Tok]]:
    parts: list[list[_Tok]] = [[]]
    depth = 0
    for tok in tokens:
        if tok.kind == "lparen":
            depth += 1
        elif tok.kind == "rparen":
            depth -= 1
        if tok.kind == kind and depth == 0:
            parts.append([])
        else:
            parts[-1].append(tok)
    return parts


def _field(value: Any, name: str, where: str) -> Any:
    if isinstance(value, Mapping):
        if name in value:
            return value[name]
        raise TemplateError(f"{where}: can't evaluate field {name} (known: {', '.join(sorted(map(str, value)))})")
    if value is None:
        raise TemplateError(f"{where}: nil pointer evaluating .{name}")
    if hasattr(value, name):
        return getattr(value, name)
    raise TemplateError(f"{where}: can't evaluate field {name} in type {type(value).__name__}")


def _truthy(value: Any) -> bool:
    if value is None or value is False:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value != 0
    if isinstance(value, (str, bytes, Sequence, Mapping, set, frozenset)):
        return len(value) > 0
    return True


def _iterate(value: Any, where: str) -> Sequence[Any]:
    if value is None:
        return []
    if isinstance(value, Mapping):
        return [value[k] for k in sorted(value)]
    if isinstance(value, int) and not isinstance(value, bool):
        return range(value)  # not a list: {{range 100000000000}} must not allocate its numbers
    if isinstance(value, Sequence) and not isinstance(value, str):
        return value
    raise TemplateError(f"{where}: range can't iterate over {type(value).__name__}")


def _format(value: Any) -> str:
    if value is None:
        return "<no value>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(_format(v) for v in value) + "]"
    return str(value)


def _unquote(literal: str, where: str) -> str:
    body = literal[1:-1]
    try:
        return body.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError as exc:
        raise TemplateError(f"{where}: bad string literal {literal}") from exc


def _compare(name: str, a: Any, b: Any, where: str) -> bool:
    if name == "eq":
        return bool(a == b)
    if name == "ne":
        return bool(a != b)
    try:
        return bool({"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[name])
    except TypeError as exc:
        raise TemplateError(f"{where}: incompatible types for comparison in {name}") from exc


_GO_VERB = re.compile(r"%([-+# 0]*\d*(?:\.\d+)?)([vdsqfgxXt%])")


def _formatted(args: list[Any], where: str, sink: _Sink, extra: int = 0) -> list[str]:
    """``args`` as text, refused as soon as they and ``extra`` would pass the sink's limit."""
    texts: list[str] = []
    total = extra
    for arg in args:
        texts.append(_format(arg))
        total += len(texts[-1]) + 1
        sink.room(total, where)
    return texts


def _sprintf(fmt: str, args: list[Any], where: str, sink: _Sink) -> str:
    # Widths and precisions pad: "%999999999s" alone would build a gigabyte. Count them first.
    padding = sum(int(n) for flags, _verb in _GO_VERB.findall(fmt) for n in re.findall(r"\d+", flags.lstrip("-+# 0")))
    _formatted(args, where, sink, extra=len(fmt) + padding)
    queue = list(args)

    def sub(match: re.Match[str]) -> str:
        flags, verb = match.groups()
        if verb == "%":
            return "%"
        if not queue:
            return f"%!{verb}(MISSING)"
        value = queue.pop(0)
        if verb in ("v", "s", "t"):
            return ("%" + flags + "s") % _format(value)
        if verb == "q":
            return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
        try:
            return str(("%" + flags + {"d": "d", "f": "f", "g": "g", "x": "x", "X": "X"}[verb]) % value)
        except (TypeError, ValueError) as exc:
            raise TemplateError(f"{where}: printf %{verb} cannot format {value!r}") from exc

    return _GO_VERB.sub(sub, fmt)


def _call(name: str, args: list[Any], where: str, sink: _Sink) -> Any:
    if name == "not":
        if len(args) != 1:
            raise TemplateError(f"{where}: not takes one argument")
        return not _truthy(args[0])
    if name in ("and", "or"):
        if not args:
            raise TemplateError(f"{where}: {name} needs arguments")
        for arg in args:
            if _truthy(arg) != (name == "and"):
                return arg
        return args[-1]
    if name in ("eq", "ne", "lt", "le", "gt", "ge"):
        if len(args) < 2:
            raise TemplateError(f"{where}: {name} takes two arguments")
        if name == "eq":
            return any(args[0] == other for other in args[1:])
        return _compare(name, args[0], args[1], where)
    if name == "len":
        if len(args) != 1:
            raise TemplateError(f"{where}: len takes one argument")
        try:
            return len(args[0])
        except TypeError as exc:
            raise TemplateError(f"{where}: len of {type(args[0]).__name__}") from exc
    if name == "index":
        if not args:
            raise TemplateError(f"{where}: index needs arguments")
        value = args[0]
        for key in args[1:]:
            try:
                value = value[key]
            except (KeyError, IndexError, TypeError) as exc:
                raise TemplateError(f"{where}: index {key!r} out of range") from exc
        return value
    if name in ("print", "println"):
        texts = _formatted(args, where, sink)
        return "".join(texts) if name == "print" else " ".join(texts) + "\n"
    if name == "printf":
        if not args or not isinstance(args[0], str):
            raise TemplateError(f"{where}: printf needs a format string")
        return _sprintf(args[0], args[1:], where, sink)
    raise TemplateError(f'{where}: function "{name}" not defined')  # pragma: no cover
