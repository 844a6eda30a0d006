r"""LaTeX ``tabular`` environments: rows and cells, with the markup taken off.

Rows end at ``\\``, cells at ``&``; ``\hline``, ``\toprule``, ``\midrule``,
``\bottomrule``, ``\cline`` and ``\cmidrule`` are dropped; ``\multicolumn{n}{..}{x}``
gives ``x`` and ``n - 1`` empty cells; formatting macros such as ``\textbf{x}``
give ``x``; argument-less macros vanish unless ``macros`` (or a ``\newcommand``
in the same text) says what they stand for; ``\rightarrow`` becomes ``→``.

Examples
--------
>>> tabular_rows(r"\begin{tabular}{l|r} \hline Benchmark & \textbf{mi} \\ "
...              r"cfrac & 4.6\invizero s. \\ \end{tabular}", file="log")
[(1, ['Benchmark', 'mi']), (1, ['cfrac', '4.6 s.'])]
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Mapping, NamedTuple

from reprobook.errors import OutputError
from reprobook.formats import text
from reprobook.lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

SYMBOLS = {r"\rightarrow": "→", r"\to": "→", r"\leftarrow": "←", r"\times": "×", r"\pm": "±",
           r"\approx": "≈", r"\le": "≤", r"\ge": "≥", r"\textasciitilde": "~", r"\ldots": "…",
           r"\dots": "…", r"\quad": " ", r"\qquad": " "}
"""Macros replaced by a character."""
_KEEP = {r"\multicolumn": (3, 2), r"\multirow": (3, 2), r"\rotatebox": (2, 1),
         r"\textcolor": (2, 1), r"\colorbox": (2, 1), r"\href": (2, 1), r"\resizebox": (3, 2),
         r"\scalebox": (2, 1)}
_DROP = {r"\color": 1, r"\hspace": 1, r"\vspace": 1, r"\phantom": 1, r"\label": 1,
         r"\cellcolor": 1, r"\rowcolor": 1, r"\rule": 2, r"\cline": 1, r"\cmidrule": 1,
         r"\input": 1}
_RULE = re.compile(r"\s*\\(?:hline|toprule|midrule|bottomrule|addlinespace|cline|cmidrule)"
                   r"\b(?:\([^)]*\))?(?:\[[^\]]*\])?(?:\{[^{}]*\})?")
_BEGIN = re.compile(r"\\begin\s*\{(tabular\*?|tabularx)\}")
_LEAD = re.compile(rf"(?:{_RULE.pattern})*\s*")
_MULTICOLUMN = re.compile(r"\s*\\multicolumn\s*\{\s*([0-9]+)\s*\}")
_MACRO = re.compile(r"\\([A-Za-z@]+\*?|.?)")
_NEWCOMMAND = re.compile(r"\\(?:re)?newcommand\*?\s*\{?(\\[A-Za-z@]+)\}?\s*\{")


def tabular_rows(source: str, *, file: str | Path, first_line: int = 1, index: int = 0,
                 macros: Mapping[str, str] | None = None) -> list[tuple[int, list[str]]]:
    """The rows of the ``index``-th tabular in ``source``, each with its line number.

    Parameters
    ----------
    source : str
        LaTeX text (a whole file, or a part of a log starting at ``first_line``).
    file : path
        Named by errors.
    macros : mapping, optional
        Extra macro expansions, e.g. ``{"\\name": "Verus"}``.

    Returns
    -------
    list of (int, list of str)
        Rule-only rows are left out; a row shorter than the column spec is padded
        with empty cells.
    """
    found = _tabular(source, file=file, first_line=first_line, index=index, macros=macros)
    return found.rows() if isinstance(found, _Cells) else found


class _Cells(NamedTuple):
    """A table's cells in one flat list, row after row (``width`` a row), and each row's line.

    What the one-pass reading gives for a table whose rows all have the same cells: no list a
    row, so no work for the garbage collector over thousands of them.
    """

    lines: list[int]
    flat: list[str]
    width: int

    def rows(self) -> list[tuple[int, list[str]]]:
        return [(line, self.flat[i * self.width:(i + 1) * self.width]) for i, line in enumerate(self.lines)]


def _tabular(source: str, *, file, first_line: int, index: int, macros) -> _Cells | list[tuple[int, list[str]]]:
    """:func:`tabular_rows`, as `_Cells` when read in one pass."""
    if "%" in source:
        source = re.sub(r"(?<!\\)%[^\n]*", "", source)
    found = list(_BEGIN.finditer(source))
    if len(found) <= index:
        raise OutputError(f"no tabular environment number {index + 1} (found {len(found)})",
                          file=file, line=first_line if found else None)
    begin = found[index]
    where = first_line + source.count("\n", 0, begin.start())
    args = 2 if begin.group(1) != "tabular" else 1
    spec, start = "", _skip_optional(source, begin.end())
    for _ in range(args):
        spec, start = _braced(source, _skip_optional(source, start), file, where)
    end = source.find(r"\end{" + begin.group(1) + "}", start)
    if end < 0:
        raise OutputError(r"the tabular is never closed (no \end{" + begin.group(1) + "})",
                          file=file, line=where)
    expansions = {**_definitions(source), **(macros or {})}
    width = _spec_width(spec)
    if not expansions:
        fast = _rows_in_one_pass(source, start, end, width, first_line + source.count("\n", 0, start))
        if fast is not None:
            return fast
    line_of = _line_finder(source, first_line)
    rows = []
    for offset, chunk in _split(source[start:end], r"\\", file, where):
        lead = _LEAD.match(chunk)
        body = chunk[lead.end():]
        if not body.strip():
            continue
        line = line_of(start + offset + lead.end())
        cells = []
        for _, cell in _split(body, "&", file, line):
            span = _MULTICOLUMN.match(cell) if "multicolumn" in cell else None
            cells.append(clean(cell, expansions))
            cells.extend([""] * (int(span.group(1)) - 1 if span else 0))
        if width and len(cells) > width:
            raise OutputError(f"the row has {len(cells)} cells, but the column spec {{{spec}}} "
                              f"has {width}", file=file, line=line)
        rows.append((line, cells + [""] * ((width or len(cells)) - len(cells))))
    return rows


def read_tabular(path: str | Path, *, index: int = 0, header_rows: int = 1,
                 macros: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Read the ``index``-th tabular of a ``.tex`` file into a frame (see :func:`tabular_frame`)."""
    path, lines = text.read_lines(path)
    found = _tabular("\n".join(lines), file=path, first_line=1, index=index, macros=macros)
    if not isinstance(found, _Cells):
        return tabular_frame(found, file=path, header_rows=header_rows)
    if len(found.lines) <= header_rows:
        return tabular_frame(found.rows(), file=path, header_rows=header_rows)  # which raises
    width, cut = found.width, header_rows * found.width
    header = [found.flat[i:i + width] for i in range(0, cut, width)]
    return _frame(header, [found.flat[cut + i::width] for i in range(width)], found.lines[header_rows:], path)


