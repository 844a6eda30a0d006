"""The website and a claim page: building the book, how a page reads, plots.

``site`` (the build: fingerprints, the summary, Jupyter Book), ``execution`` and ``kernels`` (the
notebooks run in parallel, each in a kernel forked from a warm process), ``pages`` (the rule that
folds the machinery), ``plots`` and ``compare`` (what a page shows), ``sphinxext`` (the verdict
badge on the website).
"""
