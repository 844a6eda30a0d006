"""Output formats: pure functions from an output file (or its text) to values or a tidy DataFrame.

One module per output format, shared by every paper (the bottom layer: it imports only
`reprobook.errors`):

``text``     the text kit: a file as lines (UTF-8, BOM, CRLF), numbered records, numbers
             and counts, ``label: value unit`` lines, ``inf``/timeout markers, time unit
             conversion, clock readings, whitespace and fixed-width tables, PDF text;
``tables``   CSV and TSV (header or not, trailing separators, required and typed columns);
``jsonfmt``  JSON files (errors with line and column), nested keys fetched by path, and a
             tree of Pesto ``stats.json`` as one long frame;
``latex``    LaTeX ``tabular`` environments, as rows of cells or a frame;
``gotest``   ``go test -v`` output: Go durations, test results, ``<label> time: <d>`` lines;
``terminal`` the other way: run data printed on a terminal as text (`terminal.printable`: control
             characters and escape sequences made visible), for every line the command line prints;

A format only one paper has lives with that paper (``reprobook/papers/<paper>/parsers.py``,
Ozz's ``lmbench.py``) and composes these; a paper's loaders (`reprobook.core.loaders`) compose those.
Malformed input raises `reprobook.errors.OutputError` naming the file and the 1-based line.

A regular file is read in one pass of a C parser (pandas' ``read_csv``, ``json``) and
checked on the frame, its line numbers taken from a `text.LineIndex` of its bytes; anything
irregular goes down a row-by-row path that names the line and field at fault. Both paths
give the same frame.
"""