def tabular_frame(rows: list[tuple[int, list[str]]], *, file: str | Path,
                  header_rows: int = 1) -> pd.DataFrame:
    """A frame from :func:`tabular_rows`: the first ``header_rows`` rows name the columns.

    The words of several header rows are joined with spaces; a column whose
    header is empty is named by its position (``column 3``). Adds ``line``.
    """
    if len(rows) <= header_rows:
        raise OutputError(f"the table has {len(rows)} rows, none below its {header_rows}-row "
                          "header", file=file, line=rows[0][0] if rows else None)
    lines, body = zip(*rows[header_rows:])
    width = max(map(len, (cells for _, cells in rows)))
    if set(map(len, body)) != {width}:
        body = [cells + [""] * (width - len(cells)) for cells in body]
    return _frame([cells for _, cells in rows[:header_rows]], list(zip(*body)), lines, file)


def _frame(header: list[list[str]], columns: list, lines, file) -> pd.DataFrame:
    """The frame of :func:`tabular_frame` from its header rows and its body's columns."""
    names = []
    for i in range(len(columns)):
        words = [cells[i] for cells in header if i < len(cells) and cells[i]]
        names.append(" ".join(words) or f"column {i + 1}")
    # by column: one pass of pandas' checks per column, not one per row
    frame = pd.DataFrame({i: pd.array(column, dtype="str") for i, column in enumerate(columns)})
    frame.columns = names
    frame["line"] = np.array(lines, dtype="int64")
    frame.attrs["source"] = str(file)
    return frame


