"""Where the authors' shipped outputs sit in the artifact mirror (``github.com/<owner>/<repo>/<commit>/``)."""

VERUS = "github.com/verus-lang/paper-sosp24-artifact/5e2b290cdd1eec1e0d4d44417ef7b078c2f93266"
STORAGE = ("github.com/microsoft/verified-storage/31b2256b06413c71245baf4b2bec9cea5b20e51b/"
           "artifact_eval/experiment/example_dram_results")
NR = ("github.com/verus-lang/verified-node-replication/341be41a31cfc5c7539f8b78a65f166a06251d02/"
      "benchmarks")
