"""Run inputs: files made where reprobook runs and shipped with a live run (generated experiment configs).

A claim may name a generator in its paper file::

    inputs:
      generator: pequin.configs          # registered with @generator("pequin.configs")
      options: {files: [experiment-configs/.../Pequin-TPCC-SQL-20wh.json]}

Before a live run starts, once its hosts are surveyed, `generate` calls it with the claim, its
resolved parameters (adapted to the hosts, see `reprobook.core.scales.adapt`), the run's placement and
the facts probed on its hosts; each `RunInput` it returns is kept in the run's ``inputs/`` (with the diff
against the authors' file it came from), recorded in the manifest with its sha256, and written
on the host before the first step, where the steps read it as ``$RB_INPUTS/<name>`` (a sweep step: the input
made for its point as ``$RB_INPUTS/$RB_INPUT``). The
authors' files are never written. Generated inputs follow from the claim, parameters and
placement (the run's id) and the hosts; inputs given by the caller make a different run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from reprobook.core.plugins import load_papers
from reprobook.errors import ConfigError


@dataclass(frozen=True)
class RunInput:
    """One generated file: its name on the host, its bytes, where it came from and how it differs from that.

    ``point``: the sweep point it is made for (sweep parameter -> value; a point it names fewer parameters of
    matches too). A sweep step of that point finds its name in ``$RB_INPUT``, so that the steps need not
    know how a generator names its files (two configs of one name in different folders, say)."""

    name: str
    data: bytes
    source: str = ""
    diff: str = ""
    point: Mapping[str, Any] | None = None


Generator = Callable[..., "list[RunInput]"]
_GENERATORS: dict[str, Generator] = {}
_CHECKS: dict[str, Callable[..., None]] = {}


def generator(name: str, *, check: Callable[..., None] | None = None) -> Callable[[Generator], Generator]:
    """Register ``fn(project, claim, params, placement, *, facts, **options) -> list[RunInput]`` under ``name``.

    ``check(project, claim, params, placement)``, when given, is what can be known of the inputs before any host
    is contacted (`precheck`): it raises `ConfigError` for a run whose inputs could not be right."""
    def register(fn: Generator) -> Generator:
        _GENERATORS[name] = fn
        if check is not None:
            _CHECKS[name] = check
        return fn
    return register


def precheck(project, plan, placement) -> None:
    """The generator's own check of a live `reprobook.core.plan.RunPlan` on ``placement``, before anything runs
    (``reprobook plan``, ``run --dry-run`` and a run alike)."""
    name = (plan.claim.inputs or {}).get("generator")
    _load_builtin()
    if name in _CHECKS:
        _CHECKS[name](project, plan.claim, plan.params, placement)


def names() -> list[str]:
    _load_builtin()
    return sorted(_GENERATORS)


def _load_builtin() -> None:
    load_papers()  # the papers register their generators (Pesto's: pequin.configs, pequin.cluster)


def validate(raw: Mapping[str, Any] | None, *, file, key: str) -> Mapping[str, Any]:
    """A claim's ``inputs:`` checked against the registry (`ConfigError` naming file and key)."""
    if not raw:
        return {}
    if raw.get("generator") not in names():
        raise ConfigError(f"no input generator {raw.get('generator')!r} (known: {', '.join(names())})", file=file,
                          key=f"{key}.generator")
    return dict(raw)


def generate(project, plan, placement, facts: Mapping[str, Mapping] | None = None) -> list[RunInput]:
    """The inputs of a live run (a `reprobook.core.plan.RunPlan`: its claim and its resolved parameters; none
    when the claim names no generator).

    ``facts`` (host -> the facts probed on it) are there when the hosts have been surveyed: a
    generator may follow them (the login user, the CPUs to pin to)."""
    claim = plan.claim
    if not claim.inputs:
        return []
    _load_builtin()
    fn = _GENERATORS[claim.inputs["generator"]]
    made = fn(project, claim, dict(plan.params), placement, facts=facts,
              **dict(claim.inputs.get("options") or {}))
    seen = set()
    for item in made:
        if item.name in seen:
            raise ConfigError(f"{claim.key}: two generated inputs are both named {item.name!r}")
        seen.add(item.name)
    return made