def clean(cell: str, macros: Mapping[str, str] | None = None) -> str:
    r"""A cell's text without markup: ``\textbf{4.6}\,s`` -> ``4.6 s``."""
    if not _SPECIAL.search(cell):  # plain text: only its blanks to tidy
        return " ".join(cell.split())
    return " ".join(_expand(cell, dict(macros or {}), 0).split())


_SPECIAL = re.compile(r"[\\~{}$]")


def _expand(source: str, macros: dict, depth: int) -> str:
    out, i = [], 0
    while i < len(source):
        special = _SPECIAL.search(source, i)
        if special is None:  # plain text to the end: copied whole
            out.append(source[i:])
            break
        if special.start() > i:
            out.append(source[i:special.start()])
        i = special.start()
        char = source[i]
        if char != "\\":
            out.append(" " if char == "~" else "")
            i += 1
            continue
        match = _MACRO.match(source, i)
        name, i = "\\" + match.group(1).rstrip("*"), match.end()
        if not match.group(1)[:1].isalpha():
            out.append(" " if match.group(1) in (",", ";", ":", " ", "", "\\") else match.group(1))
        elif name in SYMBOLS:
            out.append(SYMBOLS[name])
        elif name in macros and depth < 20:
            out.append(_expand(macros[name], macros, depth + 1))
        else:
            count, keep = _KEEP.get(name) or ((_DROP[name], None) if name in _DROP else (0, None))
            args = []
            while True:
                j = _skip_optional(source, i)
                if j < len(source) and source[j] == "{" and (len(args) < count or (
                        count == 0 and name not in _DROP and not args)):
                    arg, i = _braced(source, j, "<cell>", None)
                    args.append(arg)
                else:
                    break
            if name in _KEEP and keep < len(args):
                out.append(_expand(args[keep], macros, depth + 1))
            elif name not in _KEEP and name not in _DROP and args:
                out.append(_expand(args[0], macros, depth + 1))
    return "".join(out)


def _skip_optional(source: str, i: int) -> int:
    while True:
        j = i
        while j < len(source) and source[j] in " \t\n":
            j += 1
        if j < len(source) and source[j] == "[":
            close = source.find("]", j)
            if close < 0:
                return i
            i = close + 1
        else:
            return j if j < len(source) and source[j] == "{" else i


def _braced(source: str, i: int, file, line) -> tuple[str, int]:
    if i >= len(source) or source[i] != "{":
        raise OutputError("expected a {...} argument", file=file, line=line)
    depth, j = 0, i
    while j < len(source):
        if source[j] == "\\":
            j += 2
            continue
        depth += {"{": 1, "}": -1}.get(source[j], 0)
        if depth == 0:
            return source[i + 1:j], j + 1
        j += 1
    raise OutputError("unbalanced braces: a { is never closed", file=file, line=line)


_SPLIT = {r"\\": re.compile(r"\\.|[{}]", re.DOTALL), "&": re.compile(r"\\.|[{}&]", re.DOTALL)}
_OPTIONAL_SPACING = re.compile(r"\s*\[[^\]]*\]")


