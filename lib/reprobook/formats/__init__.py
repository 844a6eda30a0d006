"""Parsers: pure functions from an output file (or its text) to values or a tidy DataFrame.

One module per output format, shared by every paper:

``text``     the text kit: a file as lines (UTF-8, BOM, CRLF), numbered records, numbers
             and counts, ``label: value unit`` lines, ``inf``/timeout markers, time unit
             conversion, clock readings, whitespace and fixed-width tables, PDF text;
``tables``   CSV and TSV (header or not, trailing separators, required and typed columns);
``jsonfmt``  JSON files (errors with line and column), nested keys fetched by path, and a
             tree of Pesto ``stats.json`` as one long frame;
``latex``    LaTeX ``tabular`` environments, as rows of cells or a frame;
``gotest``   ``go test -v`` output: Go durations, test results, ``<label> time: <d>`` lines;
``lmbench``  LMBench 3's summary (``make see``) and its raw results files, checked against each other.

A paper's module (``aardvark``, ``verus``) holds only what is specific to its outputs
and composes the format modules; a paper's loaders (`reprobook.loaders`) compose those.
Malformed input raises `reprobook.errors.OutputError` naming the file and the 1-based line.

A regular file is read in one pass of a C parser (pandas' ``read_csv``, ``json``) and
checked on the frame, its line numbers taken from a `text.LineIndex` of its bytes; anything
irregular goes down a row-by-row path that names the line and field at fault. Both paths
give the same frame.
"""
