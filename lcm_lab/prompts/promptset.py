"""Prompt sets: the templates a model summarizer renders, loaded from the package or a directory.

A prompt set maps the six template names of :data:`TEMPLATE_NAMES` to Go-syntax templates.
The lab ships its own wording in ``lcm_lab/prompts/default/``. A user directory in the layout
``lcm-tui prompts --export`` writes (``leaf.tmpl``, ``condensed-d1.tmpl``, ``condensed-d2.tmpl``,
``condensed-d3.tmpl``, optionally ``system.tmpl`` and ``leaf-aggressive.tmpl``) overrides the
templates it contains; the rest come from the lab defaults, and :meth:`PromptSet.sources` says
which file each template came from.

>>> prompts = default_prompt_set()
>>> prompts.template_name_for("condensed", depth=5, aggressive=False)
'condensed-d3'
>>> len(prompts["leaf"].hash)
64
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType

from lcm_lab.errors import MissingFileError, UnknownNameError
from lcm_lab.io.atomic import temporary_beside
from lcm_lab.io.file_kind import special_file_reason
from lcm_lab.prompts.gotemplate import Template, TemplateError

TEMPLATE_NAMES: tuple[str, ...] = (
    "system",
    "leaf",
    "leaf-aggressive",
    "condensed-d1",
    "condensed-d2",
    "condensed-d3",
)
LCM_TUI_TEMPLATE_NAMES: tuple[str, ...] = ("leaf", "condensed-d1", "condensed-d2", "condensed-d3")
DEFAULT_SOURCE = "lcm_lab default"
# The largest template file read (the packaged ones are about 2 KB): a bigger file is refused
# unread, as the line cap refuses a huge JSON document, so it can never fill memory.
MAX_TEMPLATE_BYTES = 1 << 20


def template_hash(text: str) -> str:
    """sha256 (hex) of a template's text: the id recorded with every summary it produced."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class PromptTemplate:
    """One template: its name, text, where it came from and its content hash."""

    name: str
    text: str
    source: str

    @property
    def hash(self) -> str:
        return template_hash(self.text)

    @property
    def compiled(self) -> Template:
        return _compile(self.source, self.text)


@lru_cache(maxsize=256)
def _compile(source: str, text: str) -> Template:
    return Template(source, text)


def normalize_template_name(name: str) -> str:
    """``leaf.tmpl`` → ``leaf``; ``d2`` → ``condensed-d2``; raises for unknown names."""
    base = name[:-5] if name.endswith(".tmpl") else name
    if base in ("d1", "d2", "d3"):
        base = f"condensed-{base}"
    if base not in TEMPLATE_NAMES:
        raise UnknownNameError(f"unknown prompt template {name!r}; known: {', '.join(TEMPLATE_NAMES)}")
    return base


class PromptSet(Mapping[str, PromptTemplate]):
    """An immutable mapping ``template name → PromptTemplate`` plus the rules that pick one."""

    def __init__(self, name: str, templates: Mapping[str, PromptTemplate], directory: Path | None = None) -> None:
        missing = [n for n in TEMPLATE_NAMES if n not in templates]
        if missing:
            raise ValueError(f"prompt set {name!r} lacks templates: {', '.join(missing)}")
        self.name = name
        self.directory = directory
        self._templates = MappingProxyType(dict(templates))

    def __getitem__(self, name: str) -> PromptTemplate:
        return self._templates[normalize_template_name(name)]

    def __iter__(self) -> Iterator[str]:
        return iter(TEMPLATE_NAMES)

    def __len__(self) -> int:
        return len(TEMPLATE_NAMES)

    def __repr__(self) -> str:
        return f"PromptSet({self.name!r}, hash={self.hash[:12]})"

    @property
    def hash(self) -> str:
        """One hash over all six templates (names and texts)."""
        digest = hashlib.sha256()
        for name in TEMPLATE_NAMES:
            digest.update(name.encode() + b"\0" + self._templates[name].text.encode("utf-8") + b"\0")
        return digest.hexdigest()

    def sources(self) -> dict[str, str]:
        """Where each template came from (a file path or ``lcm_lab default``)."""
        return {name: self._templates[name].source for name in TEMPLATE_NAMES}

    @staticmethod
    def template_name_for(kind: str, depth: int, aggressive: bool) -> str:
        """The template a call uses: leaf (aggressive variant) or condensed by output depth.

        Condensed calls ignore ``aggressive`` (the plugin has no aggressive condensed prompt).
        """
        if kind == "leaf":
            return "leaf-aggressive" if aggressive else "leaf"
        if kind != "condensed":
            raise ValueError(f"unknown summary kind {kind!r}")
        if depth <= 1:
            return "condensed-d1"
        return "condensed-d2" if depth == 2 else "condensed-d3"


def default_prompt_set() -> PromptSet:
    """The lab's own templates (package data ``lcm_lab/prompts/default/*.tmpl``)."""
    return _default_prompt_set()


@lru_cache(maxsize=1)
def _default_prompt_set() -> PromptSet:
    root = resources.files("lcm_lab.prompts").joinpath("default")
    templates: dict[str, PromptTemplate] = {}
    for name in TEMPLATE_NAMES:
        text = root.joinpath(f"{name}.tmpl").read_text(encoding="utf-8")
        template = PromptTemplate(name, text, DEFAULT_SOURCE)
        template.compiled  # noqa: B018 -- a broken packaged template must fail loudly at load
        templates[name] = template
    return PromptSet("lcm_lab-default", templates)