def _split(source: str, separator: str, file, line) -> list[tuple[int, str]]:
    # jumps from one brace, escape or separator to the next (the text between them is copied whole)
    marks = _SPLIT[separator]
    parts, depth, start, i = [], 0, 0, 0
    while True:
        found = marks.search(source, i)
        if not found:
            break
        token, at = found.group(), found.start()
        i = found.end()
        if token == separator and depth == 0:
            parts.append((start, source[start:at]))
            start = i
            if separator == r"\\":  # an optional spacing argument: \\[2pt]
                skip = _OPTIONAL_SPACING.match(source, i)
                i = start = skip.end() if skip else i
        elif token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth < 0:
                raise OutputError("unbalanced braces: a } closes nothing", file=file, line=line)
    if depth:
        raise OutputError("unbalanced braces: a { is never closed", file=file, line=line)
    parts.append((start, source[start:]))
    return parts


_ROW_END = re.compile(r"(\\\\(?:\s*\[[^\]]*\])?" + _LEAD.pattern + ")")
"""A row's end (``\\`` and an optional spacing such as ``[2pt]``), then the next row's rules and blanks."""
_NOT_ONE_PASS = ("\x00", "\x01", "\x02", "\x03", "\x04", "\x05", "@", r"\{", r"\}", r"\&", r"\$", r"\~")
"""Text the one-pass reading leaves to the careful one: its markers, and escapes it does not take."""
_OPEN_BRACE = re.compile(r"\{(?=((?:[^{}&\\]|\\[^\\])*))\1(?!\})")  # (?=(x*))\1: x* taken whole, never less
"""A brace not closed before the next brace, ``&`` or ``\\``: a group holding a cell or row end, or nested."""
_MACRO_NAME = re.compile(r"\\([A-Za-z]+)")
_BRACKETED_BRACE = re.compile(r"\[[^\]{}]*[{}]")
_SYMBOL = {name: re.compile(re.escape(name) + r"(?![A-Za-z])\*?") for name in SYMBOLS}
_ARGUMENT_HEAD = re.compile(r"\\[A-Za-z]+\*?(?:[ \t\n]*\[[^\]&\x01]*\])*[ \t\n]*\{")
"""A macro up to its ``{`` (optional ``[...]`` arguments, within the cell, skipped), as :func:`_expand` takes it."""
_WITHOUT_ARGUMENT = re.compile(r"\\[A-Za-z]+\*?")
_SPACING = re.compile(r"\\[,;: \n]")
_ESCAPED = ("%", "_", "#")
_BLANKS = re.compile(r"[^\S ]\s*| \s+")
"""A run of blanks other than a single space (which needs no change)."""
_MARKERS = str.maketrans({"&": "\x00", "~": "\x02", "$": "\x03", "{": "\x04", "}": "\x04"})
_GROUPING = str.maketrans({"\x03": None, "\x04": None, "\x02": " ", "\x05": "~"})


