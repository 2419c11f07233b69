"""A small, strict implementation of Go's ``text/template`` language, enough for prompt files.

lcm-tui stores its depth-aware prompts as Go templates (``{{.TargetTokens}}``,
``{{if .PreviousContext -}} … {{else -}} … {{end -}}``). To replay a user's exported template
directory we execute the same language here. Supported: text, ``{{.Field}}``, ``{{.}}``,
``{{if}}/{{else if}}/{{else}}/{{end}}``, ``{{with}}``, ``{{range}}`` (with ``{{else}}``),
comments ``{{/* … */}}``, trim markers ``{{-``/``-}}``, pipelines with ``|``, parenthesised
pipelines, string/number/bool literals and the builtins ``not and or eq ne lt le gt ge len
index print printf println``. Anything else is a :class:`TemplateError` naming the template
and line — never silently rendered as text.

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
        """Execute with ``data`` as dot (a mapping, dataclass or object with attributes)."""
        out: list[str] = []
        self._exec(self._tree, data, out)
        return "".join(out)

    @property
    def fields(self) -> frozenset[str]:
        """Top-level field names referenced anywhere (``{{.TargetTokens}}`` → ``TargetTokens``)."""
        return frozenset(m.group(1) for m in re.finditer(r"(?<![A-Za-z0-9_)])\.([A-Za-z_][A-Za-z0-9_]*)", _actions_only(self.text)))

    def _exec(self, nodes: list[Any], dot: Any, out: list[str]) -> None:
        for node in nodes:
            if isinstance(node, _Text):
                out.append(node.text)
            elif isinstance(node, _Output):
                out.append(_format(self._eval(node.pipeline, dot, node.line)))
            else:
                self._exec_branch(node, dot, out)

    def _exec_branch(self, node: _Branch, dot: Any, out: list[str]) -> None:
        value = self._eval(node.pipeline, dot, node.line)
        if node.kind == "range":
            items = _iterate(value, f"{self.name}:{node.line}")
            if items:
                for item in items:
                    self._exec(node.body, item, out)
            else:
                self._exec(node.otherwise, dot, out)
            return
        if _truthy(value):
            self._exec(node.body, value if node.kind == "with" else dot, out)
        else:
            self._exec(node.otherwise, dot, out)

    def _eval(self, tokens: list[_Tok], dot: Any, line: int) -> Any:
        where = f"{self.name}:{line}"
        commands = _split(tokens, "pipe")
        value: Any = _NOTHING
        for command in commands:
            value = self._command(command, dot, where, value)
        return value

    def _command(self, tokens: list[_Tok], dot: Any, where: str, piped: Any) -> Any:
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
                operands.append(self._eval_tokens(rest[i + 1 : j - 1], dot, where))
                i = j
            else:
                operands.append(self._operand(tok, dot, where))
                i += 1
        if piped is not _NOTHING:
            operands.append(piped)
        if head.kind == "ident" and head.value in _BUILTINS:
            return _call(head.value, operands, where)
        if head.kind == "lparen":
            raise TemplateError(f"{where}: a parenthesised pipeline cannot start a command")
        if head.kind == "ident" and head.value not in ("true", "false", "nil"):
            raise TemplateError(f'{where}: function "{head.value}" not defined')
        if operands:
            raise TemplateError(f"{where}: {head.value!r} is not a function and takes no arguments")
        return self._operand(head, dot, where)

    def _eval_tokens(self, tokens: list[_Tok], dot: Any, where: str) -> Any:
        value: Any = _NOTHING
        for command in _split(tokens, "pipe"):
            value = self._command(command, dot, where, value)
        return value

    def _operand(self, tok: _Tok, dot: Any, where: str) -> Any:
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
            return float(tok.value) if "." in tok.value else int(tok.value)
        if tok.kind == "ident":
            if tok.value in ("true", "false"):
                return tok.value == "true"
            if tok.value == "nil":
                return None
            if tok.value in _BUILTINS:
                return _call(tok.value, [], where)
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


def _iterate(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, Mapping):
        return [value[k] for k in sorted(value)]
    if isinstance(value, int) and not isinstance(value, bool):
        return list(range(value))
    if isinstance(value, Sequence) and not isinstance(value, str):
        return list(value)
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


def _sprintf(fmt: str, args: list[Any], where: str) -> str:
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


def _call(name: str, args: list[Any], where: str) -> Any:
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
    if name == "print":
        return "".join(_format(a) for a in args)
    if name == "println":
        return " ".join(_format(a) for a in args) + "\n"
    if name == "printf":
        if not args or not isinstance(args[0], str):
            raise TemplateError(f"{where}: printf needs a format string")
        return _sprintf(args[0], args[1:], where)
    raise TemplateError(f'{where}: function "{name}" not defined')  # pragma: no cover
