"""LMBench 3: the summary ``make see`` prints, and the raw result files it is computed from.

Two formats, one set of numbers:

* the **summary**, printed by ``make see`` (``cd results && make summary percent | more``) or
  ``make -C results summary``: fixed-width sections, each a title, a rule, column headers
  on one to three lines, a second rule and one row per results file. Cells are cut to
  their width after rounding to one decimal (``11.K`` is 10,950 to 11,949; ``144K``,
  ``8014.2K``), and a blank cell is a measurement the file does not have. `read_summary` reads it;
* the **raw results**, ``results/<OS>/<host>.<n>``, which ``make results`` and
  ``make rerun`` write, one file per run. `summarise` reads them and derives every cell
  as ``scripts/getsummary`` does (the average of read and write for "null I/O", files
  per second turned into microseconds per file, the largest size of a series, ...),
  and `summary_text` prints a value as the summary would, so `agree` can check that a
  summary and its results files say the same thing.

The sections, their headers and the widths of their cells are LMBench's own (the
``print_*`` routines of ``scripts/getsummary`` at intel/lmbench 701c6c3); a header
that differs from them is an error, as is a cell that is not a number. Errors name the
file and the 1-based line.

One cell cannot always be read back: "TCP conn" is formatted five characters wide and
printed four wide, so from 10,000 µs on its ``K`` is cut off. A cell with exactly one
digit after the point (``14.1``) can only be such a value (a plain value prints as
``14.``, ``1.23`` or ``1328``) and is read as thousands; beyond ten seconds it would be
millions. ``144.`` or ``1328`` are read as microseconds, though they could also be
thousands. The results files, where there are any, settle it. The uint64 "bit" column
has the same trait.

Examples
--------
>>> summary_text(144213.0, "processes", "fork proc"), summary_text(1.884, "processes", "null call")
('144K', '1.88')
>>> decode("11.K", file="s.txt", line=1, field="fork proc")
11000.0
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from reprobook.errors import OutputError
from reprobook.formats.text import read_lines
from reprobook.lazy import lazy

pd = lazy("pandas")

MISSING = -1.0
"""What getsummary stores for a measurement a file lacks (printed as a blank cell)."""


@dataclass(frozen=True)
class Column:
    """One summary column: its name (the header words), printed width and how the value is printed.

    ``fmt`` is ``num`` (LMBench's num()), ``inum`` (an integer), ``mhz`` (``%4.0f``) or
    ``mhz_d`` (``%4d`` after a blank); ``num_width`` is the width num() formats to when it
    is wider than the printed one; ``pad`` blanks come before the cell; ``scaled`` cells are
    blank when several copies ran at once (getsummary's scale_num).
    """

    name: str
    width: int
    key: str
    fmt: str = "num"
    num_width: int = 0
    pad: int = 0
    scaled: bool = False
    unit: str | None = None      # None: the section's unit
    measure: bool = True         # False: a property of the machine, not a measurement


@dataclass(frozen=True)
class Section:
    """One summary section as getsummary prints it."""

    id: str
    title: str
    header: tuple[str, ...]
    unit: str
    direction: str               # "smaller", "bigger" or "" (machine parameters)
    columns: tuple[Column, ...]
    present: tuple[str, ...]     # a file gets a row when one of these is > 0 (getsummary's resultsq)
    lead: tuple[tuple[str, int], ...] = (("host", 9), ("os", 13))
    before_rule: tuple[str, ...] = ()
    tail: str = ""               # name of free text after the last cell (memory guesses)


def _cols(spec: str, width: int, keys: str, **kw) -> tuple[Column, ...]:
    return tuple(Column(n.strip(), width, k, **kw) for n, k in zip(spec.split(","), keys.split()))


_PROCESS = ("lat_syscall lat_read lat_write lat_stat lat_openclose lat_tcp_select lat_siginstall lat_sigcatch "
            "lat_nullproc lat_simpleproc lat_shproc")
_CTX = "lat_ctx0_2 lat_ctx16_2 lat_ctx64_2 lat_ctx16_8 lat_ctx64_8 lat_ctx16_16 lat_ctx64_16"

SECTIONS: tuple[Section, ...] = (
    Section("basic", "Basic system parameters",
            ("Host                 OS Description              Mhz  tlb  cache  mem   scal",
             "                                                     pages line   par   load",
             "                                                           bytes"),
            "", "",
            (Column("Mhz", 4, "misc_mhz", "inum", unit="MHz"), Column("tlb pages", 5, "tlb", "inum", unit="pages"),
             Column("cache line bytes", 5, "line_size", "inum", unit="bytes"),
             Column("mem par", 6, "mem_load_par", unit="loads"), Column("scal load", 4, "load", "inum", unit="copies")),
            ("tlb", "line_size", "mem_load_par"),
            lead=(("host", 9), ("os", 13), ("description", 23))),
    Section("processes", "Processor, Processes - times in microseconds - smaller is better",
            ("Host                 OS  Mhz null null      open slct sig  sig  fork exec sh",
             "                             call  I/O stat clos TCP  inst hndl proc proc proc"),
            "µs", "smaller",
            (Column("Mhz", 4, "misc_mhz", "mhz", unit="MHz", measure=False),
             *_cols("null call, null I/O, stat, open clos, slct TCP, sig inst, sig hndl, fork proc, exec proc, sh proc",
                    4, "lat_syscall null_io lat_stat lat_openclose lat_tcp_select lat_siginstall lat_sigcatch "
                       "lat_nullproc lat_simpleproc lat_shproc")),
            tuple(_PROCESS.split())),
    Section("int-ops", "Basic integer operations - times in nanoseconds - smaller is better",
            ("Host                 OS  intgr intgr  intgr  intgr  intgr",
             "                          bit   add    mul    div    mod"),
            "ns", "smaller",
            _cols("intgr bit, intgr add, intgr mul, intgr div, intgr mod", 6,
                  "integer_bit integer_add integer_mul integer_div integer_mod", scaled=True),
            ("integer_bit", "integer_add", "integer_mul", "integer_div", "integer_mod")),
    Section("int64-ops", "Basic uint64 operations - times in nanoseconds - smaller is better",
            ("Host                 OS int64  int64  int64  int64  int64",
             "                         bit    add    mul    div    mod"),
            "ns", "smaller",
            (Column("int64 bit", 5, "int64_bit", num_width=6, pad=1, scaled=True),
             *_cols("int64 add, int64 mul, int64 div, int64 mod", 6, "int64_add int64_mul int64_div int64_mod",
                    scaled=True)),
            ("int64_bit", "int64_add", "int64_mul", "int64_div", "int64_mod")),
    Section("float-ops", "Basic float operations - times in nanoseconds - smaller is better",
            ("Host                 OS  float  float  float  float", "                         add    mul    div    bogo"),
            "ns", "smaller",
            _cols("float add, float mul, float div, float bogo", 6, "float_add float_mul float_div float_bogomflops",
                  scaled=True),
            ("float_add", "float_mul", "float_div", "float_bogomflops")),
    Section("double-ops", "Basic double operations - times in nanoseconds - smaller is better",
            ("Host                 OS  double double double double", "                         add    mul    div    bogo"),
            "ns", "smaller",
            _cols("double add, double mul, double div, double bogo", 6,
                  "double_add double_mul double_div double_bogomflops", scaled=True),
            ("double_add", "double_mul", "double_div", "double_bogomflops")),
    Section("context-switch", "Context switching - times in microseconds - smaller is better",
            ("Host                 OS  2p/0K 2p/16K 2p/64K 8p/16K 8p/64K 16p/16K 16p/64K",
             "                         ctxsw  ctxsw  ctxsw ctxsw  ctxsw   ctxsw   ctxsw"),
            "µs", "smaller",
            (*_cols("2p/0K ctxsw, 2p/16K ctxsw, 2p/64K ctxsw, 8p/16K ctxsw, 8p/64K ctxsw", 6, _CTX),
             *_cols("16p/16K ctxsw, 16p/64K ctxsw", 7, "lat_ctx16_16 lat_ctx64_16")),
            tuple(_CTX.split())),
    Section("local-latency", "*Local* Communication latencies in microseconds - smaller is better",
            ("Host                 OS 2p/0K  Pipe AF     UDP  RPC/   TCP  RPC/ TCP",
             "                        ctxsw       UNIX         UDP         TCP conn"),
            "µs", "smaller",
            (*_cols("2p/0K ctxsw, Pipe", 5, "lat_ctx0_2 lat_pipe"), Column("AF UNIX", 4, "lat_unix"),
             *_cols("UDP, RPC/UDP, TCP, RPC/TCP", 5, "lat_udp_local lat_rpc_udp_local lat_tcp_local lat_rpc_tcp_local"),
             Column("TCP conn", 4, "lat_tcp_connect_local", num_width=5, scaled=True)),
            ("lat_ctx0_2", "lat_pipe", "lat_unix", "lat_udp_local", "lat_rpc_udp_local", "lat_tcp_local",
             "lat_rpc_tcp_local", "lat_tcp_connect_local")),
    Section("remote-latency", "*Remote* Communication latencies in microseconds - smaller is better",
            ("Host                 OS   UDP  RPC/  TCP   RPC/ TCP", "                               UDP         TCP  conn"),
            "µs", "smaller",
            (*_cols("UDP, RPC/UDP, TCP, RPC/TCP", 5, "lat_udp_remote lat_rpc_udp_remote lat_tcp_remote "
                                                     "lat_rpc_tcp_remote"),
             Column("TCP conn", 4, "lat_tcp_connect_remote", scaled=True)),
            ("lat_udp_remote", "lat_rpc_udp_remote", "lat_tcp_remote", "lat_rpc_tcp_remote", "lat_tcp_connect_remote")),
    Section("file-vm", "File & VM system latencies in microseconds - smaller is better",
            ("Host                 OS   0K File      10K File     Mmap    Prot   Page   100fd",
             "                        Create Delete Create Delete Latency Fault  Fault  selct"),
            "µs", "smaller",
            (*_cols("0K File Create, 0K File Delete, 10K File Create, 10K File Delete", 6,
                    "fs_create_0k_us fs_delete_0k_us fs_create_10k_us fs_delete_10k_us", scaled=True),
             Column("Mmap Latency", 7, "lat_mappings"), Column("Prot Fault", 5, "lat_protfault"),
             Column("Page Fault", 7, "lat_pagefault"), Column("100fd selct", 5, "lat_fd_select")),
            ("fs_create_0k", "fs_create_10k", "fs_delete_0k", "fs_delete_10k", "lat_mappings", "lat_protfault",
             "lat_pagefault")),
    Section("local-bandwidth", "*Local* Communication bandwidths in MB/s - bigger is better",
            ("Host                OS  Pipe AF    TCP  File   Mmap  Bcopy  Bcopy  Mem   Mem",
             "                             UNIX      reread reread (libc) (hand) read write"),
            "MB/s", "bigger",
            (*_cols("Pipe, AF UNIX, TCP", 4, "bw_pipe bw_unix bw_tcp_local"),
             *_cols("File reread, Mmap reread, Bcopy (libc), Bcopy (hand)", 6,
                    "bw_reread bw_mmap bw_bcopy_libc bw_bcopy_unrolled"),
             Column("Mem read", 4, "bw_mem_rdsum"), Column("Mem write", 5, "bw_mem_wr")),
            ("bw_pipe", "bw_unix", "bw_tcp_local", "bw_reread", "bw_bcopy_libc", "bw_bcopy_unrolled", "bw_mem_rdsum",
             "bw_mem_wr")),
    Section("memory-latency", "Memory latencies in nanoseconds - smaller is better",
            ("Host                 OS   Mhz   L1 $   L2 $    Main mem    Rand mem    Guesses",),
            "ns", "smaller",
            (Column("Mhz", 5, "misc_mhz", "mhz_d", unit="MHz", measure=False),
             *_cols("L1 $, L2 $, Main mem", 6, "lat_l1 lat_l2 lat_mem"), Column("Rand mem", 11, "lat_mem_rand")),
            ("lat_l1", "lat_l2", "lat_mem"),
            before_rule=("(WARNING - may not be correct, check graphs)",), tail="guesses"),
)
BY_ID = {s.id: s for s in SECTIONS}

# The sections each subset's benchmarks can fill (scripts/lmbench at 701c6c3: BENCHMARK_OS runs the system
# calls, processes, context switches, local IPC, files and VM, and the bcopy/mem bandwidths; BENCHMARK_HARDWARE
# runs the integer/float operations, the bandwidths, tlb, par_mem and the memory latencies). "basic" comes from
# LINE_SIZE, which the configuration measured with `line` (empty when that probe did not come out), and from tlb
# and par_mem. "remote-latency" is only measured with REMOTE hosts.
SUBSETS = {
    "OS": ("basic", "processes", "context-switch", "local-latency", "file-vm", "local-bandwidth"),
    "HARDWARE": ("basic", "int-ops", "int64-ops", "float-ops", "double-ops", "local-bandwidth", "memory-latency"),
}
NOT_MEASURED = "not measured"
"""How a section LMBench left out is reported: never as zero, never as a blank row."""
_BY_TITLE = {" ".join(s.title.split()): s for s in SECTIONS}
_BANNER = re.compile(r"L\s*M\s*B\s*E\s*N\s*C\s*H\s+3\s*\.\s*0\s+S\s*U\s*M\s*M\s*A\s*R\s*Y")
_MAKE = re.compile(r"^g?make(\[\d+\])?: ")
_CELL = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]+)?([KM]?)")
_RULE = re.compile(r"-+")
_COLUMN_RULE = re.compile(r"-+( +-+)+")
SUMMARY_COLUMNS = ["section", "column", "row", "host", "os", "text", "value", "unit", "direction", "line"]


def _column(section: str, column: str) -> tuple[Section, Column]:
    sec = BY_ID[section]
    for col in sec.columns:
        if col.name == column:
            return sec, col
    raise KeyError(f"section {section!r} has no column {column!r}")


# --------------------------------------------------------------------------- printing and reading cells

def _num(val: float, length: int) -> str:
    """LMBench's num(): a blank for no value, else about ``length`` characters with K or M for thousands."""
    if val is None or not math.isfinite(val) or val <= 0:
        return " " * length
    if val >= 10e3:
        div, suffix = (1e6, "M") if val >= 10e6 else (1e3, "K")
        return "%*.*s" % (length - 1, length - 1, "%.1f" % (val / div)) + suffix
    if val >= 10:
        return "%*.*s" % (length, length, "%.1f" % val)
    if val < 0.001:
        prec = length - 6
        return "%*.*e" % (length, prec, val) if prec >= 0 else f"%{length}.{prec}e"  # perl prints a bad format as is
    return "%*.*f" % (length, length - 2, val)


def summary_text(value: float, section: str, column: str, *, copies: float = 1) -> str:
    """The cell LMBench's summary prints for ``value`` in ``column`` of ``section`` (``copies``: its SYNC_MAX)."""
    sec, col = _column(section, column)
    value = MISSING if value is None or (isinstance(value, float) and math.isnan(value)) else value
    if col.fmt == "mhz":
        return "%4.0f" % value
    if col.fmt == "mhz_d":
        return " %4d" % int(value)
    if col.fmt == "inum":
        text = " " * col.width if value <= 0 else "%*d" % (col.width, int(value))
    else:
        text = _num(MISSING if col.scaled and copies > 1 else value, col.num_width or col.width)
    return " " * col.pad + "%*.*s" % (col.width, col.width, text)


def decode(text: str, *, file, line: int, field: str, thousands_cut: bool = False) -> float:
    """A summary cell as a number: blank is NaN, ``11.K`` 11000, ``1.2M`` 1200000.

    ``thousands_cut``: the column prints fewer characters than it formats, so a value of
    10,000 or more lost its ``K``; such a cell, and only such a cell, shows exactly one
    digit after the point (see the module's notes).
    """
    cell = text.strip()
    if not cell:
        return math.nan
    m = _CELL.fullmatch(cell)
    if not m:
        raise OutputError(f"{cell!r} is not an LMBench summary value (such as 1.88, 101., 11.K, 144K or 8014.2K)",
                          file=file, line=line, field=field)
    value = float(m.group(1) + (m.group(2) or ""))
    if m.group(3):
        return value * {"K": 1e3, "M": 1e6}[m.group(3)]
    if thousands_cut and re.fullmatch(r"[0-9]+\.[0-9]", cell):
        return value * 1e3
    return value


# --------------------------------------------------------------------------- the summary

def _words(text: str) -> list[str]:
    return text.split()


def _read_row(sec: Section, text: str, *, file, line: int) -> dict:
    pos, row = 0, {}
    for name, width in sec.lead:
        row[name] = text[pos:pos + width].strip()
        pos += width + 1
    if not row["host"]:
        raise OutputError(f"expected a row of section {sec.title!r} (host name first), found {text.strip()!r}",
                          file=file, line=line)
    cells = {}
    for col in sec.columns:
        start, end = pos, pos + col.pad + col.width
        if text[start - 1:start].strip():
            raise OutputError(f"the cells of {sec.title!r} are {col.width} characters wide with a blank between "
                              f"them; this row has {text[start - 1:start]!r} at character {start}",
                              file=file, line=line, field=col.name)
        cells[col.name] = text[start:end]
        pos = end + 1
        if sec.tail and "Bad mhz?" in text:  # getsummary prints dashes after the clock then: no latencies
            cells.update({c.name: "" for c in sec.columns[1:]})
            pos = len(text) + 1 - len(text[text.index("Bad mhz?"):]) + 1
            break
    rest = text[pos - 1:].strip()
    if rest and not sec.tail:
        raise OutputError(f"unexpected text after the last column of {sec.title!r}: {rest!r}", file=file, line=line)
    return {**row, "cells": cells, **({sec.tail: rest} if sec.tail else {})}


def read_summary(path: str | Path) -> pd.DataFrame:
    """Read an LMBench summary (``make see`` or ``make -C results summary``) into a tidy table.

    Lines before the banner (the shell's echo of the command), ``make`` messages and
    lines starting with ``#`` (notes added by hand, as in the OEMU guide) are skipped; a
    blank line inside a section does not end it.

    Returns
    -------
    DataFrame
        One row per cell: ``section`` (an id such as ``processes``), ``column`` (the
        header words, e.g. ``null call``), ``row`` (1-based within the section), ``host``,
        ``os``, ``text`` (the cell as printed), ``value`` (NaN for a blank cell), ``unit``,
        ``direction`` (``smaller`` or ``bigger`` is better, ``""`` for machine
        parameters) and ``line``.

    Raises
    ------
    OutputError
        No banner, an unknown section title, a header or rule that is not LMBench's, a
        row that does not fit the columns, or a cell that is not a number; the message
        names the file and the line.
    """
    path, lines = read_lines(path)
    start = next((i for i, l in enumerate(lines) if _BANNER.search(l)), None)
    if start is None:
        raise OutputError("no 'L M B E N C H  3 . 0   S U M M A R Y' banner: this is not LMBench's summary "
                          "(the output of make see or make -C results summary)", file=path)
    records, seen, sec, i = [], set(), None, start + 1
    n = len(lines)
    while i < n:
        no, text = i + 1, lines[i]
        s = " ".join(text.split())
        i += 1
        if not s or s.startswith("#") or _MAKE.match(s):
            continue
        if _BANNER.search(s):
            raise OutputError("a second summary banner: one summary per file", file=path, line=no)
        if sec is None and (_RULE.fullmatch(s) or s == "(Alpha software, do not distribute)"):
            continue
        if s in _BY_TITLE:
            sec = _BY_TITLE[s]
            if sec.id in seen:
                raise OutputError(f"section {sec.title!r} appears twice", file=path, line=no)
            seen.add(sec.id)
            i = _read_header(sec, lines, i, path)
            row = 0
            continue
        if sec is None:
            raise OutputError(f"expected the title of a summary section, found {text.strip()!r} (known: "
                              f"{'; '.join(x.title for x in SECTIONS)})", file=path, line=no)
        try:
            r = _read_row(sec, text, file=path, line=no)
            values = [math.nan if col.fmt.startswith("mhz") and r["cells"][col.name].strip() == "-1"  # no clock read
                      else decode(r["cells"][col.name], file=path, line=no, field=f"{sec.id}: {col.name}",
                                  thousands_cut=col.num_width > col.width) for col in sec.columns]
        except OutputError as exc:
            if lines[i - 2].strip():
                raise
            # after a blank line a section may end: say that this line is not a title either
            raise OutputError(f"neither a row of {sec.title!r} nor the title of a section LMBench prints ("
                              f"{'; '.join(x.title for x in SECTIONS)}): {text.strip()!r}", file=path,
                              line=no) from exc
        row += 1
        for col, value in zip(sec.columns, values):
            cell = r["cells"][col.name]
            records.append({"section": sec.id, "column": col.name, "row": row, "host": r["host"], "os": r["os"],
                            "text": cell.strip(), "value": value, "unit": col.unit if col.unit is not None else sec.unit,
                            "direction": sec.direction if col.measure else "", "line": no})
    if not records:
        raise OutputError("the summary has no rows: no results file was summarised", file=path)
    return pd.DataFrame(records, columns=SUMMARY_COLUMNS)


def _read_header(sec: Section, lines: list[str], i: int, path: Path) -> int:
    """Check the lines after ``sec``'s title (rule, headers, column rule); return the index after them."""
    want = [*sec.before_rule, None, *sec.header, "COLUMNS"]
    for expected in want:
        no = i + 1
        text = lines[i] if i < len(lines) else ""
        s = " ".join(text.split())
        if expected is None:
            ok, what = bool(_RULE.fullmatch(s)), "a rule of dashes"
        elif expected == "COLUMNS":
            ok, what = bool(_COLUMN_RULE.fullmatch(s)), "the rule under the column headers ('--------- -----...')"
        else:
            ok, what = _words(text) == _words(expected), f"the header {expected.strip()!r}"
        if not ok:
            raise OutputError(f"section {sec.title!r}: expected {what}, found {text.strip()!r}", file=path, line=no)
        i += 1
    return i


# --------------------------------------------------------------------------- the raw results files

# (pattern, key, token): getsummary's one-line measurements, the value being split()[token]
_SIMPLE = [(re.compile(p), k, t) for p, k, t in (
    (r"^Select on 100 fd", "lat_fd_select", 4), (r"^Select on 100 tcp fd", "lat_tcp_select", 5),
    *((rf"^{a} {b}:", f"{pre}_{b}", 2) for a, pre in (("integer", "integer"), ("uint64", "int64"))
      for b in ("bit", "add", "mul", "div", "mod")),
    *((rf"^{a} {b}:", f"{a}_{b}", 2) for a in ("float", "double") for b in ("add", "mul", "div", "bogomflops")),
    (r"^tlb:", "tlb", 1), (r"^Simple syscall:", "lat_syscall", 2), (r"^Simple read:", "lat_read", 2),
    (r"^Simple write:", "lat_write", 2), (r"^Simple stat:", "lat_stat", 2), (r"^Simple open.close:", "lat_openclose", 2),
    (r"^Null syscall:", "lat_write", 2), (r"^Signal handler installation:", "lat_siginstall", 3),
    (r"^Signal handler overhead:", "lat_sigcatch", 3), (r"^Protection fault:", "lat_protfault", 2),
    (r"^Pipe latency:", "lat_pipe", 2), (r"AF_UNIX sock stream latency:", "lat_unix", 4),
    (r"^AF_UNIX sock stream bandwidth:", "bw_unix", 4), (r"^Process fork.exit", "lat_nullproc", 2),
    (r"^Process fork.execve:", "lat_simpleproc", 2), (r"^Process fork..bin.sh", "lat_shproc", 3),
    (r"^Pipe bandwidth", "bw_pipe", 2), (r"^Pagefaults on", "lat_pagefault", 3))]
# (local pattern, remote pattern, key stem, token): "... using localhost:" is local, any other host remote
_NETWORK = [("UDP latency using", "lat_udp", 4), ("TCP latency using", "lat_tcp", 4),
            ("RPC.udp latency using", "lat_rpc_udp", 4), ("RPC.tcp latency using", "lat_rpc_tcp", 4),
            ("TCP.IP connection cost to", "lat_tcp_connect", 5)]
# "header lines" followed by "size value" lines: getsummary keeps the value of the last line
_BIGGEST = [(re.compile(p), k) for p, k in (
    (r"^Socket bandwidth using localhost", "bw_tcp_local"), (r'^"mappings', "lat_mappings"),
    (r'^"read bandwidth', "bw_reread"), (r'^"Mmap read bandwidth', "bw_mmap"),
    (r'^"libc bcopy unaligned', "bw_bcopy_libc"), (r'^"unrolled bcopy unaligned', "bw_bcopy_unrolled"),
    (r"^Memory read", "bw_mem_rdsum"), (r"^Memory write", "bw_mem_wr"), (r"^Memory load parallelism", "mem_load_par"))]


@dataclass(frozen=True)
class Results:
    """One raw results file, as getsummary reads it: its measurements, host, OS and where each was found."""

    path: Path
    host: str
    number: int
    os: str
    description: str
    measures: dict
    lines: dict
    header: dict = field(default_factory=dict)   # the run's "[KEY: value]" lines (BENCHMARK_OS, REMOTE, ...)

    def get(self, key: str) -> float:
        return self.measures.get(key, MISSING)

    def present(self) -> tuple[str, ...]:
        """The sections this file gets a row in (getsummary's resultsq: one of the section's measurements > 0)."""
        return tuple(sec.id for sec in SECTIONS if any(self.get(k) > 0 for k in sec.present))

    def expected(self) -> tuple[str, ...] | None:
        """The sections the subset this file was run with can fill, from its header; None if the header does not say.

        Only ``BENCHMARK_OS`` and ``BENCHMARK_HARDWARE`` are read (the OS, HARDWARE and ALL
        subsets); a run of single benchmarks (LMBench's DEVELOPMENT answers) says None.
        """
        subsets = [name for name in SUBSETS if self.header.get(f"BENCHMARK_{name}") == "YES"]
        if not subsets:
            return None
        wanted = {sid for name in subsets for sid in SUBSETS[name]}
        if "OS" in subsets and self.header.get("REMOTE", "").strip():
            wanted.add("remote-latency")
        return tuple(sec.id for sec in SECTIONS if sec.id in wanted)


def _value(token: str) -> float:
    # getsummary's num() takes only digits and points; anything else prints as a blank
    if re.fullmatch(r"[0-9.]+", token or ""):
        try:
            return float(token)
        except ValueError:
            return MISSING
    return MISSING


def read_results(path: str | Path) -> Results:
    """Read one raw results file ``results/<OS>/<host>.<n>`` as ``scripts/getsummary`` does.

    Raises
    ------
    OutputError
        The file does not start with LMBench's ``[lmbench3.x results for ...]`` line, or its
        name is not ``<host>.<n>``.
    """
    path, lines = read_lines(path)
    m = re.fullmatch(r"(.+)\.([0-9]+)", path.name)
    if not m:
        raise OutputError("a results file is named <host>.<n> (such as syzkaller.0)", file=path)
    if not re.match(r"^\[lmbench3\.[01]", lines[0]):
        raise OutputError(f"expected LMBench 3's first line '[lmbench3.0 results for ...]', found {lines[0][:60]!r}",
                          file=path, line=1)
    measures: dict[str, float] = {}
    where: dict[str, int] = {}
    header = {m.group(1): m.group(2).strip() for m in (re.fullmatch(r"\[([A-Z_ ]+): ?(.*)\]", l.strip())
                                                      for l in lines[:60]) if m}
    info = lines[0].split()
    uname = f"{info[3] if len(info) > 3 else ''} {info[5] if len(info) > 5 else ''}"

    def put(key, value, no):
        if key not in measures:
            measures[key], where[key] = value, no

    def biggest(i: int) -> tuple[float, int]:
        save = None
        while i < len(lines):
            text = lines[i]
            i += 1
            if not text.strip() or not re.match(r"^\d+", text):
                break
            if re.match(r"^\d+\.", text):
                save = text
        return (_value(save.split()[1]) if save and len(save.split()) > 1 else 0.0), i

    i, mem_type = 0, -1
    while i < len(lines):
        text, no = lines[i], i + 1
        i += 1
        words = text.split()
        tok = (lambda k: words[k] if len(words) > k else "")
        if "MHZ" in text and "misc_mhz" not in measures:
            put("misc_mhz", _value(tok(1).replace("]", "")), no)
        elif "Mhz" in text and "misc_mhz" not in measures:
            put("misc_mhz", _value(tok(0)), no)
        for key, pat in (("line_size", "LINE_SIZE"), ("load", "SYNC_MAX")):
            if pat in text:
                put(key, _value(tok(1).replace("]", "")), no)
        for pattern, key, t in _SIMPLE:
            if pattern.search(text):
                put(key, _value(tok(t)), no)
        for stem, key, t in _NETWORK:
            if re.search(stem + " localhost:", text):
                put(key + "_local", _value(tok(t)), no)
            elif re.search(stem, text):
                put(key + "_remote", _value(tok(t)), no)
        for pattern, key in _BIGGEST:
            if pattern.search(text):
                value, i = biggest(i)
                put(key, value, no)
        if re.match(r'^"File system latency', text):
            while i < len(lines):
                row = lines[i].split()
                i += 1
                if "Id:" in lines[i - 1]:
                    continue
                if not row or row[0] not in ("0k", "1k", "4k", "10k"):
                    break
                put(f"fs_create_{row[0]}", _value(row[2] if len(row) > 2 else ""), i)
                put(f"fs_delete_{row[0]}", _value(row[3] if len(row) > 3 else ""), i)
        for size in ("0", "16", "64"):
            if f"size={size}" in text:
                while i < len(lines):
                    row = lines[i]
                    i += 1
                    for procs in ("2", "8", "16"):
                        if row.startswith(procs + " "):
                            put(f"lat_ctx{size}_{procs}", _value(row.split()[1]), i)
                    if not row.strip() or (size == "0" and row.startswith("Memory")) or (size == "64" and
                                                                                         row.startswith("20")):
                        break
        if text.startswith("Memory load latency"):
            mem_type = 1
        if text.startswith("Random load latency"):
            mem_type = 2
        for stride, key in (('"stride=128', "lat_mem"), ('"stride=16', "lat_mem_rand")):
            if text.startswith(stride):
                save = MISSING
                while i < len(lines) and lines[i].strip():
                    row = lines[i].split()
                    i += 1
                    save = _value(row[1] if len(row) > 1 else "")
                    if stride == '"stride=128' and mem_type == 1 and len(row) > 1:
                        size = float(row[0]) if re.fullmatch(r"[0-9.]+", row[0]) else -1
                        if size == 0.00098:
                            put("lat_l1", save, i)
                        elif size == 0.125:
                            put("lat_l2", save, i)
                i += 1
                if mem_type == (1 if key == "lat_mem" else 2):
                    put(key, save, no)
    return Results(path, m.group(1), int(m.group(2)), uname, path.parent.name, measures, where, header)


def implied_subsets(sections: Iterable[str]) -> tuple[str, ...] | None:
    """The sections a summary's subset can fill, judged from the sections it printed (None: it printed none that tells).

    A summary alone does not say which subset ran; a section only the OS subset fills
    (processes, context switching, ...) says OS, one only HARDWARE fills says HARDWARE.
    """
    seen = set(sections)
    only = {name: set(SUBSETS[name]) - set().union(*(SUBSETS[o] for o in SUBSETS if o != name)) for name in SUBSETS}
    subsets = [name for name in SUBSETS if only[name] & seen]
    if not subsets:
        return None
    wanted = {sid for name in subsets for sid in SUBSETS[name]} | (seen & {"remote-latency"})
    return tuple(sec.id for sec in SECTIONS if sec.id in wanted)


def left_out_words(section: str) -> str:
    """What the page and the verdict say of a section LMBench left out of its summary."""
    return (f"{BY_ID[section].title.split(' - ')[0]!r}: {NOT_MEASURED} (LMBench printed no such section: none of "
            f"its measurements came out)")


def _derived(r: Results) -> dict[str, float]:
    """The values of the summary's cells that getsummary computes from several measurements."""
    read, write = r.get("lat_read"), r.get("lat_write")
    out = {"null_io": write if read == MISSING else (read + write) / 2}
    for kind in ("create", "delete"):
        for size in ("0k", "10k"):
            rate = r.get(f"fs_{kind}_{size}")
            out[f"fs_{kind}_{size}_us"] = MISSING if rate <= 0 else 1e6 / rate
    return out


def _getlist_order(paths: Iterable[Path]) -> list[Path]:
    # getlist globs <*/*> under results/: files sorted by "<OS>/<name>" ("vm.10" before "vm.2")
    return sorted((Path(p) for p in paths), key=lambda p: f"{p.parent.name}/{p.name}")


def summarise(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The summary LMBench would print for these results files, with the full values behind each cell.

    Files are taken in the order ``make summary`` takes them; a file gets a row in a
    section only when it has one of the section's measurements, as in getsummary.

    Returns
    -------
    DataFrame
        The columns of `read_summary`, ``text`` being the cell as LMBench would print it
        and ``value`` the value behind it (NaN where the cell is blank), with ``line`` the
        line of the measurement in its file and ``file`` and ``number`` (the ``n`` of
        ``<host>.<n>``) added.
    """
    results = [read_results(p) for p in _getlist_order(paths)]
    if not results:
        raise OutputError("no results files to summarise", file="results/<OS>/<host>.<n>")
    records = []
    for sec in SECTIONS:
        row = 0
        for r in results:
            if not any(r.get(k) > 0 for k in sec.present):
                continue
            row += 1
            derived = _derived(r)
            for col in sec.columns:
                raw = derived.get(col.key, r.get(col.key))
                text = summary_text(raw, sec.id, col.name, copies=r.get("load"))
                shown = MISSING if col.scaled and r.get("load") > 1 else raw
                records.append({"section": sec.id, "column": col.name, "row": row, "host": r.host, "os": r.os,
                                "text": text.strip(), "value": shown if shown > 0 else math.nan, "unit": col.unit if col.unit is not None else sec.unit,
                                "direction": sec.direction if col.measure else "",
                                "line": r.lines.get(col.key, 0), "file": str(r.path), "number": r.number})
    return pd.DataFrame(records, columns=[*SUMMARY_COLUMNS, "file", "number"])


def agree(summary: pd.DataFrame, results: pd.DataFrame, *, file: str | Path) -> None:
    """Check that a summary (`read_summary`) prints what its results files (`summarise`) hold.

    Raises
    ------
    OutputError
        Naming the summary ``file`` and line, the cell, what it prints and what the
        results file gives, at the first cell that differs or row that one side lacks.
    """
    theirs = {(r.section, r.row, r.column): r for r in results.itertuples()}
    mine = {(r.section, r.row, r.column): r for r in summary.itertuples()}
    for key, s in mine.items():
        r = theirs.get(key)
        if r is None:
            raise OutputError(f"row {s.row} of section {s.section!r} has no results file behind it "
                              f"({len({k[1] for k in theirs if k[0] == s.section})} file(s) give that section)",
                              file=file, line=s.line)
        if s.text != r.text:
            raise OutputError(f"prints {s.text!r} but {r.file} gives {r.value:g}, which LMBench prints as {r.text!r}",
                              file=file, line=s.line, field=f"{s.section}: {s.column}")
    extra = sorted({(k[0], k[1]) for k in theirs} - {(k[0], k[1]) for k in mine})
    if extra:
        section, row = extra[0]
        raise OutputError(f"the results files give row {row} of section {section!r}, which the summary lacks",
                          file=file)