def _rows_in_one_pass(source: str, start: int, end: int, width: int,
                      first_line: int) -> _Cells | list[tuple[int, list[str]]] | None:
    r""":func:`tabular_rows` of ``source[start:end]`` by a few regular-expression passes over the whole text.

    For a table whose markup is all formatting macros with at most one simple ``{...}``
    argument (``\textbf{4.6}``), argument-less macros, the symbols of :data:`SYMBOLS`, spacing
    (``\,``) and the escapes ``\%``, ``\_``, ``\#``, with braces that never hold a cell or
    row end: the same rows the careful reading gives, each cell's markup taken off by the
    passes rather than cell by cell. ``first_line`` is the line of ``source[start]``.
    Anything else (``\multicolumn``, macros defined in the text, nested braces): None.
    """
    body = source[start:end]
    if any(marker in body for marker in _NOT_ONE_PASS):
        return None
    parts = _ROW_END.split(body)  # row, end, row, end, ..., row
    if len(parts) // 2 != body.count("\\\\"):
        return None  # a row end within a rule's or a spacing's [...]
    lead = _LEAD.match(parts[0]).end()
    if not _simple_braces("&".join([parts[0][:lead], parts[0][lead:], *parts[1:]])):
        return None  # a brace reaching over a row or cell end, or out of a rule's [...]
    # each row's line: the line ends before it, counted part by part (map and accumulate: no loop in Python)
    before = list(itertools.accumulate(map(str.count, parts, itertools.repeat("\n")), initial=first_line))
    lines = before[0::2]
    lines[0] += parts[0].count("\n", 0, lead)
    rows = parts[0::2]
    rows[0] = rows[0][lead:]
    kept = list(map(bool, map(str.strip, rows)))  # rows of nothing but rules and blanks are no rows
    if not all(kept):
        lines, rows = list(itertools.compress(lines, kept)), list(itertools.compress(rows, kept))
    if not rows:
        return []
    whole = "\x01".join(rows)
    names = {"\\" + name for name in _MACRO_NAME.findall(whole)}
    if any(name in _KEEP or name in _DROP for name in names) or _BRACKETED_BRACE.search(whole):
        return None  # or a macro's [...] that ends in another group than it starts: as in \textbf{\foo[x}]{y}
    for name in names & SYMBOLS.keys():  # after a marker: \emph\quad{x} must not become \emph {x}
        whole = _SYMBOL[name].sub("\x04" + SYMBOLS[name].replace("~", "\x05"), whole)  # ~ is a blank in text
    if names:  # a macro's argument keeps its text: the macro and its { become a marker (below, the } does too)
        whole = _ARGUMENT_HEAD.sub("\x04", whole)
    # markers for cell and row ends (every & is one: none is escaped, none in braces), for ~ and $, and for
    # braces: gone only once the macros are, or \foo{}x would become the macro \foox
    whole = whole.translate(_MARKERS)
    if names:
        whole = _WITHOUT_ARGUMENT.sub("", whole)
    if "\\" in whole:
        whole = _SPACING.sub(" ", whole)
        for char in _ESCAPED:
            whole = whole.replace("\\" + char, char)
        if "\\" in whole:
            return None  # an escape the careful reading knows (or a lone backslash)
    whole = _BLANKS.sub(" ", whole.translate(_GROUPING))  # as " ".join(cell.split()) does it, cell by cell
    for marker in ("\x00", "\x01"):
        whole = whole.replace(" " + marker, marker).replace(marker + " ", marker)
    whole = whole.strip(" ")
    cleaned = whole.split("\x01")
    if len(cleaned) != len(rows):
        return None
    widths = {count + 1 for count in map(str.count, cleaned, itertools.repeat("\x00"))}
    if width and max(widths) > width:
        return None  # the careful reading names the row
    if len(widths) == 1 and (not width or widths == {width}):
        return _Cells(lines, whole.replace("\x01", "\x00").split("\x00"), widths.pop())
    cells = [row.split("\x00") for row in cleaned]
    return list(zip(lines, [row + [""] * (width - len(row)) for row in cells] if width else cells))


def _simple_braces(source: str) -> bool:
    """Whether every brace of ``source`` is closed, before the next brace, ``&`` or ``\\``."""
    return source.count("{") == source.count("}") and not _OPEN_BRACE.search(source)


def _spec_width(spec: str) -> int:
    spec = re.sub(r"[@!<>]\s*\{[^{}]*\}", "", spec)
    while True:
        repeated = re.search(r"\*\s*\{([0-9]+)\}\s*\{([^{}]*)\}", spec)
        if not repeated:
            break
        spec = spec[:repeated.start()] + repeated.group(2) * int(repeated.group(1)) + \
            spec[repeated.end():]
    spec = re.sub(r"\{[^{}]*\}", "", spec)
    return len(re.findall(r"[lcrpmbXSL]", spec))


def _definitions(source: str) -> dict[str, str]:
    found = {}
    if "newcommand" not in source:
        return found
    for match in _NEWCOMMAND.finditer(source):
        try:
            body, _ = _braced(source, match.end() - 1, "<definition>", None)
        except OutputError:
            continue
        found[match.group(1)] = body
    return found


def _line_finder(source: str, first_line: int):
    starts = [found.start() for found in re.finditer("\n", source)]

    def line_of(offset: int) -> int:
        import bisect
        return first_line + bisect.bisect_left(starts, offset)
    return line_of
