"""Parsers: pure functions from an output file (or its text) to values or a tidy DataFrame.

One module per output format, shared by every paper:

``text``     the text kit: a file as lines (UTF-8, BOM, CRLF), numbered records, numbers
             and counts, ``label: value unit`` lines, ``inf``/timeout markers, time unit
             conversion, clock readings, whitespace and fixed-width tables, PDF text;
``tables``   CSV and TSV (header or not, trailing separators, required and typed columns);
``jsonfmt``  JSON files (errors with line and column) and nested keys fetched by path;
``latex``    LaTeX ``tabular`` environments, as rows of cells or a frame;
``gotest``   ``go test -v`` output: Go durations, test results, ``<label> time: <d>`` lines.

A paper's module (``aardvark``, ``verus``) holds only what is specific to its outputs
and composes the format modules; a paper's loaders (`reprobook.loaders`) compose those.
Malformed input raises `reprobook.errors.OutputError` naming the file and the 1-based line.
"""