def template_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The ``*.tmpl`` files of a prompt directory, in the order :func:`load_prompt_set` reads them
    (none when it is not a directory)."""
    return sorted(Path(directory).expanduser().glob("*.tmpl"))


def load_prompt_set(directory: str | os.PathLike[str]) -> PromptSet:
    """Load a template directory (lcm-tui export layout) over the lab defaults.

    Every ``*.tmpl`` file must be one of :data:`TEMPLATE_NAMES` and must parse; errors name the
    file and line. When the directory has ``leaf.tmpl`` but no ``leaf-aggressive.tmpl`` (as an
    lcm-tui export), aggressive leaf calls use the directory's ``leaf.tmpl`` (it can branch on
    ``{{if .Aggressive}}``) rather than mixing in the lab's wording.
    """
    path = Path(directory).expanduser()
    if not path.is_dir():
        raise MissingFileError(f"prompt directory not found: {path}")
    found: dict[str, PromptTemplate] = {}
    for file in template_files(path):
        try:
            name = normalize_template_name(file.name)
        except KeyError as exc:
            raise TemplateError(f"{file}: not a known template name; expected one of {', '.join(f'{n}.tmpl' for n in TEMPLATE_NAMES)}") from exc
        _refuse_escaping_link(file, path)
        if (special := special_file_reason(file)) is not None:  # a FIFO would block the read for ever
            raise TemplateError(f"{file}: {special}")
        template = PromptTemplate(name, _read_template(file), str(file))
        template.compiled  # noqa: B018 -- parse now so errors point at the file immediately
        found[name] = template
    if not found:
        raise MissingFileError(f"no *.tmpl prompt templates in {path} (expected {', '.join(LCM_TUI_TEMPLATE_NAMES)})")
    defaults = default_prompt_set()
    templates = {name: found.get(name, defaults[name]) for name in TEMPLATE_NAMES}
    if "leaf" in found and "leaf-aggressive" not in found:
        leaf = found["leaf"]
        templates["leaf-aggressive"] = PromptTemplate("leaf-aggressive", leaf.text, leaf.source)
    return PromptSet(path.name or str(path), templates, directory=path)


def _read_template(file: Path) -> str:
    """The text of a template file, at most :data:`MAX_TEMPLATE_BYTES` read (line ends as text
    mode reads them: ``\\r\\n`` and ``\\r`` become ``\\n``)."""
    try:
        with file.open("rb") as handle:
            data = handle.read(MAX_TEMPLATE_BYTES + 1)
    except OSError as exc:
        raise TemplateError(f"{file}: cannot read ({exc.strerror or exc})") from None
    if len(data) > MAX_TEMPLATE_BYTES:
        raise TemplateError(f"{file}: larger than the {MAX_TEMPLATE_BYTES >> 20} MB template size cap; not read "
                            "(a prompt template is a few kilobytes of text)")  # fmt: skip
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TemplateError(f"{file}: not UTF-8 text ({exc})") from exc
    return text.replace("\r\n", "\n").replace("\r", "\n")


def resolve_prompt_set(prompts: PromptSet | str | os.PathLike[str] | None) -> PromptSet:
    """``None`` → lab defaults; a path → :func:`load_prompt_set`; a PromptSet unchanged."""
    if prompts is None:
        return default_prompt_set()
    if isinstance(prompts, PromptSet):
        return prompts
    return load_prompt_set(prompts)


def _refuse_escaping_link(file: Path, directory: Path) -> None:
    """A template that is a symbolic link must stay inside the prompt directory: a link to a file
    elsewhere (or to nothing) is refused, so a shared directory cannot make the lab read
    ``~/.ssh/id_rsa`` as a prompt and send it to a model."""
    if not file.is_symlink():
        return
    real, root = Path(os.path.realpath(file)), Path(os.path.realpath(directory))
    if not real.exists():
        raise TemplateError(f"{file}: a symbolic link to {os.readlink(file)}, which does not exist")
    if root not in real.parents:
        raise TemplateError(f"{file}: a symbolic link to {real}, outside {directory}; copy the template into the directory")


def export_prompt_set(prompts: PromptSet, directory: str | Path, overwrite: bool = False) -> list[Path]:
    """Write the six templates as ``<name>.tmpl`` into ``directory`` (created if needed).

    An existing name, symbolic links included (dangling or not), is refused unless
    ``overwrite``; then the directory entry itself is replaced by a regular file. Each file is
    written beside its target and renamed over it, so the lab never writes through a link into
    a file elsewhere, and a failed write leaves no half-written template.
    """
    path = Path(directory).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    targets = [path / f"{name}.tmpl" for name in TEMPLATE_NAMES]
    if not overwrite:
        for target in targets:
            if target.is_symlink():
                raise FileExistsError(f"{target} is a symbolic link (pass overwrite=True / --force to replace the link, not its target)")
            if target.exists():
                raise FileExistsError(f"{target} exists (pass overwrite=True / --force to replace it)")
    written: list[Path] = []
    for name, target in zip(TEMPLATE_NAMES, targets, strict=True):
        if target.is_dir() and not target.is_symlink():
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(target))
        fd, temporary = temporary_beside(target)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(prompts[name].text)
            os.chmod(temporary, 0o644)
            os.replace(temporary, target)  # renames over the entry: a link is replaced, not followed
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        written.append(target)
    return written
