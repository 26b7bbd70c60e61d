"""The README stays a user guide and the documents hold together: the README is at most 15 KB,
every relative link of README.md, CONTRIBUTING.md and docs/*.md reaches a file (and a heading,
when it names one), the README's two set-up commands are there and its test command is the one
CI runs (.ci/run), the config example of docs/CONFIGURATION.md shows every config key, and every
document the code's comments and docstrings cite is in the repository (with the heading cited),
and they keep no measurement history (callgrind counts, a stop's machine: docs/PERFORMANCE.md)."""

from __future__ import annotations

import ast
import io
import re
import shlex
import tokenize
from pathlib import Path

import pytest

from tui.core.config import AlertConfig, Config

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCUMENTS = [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_BYTES = 15_000
DEMO_COMMAND = "pip install . && ocwatch demo"

_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]\n]*\]\(([^()\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every heading's anchor (a repeated heading's later ones get -1, -2, ...)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for heading in _HEADING.findall(_FENCE.sub("", markdown)):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def relative_links(markdown: str) -> list[str]:
    """The link and image targets of a Markdown text that are not URLs (code left out)."""
    prose = _CODE_SPAN.sub("", _FENCE.sub("", markdown))
    return [t for t in _LINK.findall(prose) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def broken_links(path: Path, markdown: str) -> list[str]:
    """The relative links of `markdown` (the text of `path`) that reach no file, or no heading."""
    broken = []
    for target in relative_links(markdown):
        name, _, anchor = target.partition("#")
        file = (path.parent / name).resolve() if name else path
        if not file.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and file.suffix == ".md":
            text = markdown if file == path else file.read_text(encoding="utf-8")
            if anchor not in anchors(text):
                broken.append(f"{target} (no such heading)")
    return broken


def fenced_lines(markdown: str) -> list[str]:
    """The lines inside the fenced code blocks."""
    return [line.strip() for block in _FENCE.findall(markdown) for line in block.splitlines()[1:-1]]


def readme_test_command(readme: str) -> str:
    (command,) = [line for line in fenced_lines(readme) if "pytest" in line]
    return command


def ci_test_command(script: str) -> str:
    """The line of .ci/run that runs pytest (comments left out)."""
    lines = [ln.strip() for ln in script.splitlines() if not ln.lstrip().startswith("#")]
    (command,) = [ln for ln in lines if "pytest" in ln]
    return command


def same_command(readme_line: str, ci_line: str) -> bool:
    """The same command, but for pip's `--quiet`, which CI adds to keep its log short."""
    return shlex.split(readme_line) == [w for w in shlex.split(ci_line) if w != "--quiet"]


def test_the_readme_is_a_user_guide_of_at_most_15_kb() -> None:
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes: move reference text to docs/"


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file(path: Path) -> None:
    markdown = path.read_text(encoding="utf-8")
    assert relative_links(markdown) or path.name != "README.md"  # the README does link
    assert broken_links(path, markdown) == []


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    """The link check itself: a missing file, a missing heading, and what it must not count."""
    (tmp_path / "OTHER.md").write_text("# Other\n\n## Watch your own `OpenCode`\n")
    doc = tmp_path / "DOC.md"
    doc.write_text("# Doc\n")
    text = (
        "# Doc\n\n[ok](OTHER.md#watch-your-own-opencode) [up](#doc) "
        "![img](missing.svg) [gone](OTHER.md#nowhere) [here](#nothing) [web](https://x.y/z)\n"
        "`[code](nofile.md)`\n\n```\n[fenced](nofile.md)\n```\n"
    )
    assert broken_links(doc, text) == [
        "missing.svg (no such file)",
        "OTHER.md#nowhere (no such heading)",
        "#nothing (no such heading)",
    ]


def test_the_readme_has_both_set_up_commands_and_ci_runs_its_test_command() -> None:
    readme = README.read_text(encoding="utf-8")
    assert DEMO_COMMAND in fenced_lines(readme)
    readme_command = readme_test_command(readme)
    assert readme_command.startswith("pip install -e '.[test]' && ")
    assert readme_command.endswith("&& python -m pytest")
    ci_command = ci_test_command((ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    assert same_command(readme_command, ci_command), (readme_command, ci_command)


def test_a_test_command_that_drifted_from_ci_is_told() -> None:
    command = "pip install -e '.[test]' && npm install opencode-ai@1.18.33 && python -m pytest"
    readme = f"Run the tests:\n\n```sh\n{command}\n```\n"
    ci = "# runs the tests\n" + command.replace("install -e", "install --quiet -e") + "\n"
    assert same_command(readme_test_command(readme), ci_test_command(ci))
    for drifted in (ci.replace("1.18.33", "1.18.34"), ci.replace("python -m pytest", "pytest")):
        assert not same_command(readme_test_command(readme), ci_test_command(drifted))


def test_the_config_example_shows_every_config_key() -> None:
    doc = (ROOT / "docs" / "CONFIGURATION.md").read_text(encoding="utf-8")
    block = re.search(r"```toml\n(servers = .*?)```", doc, re.S)
    assert block is not None
    shown = set(re.findall(r"^([a-z_0-9]+) =", block.group(1), re.M))
    shown |= {"alerts"} if "\n[alerts]\n" in block.group(1) else set()
    assert set(Config.model_fields) - shown == set()
    assert set(AlertConfig.model_fields) - shown == set()


# -- documents cited by the code's comments and docstrings --------------------------------------

_CITED = re.compile(r"(?<![\w./-])([\w./-]*\w\.md)(?:#([\w-]+))?")
SOURCES = sorted((ROOT / "tui").rglob("*.py"))


def commentary(source: str) -> list[str]:
    """The comments and docstrings of a Python source (its other strings left out: text a demo
    or a command shows is not a citation)."""
    found = [
        tok.string
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found.append(doc)
    return found


def broken_citations(texts: list[str]) -> list[str]:
    """The Markdown documents `texts` cite (`docs/STATES.md`, `README.md#a-heading`, a path
    from the repository's root) that are not in the repository, or have no such heading."""
    broken = []
    for text in texts:
        for name, anchor in _CITED.findall(text):
            file = (ROOT / name).resolve()
            if ROOT not in file.parents or not file.is_file():
                broken.append(f"{name} (no such file in the repository)")
            elif anchor and anchor not in anchors(file.read_text(encoding="utf-8")):
                broken.append(f"{name}#{anchor} (no such heading)")
    return broken


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_document_the_code_cites_is_there(path: Path) -> None:
    assert broken_citations(commentary(path.read_text(encoding="utf-8"))) == []


def test_a_stale_citation_is_found() -> None:
    """The citation check itself: a document that moved, a heading that is not there, a path
    outside the repository; a demo's text and a string that is no docstring are not citations."""
    source = (
        '"""Reads the decision order (DESIGN.md, docs/STATES.md#how-it-decides)."""\n'
        "# drift: docs/STATES.md#drifting, see ../shared/API.md\n"
        'SHOWN = "CHANGELOG.md has a new section"\n'
        "def f():\n"
        '    """The exit codes (README.md#ocwatch-wait-exit-codes, docs/DESIGN.md)."""\n'
    )
    assert broken_citations(commentary(source)) == [
        "docs/STATES.md#drifting (no such heading)",  # the comments first
        "../shared/API.md (no such file in the repository)",
        "DESIGN.md (no such file in the repository)",
    ]


#: What a comment about a measurement says when it keeps the measurement's history (the figures
#: belong in docs/PERFORMANCE.md, with their commit and machine; a comment says why)
_HISTORY = re.compile(r"callgrind|\b\d+(\.\d+)? ?[MGk] instructions|\bstop \d+'s\b", re.I)


def measurement_history(texts: list[str]) -> list[str]:
    return [m.group(0) for text in texts for m in _HISTORY.finditer(text)]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_comments_keep_no_measurement_history(path: Path) -> None:
    assert measurement_history(commentary(path.read_text(encoding="utf-8"))) == []


def test_measurement_history_is_found() -> None:
    source = (
        '"""Fast: 52 ms on stop 31\'s machine, 383 M instructions by callgrind."""\n'
        "# the old way: 415 M instructions\n"
        'NAME = "session.instructions.updated"  # a V2 event: not history\n'
    )
    assert measurement_history(commentary(source)) == [
        "415 M instructions",
        "stop 31's",
        "383 M instructions",
        "callgrind",
    ]
