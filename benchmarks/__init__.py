"""Performance benchmarks of reprobook, each against the plain tool measured in the same run.

Run from the project root: ``python -m benchmarks`` (``--help`` lists the options). Each benchmark
is a module here with ``run(ctx) -> list[Result]``; `common` holds what they share.
"""

BENCHMARKS = ("cli", "e2e", "poll", "fetch", "fanout", "parse", "book", "verus_live", "aardvark_rehearsal", "listing",
              "pesto_point")
