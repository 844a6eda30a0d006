"""JupyterLab widgets (ipywidgets): a claim's control panel, and a flip between its sources.

    import reprobook as rb
    rb.panel("aardvark/validator-throughput")

The panel picks a host or a cluster of ``hosts.yaml`` (with its last check),
edits the claim's parameters in a form made from the claim, launches a live
run, attaches to a recorded one or cancels it, follows it with a progress bar
and the last lines of its log, and when it ends shows the plot and the verdict
with the same calls as the claim's notebook (`reprobook.api`). Runs go through
`reprobook.remote.live` (``perform``, ``reattach``, ``status``, ``cancel``) in a
background thread, so the notebook stays usable meanwhile. Without a kernel
(the website) the panel is a note saying where it works.

``explore(key)`` is a dropdown of the claim's sources that re-plots and
re-judges on each choice.
"""

from __future__ import annotations

import html
import json
import threading
from dataclasses import dataclass
from typing import Any, Callable

import ipywidgets as w
import matplotlib.pyplot as plt
import yaml
from IPython.display import display

from reprobook import api
from reprobook.core.config import Claim, Project
from reprobook.core.plan import make_plan
from reprobook.errors import ConfigError, ReprobookError, TestbedError
from reprobook.core.runs import Run, RunStore

NOTE = "The control panel of this claim needs JupyterLab with a running kernel (make lab)."


def sources_for(claim) -> list[str]:
    """``reference`` (if the authors ship outputs) and the ids of the claim's successful recorded runs, newest first."""
    store = RunStore(api.project().settings.runs_dir)
    runs = [r.id for r in reversed(store.runs(claim))
            if r.manifest.get("source") in ("live", "import") and r.status == "succeeded"]
    return (["reference"] if claim.reference else []) + runs


def explore(key: str) -> w.VBox:
    """A dropdown of sources, and below it the plot and verdict for the chosen one."""
    claim = api.claim(key)
    choice = w.Dropdown(options=sources_for(claim) or ["auto"], description="source")
    out = w.Output()

    def show(_=None):
        out.clear_output(wait=True)
        with out:
            outputs = api.obtain(claim, choice.value, progress=False)
            measured = api.load(claim, outputs)
            verdict = api.check(claim, measured, outputs)
            if claim.plots:
                api.plot(claim, measured)
                plt.show()
            display(verdict)

    choice.observe(show, names="value")
    show()
    return w.VBox([w.HTML(f"<b>{claim.title}</b>"), choice, out])


# --------------------------------------------------------------------------- hosts and their last check

@dataclass(frozen=True)
class HostCheck:
    """The last word on a host (or cluster) for a claim: when, by what, and whether it meets the requirements."""

    target: str
    when: str                       # ISO time
    by: str                         # "run <id>" or "a check from the panel"
    shortfalls: tuple[str, ...] = ()
    error: str = ""                 # unreachable, refused: the message

    @property
    def state(self) -> str:
        return "unreachable" if self.error else "falls short" if self.shortfalls else "meets the requirements"

    def words(self) -> str:
        why = f": {self.error}" if self.error else f": {'; '.join(self.shortfalls)}" if self.shortfalls else ""
        return f"{self.state} (checked {self.when.replace('T', ' ')[:16]} UTC, by {self.by}){why}"


def recorded_check(project: Project, claim: Claim, target: str) -> HostCheck | None:
    """The check of ``target`` (a host or cluster) recorded by the latest live run of ``claim`` there, if any.

    Every live run checks its hosts against the claim's requirements before it
    starts and keeps what it found in its manifest.
    """
    def there(m: dict) -> bool:
        cluster = (m.get("placement") or {}).get("cluster", "")
        return cluster == target if target in project.hosts.clusters else (not cluster and m.get("host") == target)

    runs = [r for r in RunStore(project.settings.runs_dir).runs(claim)
            if r.manifest.get("source") == "live" and r.manifest.get("host_facts") and there(r.manifest)]
    if not runs:
        return None
    m = runs[-1].manifest
    return HostCheck(target, m.get("created", ""), f"run {runs[-1].id}", tuple(m.get("requirement_shortfalls") or ()))


def check_now(project: Project, claim: Claim, target: str) -> HostCheck:
    """Reach ``target`` (every host of a cluster at once) and judge it against the claim's requirements."""
    from reprobook.remote.placement import place, survey
    from reprobook.core.runs import utcnow
    try:
        placement = place(project, claim, target)
        with survey(project, claim, placement, allow_insufficient=True) as sv:
            short = tuple(f"{n}: {s}" if not placement.single else s
                          for n, lines in sv.shortfalls.items() for s in lines)
    except TestbedError as exc:   # the machine did not answer, refused us, or is busy
        return HostCheck(target, utcnow(), "a check from the panel", error=exc.message)
    except ReprobookError as exc:   # it cannot take the claim as it is (a role short of hosts): not "unreachable"
        return HostCheck(target, utcnow(), "a check from the panel", (exc.message,))
    return HostCheck(target, utcnow(), "a check from the panel", short)


# --------------------------------------------------------------------------- the parameter form

def _kind(default) -> type:
    like = default[0] if isinstance(default, (list, tuple)) and default else default
    return type(like)


def _shown(value) -> str:
    return "\n".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _read(text: str, kind: type):
    """A field's text as the parameter's type would have it (a string stays a string; ``abc`` for a number is
    kept as text, for `reprobook.core.plan.make_plan` to refuse with the parameter's help)."""
    if kind is str:
        return text
    try:
        return yaml.safe_load(text) if text.strip() else text
    except yaml.YAMLError:
        return text


class ParameterForm(w.VBox):
    """A field per parameter of the claim: its name, its value (a sweep: one value per line) and its help.

    `values` gives what differs from the chosen scale's values, checked by
    `reprobook.core.plan.make_plan`; each field says what is wrong with it as it is typed.
    """

    def __init__(self, claim: Claim):
        self.claim = claim
        self.fields: dict[str, w.Widget] = {}
        self.errors: dict[str, w.HTML] = {}
        self.valid = True
        self.on_validity: Callable[[bool], None] | None = None   # told whether every field is good, as they change
        rows = []
        base = make_plan(claim, {}).params
        for name, p in claim.parameters.items():
            if name == "scale" and claim.scales:
                field = w.Dropdown(options=list(claim.scales), value=base[name])
            elif _kind(p.default) is bool:
                field = w.Checkbox(value=bool(base[name]), indent=False)
            elif isinstance(p.default, (list, tuple)):
                field = w.Textarea(value=_shown(base[name]), rows=min(4, max(2, len(base[name]))))
            else:
                field = w.Text(value=_shown(base[name]))
            field.description, field.tooltip = name, p.help
            field.style = {"description_width": "11em"}
            field.layout = w.Layout(width="34em")
            field.add_class(f"reprobook-param-{name}")
            field.observe(self._check, names="value")
            self.fields[name] = field
            self.errors[name] = w.HTML()
            rows.append(w.VBox([w.HBox([field, w.HTML(f"<small>{html.escape(p.help)}</small>",
                                                      layout=w.Layout(width="30em"))]), self.errors[name]]))
        if "scale" in self.fields and claim.scales:
            self.fields["scale"].observe(self._rescale, names="value")
        super().__init__(rows)
        self.add_class("reprobook-params")

    def _given(self) -> dict[str, Any]:
        out = {}
        for name, field in self.fields.items():
            p = self.claim.parameters[name]
            if isinstance(field, (w.Checkbox, w.Dropdown)):
                out[name] = field.value
            elif isinstance(p.default, (list, tuple)):
                out[name] = [_read(line.strip(), _kind(p.default)) for line in field.value.splitlines() if line.strip()]
            else:
                out[name] = _read(field.value, _kind(p.default))
        return out

    def values(self) -> dict[str, Any]:
        """The parameters that differ from the chosen scale's values (the others are the scale's), checked.

        Raises
        ------
        ConfigError
            A value of the wrong type, or an empty sweep, with the parameter's help.
        """
        given = self._given()
        scale = {"scale": given["scale"]} if "scale" in given and self.claim.scales else {}
        base = make_plan(self.claim, scale).params
        changed = {k: v for k, v in given.items()
                   if k in scale or json.dumps(v, default=str) != json.dumps(list(base[k]) if isinstance(base[k], tuple)
                                                                               else base[k], default=str)}
        make_plan(self.claim, changed)  # refuses an unknown name or an ill-typed value
        return changed

    def field_errors(self) -> dict[str, str]:
        """What is wrong with each field, checked on its own as the command line checks ``-p NAME VALUE`` (the
        other fields at the chosen scale's values): every bad field gets its own message, not only the first."""
        given = self._given()
        scale = {"scale": given["scale"]} if "scale" in given and self.claim.scales else {}
        out = {}
        for name, value in given.items():
            try:
                make_plan(self.claim, {**scale, name: value})
            except ConfigError as exc:
                out[name] = exc.message
        return out

    def _check(self, change=None) -> None:
        bad = self.field_errors()
        for name in self.fields:
            self.errors[name].value = ("" if name not in bad else
                                       f'<span class="reprobook-param-error" style="color:#b00">'
                                       f'{html.escape(bad[name])}</span>')
        self.valid = not bad
        if self.on_validity is not None:
            self.on_validity(self.valid)

    def _rescale(self, change) -> None:
        values = make_plan(self.claim, {"scale": change["new"]}).params
        for name, field in self.fields.items():
            if name != "scale":
                field.value = values[name] if isinstance(field, w.Checkbox) else _shown(values[name])


# --------------------------------------------------------------------------- the panel

class Panel(w.VBox):
    """A claim's control panel: host, parameters, launch / attach / cancel, progress and log, plot and verdict.

    Parameters
    ----------
    claim : Claim
    poll_s : float
        How often the run's status is read while it goes on.

    Notes
    -----
    The blocking calls (`reprobook.remote.live.perform`, ``reattach``, ``cancel``, a
    host check) run in a background thread; the progress (`reprobook.remote.live.status`)
    is read in another, every ``poll_s``. A run is the same one the command line
    would make: ``reprobook status RUN_ID`` and ``reprobook attach RUN_ID`` see it.
    """

    def __init__(self, claim: Claim, *, poll_s: float = 1.0):
        self.claim, self.project, self.poll_s = claim, api.project(), poll_s
        self.checks: dict[str, HostCheck] = {}
        self.run_id: str | None = None
        self._worker: threading.Thread | None = None

        self.targets = [*(n for n in self.project.hosts.hosts if n != "local"), *self.project.hosts.clusters, "local"]
        self.host = w.Dropdown(options=self.targets, description="host", layout=w.Layout(width="34em"))
        self.host.add_class("reprobook-host")
        self.check_button = self._button("check", "reach the host and judge it against the claim's requirements",
                                         self.check_host, "reprobook-check")
        self.host_note = w.HTML()
        self.host.observe(lambda _: self._show_host(), names="value")
        self.form = ParameterForm(claim)
        self.form.on_validity = lambda ok: self._launchable()
        self.fresh = w.Checkbox(description="start a fresh run (not the recorded one with these parameters)",
                                indent=False, layout=w.Layout(width="40em"))
        self.allow_small = w.Checkbox(description="run even on a host below the claim's requirements",
                                      indent=False, layout=w.Layout(width="40em"))
        self.launch_button = self._button("launch", "run the claim live on the host (or attach to the same run)",
                                          self.launch, "reprobook-launch", style="primary")
        self.runs = w.Dropdown(description="run", layout=w.Layout(width="40em"))
        self.runs.add_class("reprobook-runs")
        self.attach_button = self._button("attach", "follow a recorded run to its end", self.attach, "reprobook-attach")
        self.cancel_button = self._button("cancel", "stop the run on its host", self.cancel, "reprobook-cancel",
                                          style="danger")
        self.cancel_button.disabled = True
        self.status = w.HTML()
        self.status.add_class("reprobook-status")
        self.bar = w.FloatProgress(value=0, min=0, max=1, description="elapsed", layout=w.Layout(width="40em"))
        self.bar.add_class("reprobook-progress")
        self.step = w.HTML()
        self.step.add_class("reprobook-step")
        self.log_tail = w.HTML()
        self.log_tail.add_class("reprobook-log")
        self.result = w.Output()
        self.result.add_class("reprobook-result")
        self._show_host()
        self._list_runs()
        super().__init__([
            w.HTML(f"<b>{html.escape(claim.title)}</b> <small>({claim.key})</small>"),
            w.HBox([self.host, self.check_button]), self.host_note, self.form, self.fresh, self.allow_small,
            w.HBox([self.launch_button, self.cancel_button]), w.HBox([self.runs, self.attach_button]),
            self.status, self.bar, self.step, self.log_tail, self.result])
        self.add_class("reprobook-panel")
        if not claim.runs_live:
            self.launch_button.disabled = self.attach_button.disabled = True
            self._say("This claim has no steps reprobook can run on a host: run them by hand (see the page) and "
                      f"record the outputs with <code>reprobook import {claim.key} FILES…</code>.")

    def _repr_mimebundle_(self, **kwargs):
        """The widget in JupyterLab; elsewhere (the website, a notebook viewer) a note saying where it works."""
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"{self.claim.key}: {NOTE}"
        bundle["text/html"] = f'<p class="reprobook-panel-note"><em>{html.escape(NOTE)}</em></p>'
        return bundle

    @staticmethod
    def _button(label: str, tooltip: str, action: Callable, css: str, style: str = "") -> w.Button:
        b = w.Button(description=label, tooltip=tooltip, button_style=style)
        b.add_class(css)
        b.on_click(lambda _: action())
        return b

    # -- hosts

    def last_check(self, target: str) -> HostCheck | None:
        """The latest of the panel's own check of ``target`` and the one its latest run here recorded."""
        mine, recorded = self.checks.get(target), recorded_check(self.project, self.claim, target)
        return max((c for c in (mine, recorded) if c), key=lambda c: c.when, default=None)

    def _show_host(self) -> None:
        """Each host's and cluster's last check beside its name; the chosen one's in full below."""
        target = self.host.value
        labels = []
        for name in self.targets:
            last = self.last_check(name)
            labels.append((f"{name} — {last.state}" if last else name, name))
        if labels != list(self.host.options):
            self.host.options = labels
            self.host.value = target
        check = self.last_check(target)
        clusters = self.project.hosts.clusters
        what = ("cluster: " + ", ".join(f"{r} = {' '.join(m)}" for r, m in clusters[target].roles.items())
                if target in clusters else self.project.hosts.hosts[target].description)
        self.host_note.value = (f"<small>{html.escape(what or '')}</small><br>" if what else "") + \
            f'<span class="reprobook-host-check">{html.escape(check.words() if check else "not checked yet")}</span>'

    def check_host(self) -> threading.Thread:
        """Reach the chosen host (or cluster) and judge it, in the background (the thread doing it is returned)."""
        target = self.host.value
        self.host_note.value = f'<span class="reprobook-host-check">checking {html.escape(target)}…</span>'

        def work():
            try:
                self.checks[target] = check_now(self.project, self.claim, target)
            except Exception as exc:  # noqa: BLE001 - said in the panel, where the reader is looking
                why = html.escape(f"{type(exc).__name__}: {exc}")
                self.host_note.value = (f'<span class="reprobook-host-check" style="color:#b00">the check of '
                                        f'{html.escape(target)} broke: {why}</span>')
                return
            self._show_host()
        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        return thread

    # -- runs

    def _list_runs(self) -> None:
        runs = [r for r in reversed(RunStore(self.project.settings.runs_dir).runs(self.claim))
                if r.manifest.get("source") == "live"]
        chosen = self.runs.value
        self.runs.options = [(f"{r.id} — {r.status}, {r.manifest.get('host', '?')}, "
                              f"{r.manifest.get('created', '')[:16].replace('T', ' ')}", r.id) for r in runs]
        ids = [r.id for r in runs]
        self.runs.value = chosen if chosen in ids else (ids[0] if ids else None)  # the newest by default

    def _launchable(self) -> None:
        """Launch is offered while nothing runs here, the claim runs live and every field of the form is good."""
        busy = self._worker is not None and self._worker.is_alive()
        self.launch_button.disabled = busy or not self.claim.runs_live or not self.form.valid
        self.launch_button.tooltip = ("fix the parameters marked in red first" if not self.form.valid else
                                      "run the claim live on the host (or attach to the same run)")

    def launch(self) -> None:
        """Run the claim live with the form's parameters on the chosen host (attaching to the same run if any)."""
        try:
            params = self.form.values()
        except ConfigError as exc:
            self._say(html.escape(exc.message), error=True)
            return
        target, new, allow = self.host.value, self.fresh.value, self.allow_small.value
        from reprobook.remote.live import perform
        found: dict[str, str] = {}
        self._go(lambda: perform(self.project, self.claim, target, params, new=new, allow_insufficient=allow,
                                 progress=False, poll_s=self.poll_s, on_run=lambda run: found.update(id=run.id)),
                 find=lambda: found.get("id"), what=f"launching on {target}", where=target)

    def attach(self) -> None:
        """Follow the chosen recorded run to its end (`reprobook.remote.live.reattach`), then judge it."""
        run_id = self.runs.value
        if not run_id:
            self._say("no recorded live run of this claim to attach to", error=True)
            return
        from reprobook.remote.live import reattach
        self._go(lambda: reattach(self.project, run_id, progress=False, poll_s=self.poll_s), find=lambda: run_id,
                 what=f"attaching to {run_id}", where="")

    def cancel(self) -> None:
        """Stop the run on its host (`reprobook.remote.live.cancel`); the launch then ends as cancelled."""
        run_id = self.run_id
        if not run_id:
            return
        from reprobook.remote.live import cancel
        self.cancel_button.disabled = True
        self._say(f"cancelling run <code>{run_id}</code>…")

        def work():
            try:
                st = cancel(self.project, run_id)
                self._say(f"run <code>{run_id}</code>: {st.state}")
            except ReprobookError as exc:
                self._say(f"could not cancel run <code>{run_id}</code>: {html.escape(exc.message)}", error=True)
        threading.Thread(target=work, daemon=True).start()

    def _go(self, call: Callable[[], Run], *, find: Callable[[], str | None], what: str, where: str) -> None:
        if self._worker is not None and self._worker.is_alive():
            self._say(f"run <code>{self.run_id}</code> is still going: cancel it, or wait for it to end", error=True)
            return
        self.result.clear_output()
        self.bar.value, self.bar.bar_style, self.step.value, self.log_tail.value = 0, "info", "", ""
        self.launch_button.disabled = self.attach_button.disabled = True
        self.run_id = None
        self._say(what + "…")
        outcome: dict[str, Any] = {}

        def work():
            try:
                outcome["run"] = call()
            except Exception as exc:  # noqa: BLE001 - shown in the panel, where the reader is looking
                outcome["error"] = exc
        self._worker = threading.Thread(target=work, daemon=True)
        self._worker.start()
        threading.Thread(target=self._follow, args=(find, outcome, where), daemon=True).start()

    def _follow(self, find: Callable[[], str | None], outcome: dict, where: str) -> None:
        """Poll the run's status while the worker waits for it; then show how it ended."""
        from reprobook.remote.live import status
        while self._worker.is_alive():
            if self.run_id is None:
                self.run_id = find()
                if self.run_id:
                    self.cancel_button.disabled = False
                    self._say(f"run <code>{self.run_id}</code>" + (f" on {html.escape(where)}" if where else ""))
            if self.run_id:
                self._poll(status)
            self._worker.join(self.poll_s)
        self.cancel_button.disabled = True
        run_id = self.run_id or (outcome["run"].id if "run" in outcome else None)
        self.run_id = run_id
        if run_id:
            self._poll(status)
        # the list of runs first: attach is offered once there is the ended run to choose
        self._list_runs()
        self.attach_button.disabled = not self.claim.runs_live
        self._launchable()
        self._show_host()
        if "error" in outcome:
            exc = outcome["error"]
            self.bar.bar_style = "danger"
            self._say(html.escape(getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"), error=True)
            return
        self.bar.bar_style = "success"
        self.bar.value = self.bar.max
        self._say(f"run <code>{run_id}</code> ended; judging it…")
        self._judge(run_id)

    def _poll(self, status) -> None:
        try:
            _, st = status(self.project, self.run_id)
        except ReprobookError as exc:
            self.step.value = f"<small>status unavailable: {html.escape(exc.message)}</small>"
            return
        from reprobook.remote.jobs import progress_words
        from reprobook.remote.steps import expected_left_s
        expected = (self.claim.expected_minutes or 0) * 60
        left = expected_left_s(self.project.paper(self.claim.paper), make_plan(self.claim, self._run_params()),
                               st.step, st.points_done, st.point_s)
        if left is not None and not st.done:
            expected = st.elapsed_s + left  # skipped and fast steps bring the expected end nearer
        self.bar.max = max(expected, st.elapsed_s * 1.1, 1.0)
        self.bar.value = st.elapsed_s
        if st.state == "unknown":
            self.step.value = "<small>starting: checking out and preparing the job…</small>"
            return
        about = f" of about {expected:.0f} s" if expected else ""
        self.step.value = (f"<small>{st.state}, {st.elapsed_s:.0f} s{about} · "
                           f"{html.escape(progress_words(st) + st.last_line[-120:])}</small>")
        self.log_tail.value = (f'<pre style="max-height:14em;overflow:auto;font-size:85%">'
                               f'{html.escape(st.log_tail)}</pre>')

    def _run_params(self) -> dict:
        """The parameters the followed run was started with (from its manifest), else the form's."""
        try:
            return RunStore(self.project.settings.runs_dir).load(self.run_id).manifest.get("parameters") or {}
        except ReprobookError:
            return {}

    def _judge(self, run_id: str) -> None:
        """The notebook's calls on the run: obtain, load, plot, check."""
        from IPython.core.pylabtools import print_figure
        from IPython.display import Image
        try:
            outputs = api.obtain(self.claim, run_id, progress=False)
            measured = api.load(self.claim, outputs)
            verdict = api.check(self.claim, measured, outputs)
            if self.claim.plots:
                fig = api.plot(self.claim, measured)
                self.result.append_display_data(Image(print_figure(fig, "png", bbox_inches="tight")))
                plt.close(fig)
            self.result.append_display_data(verdict)
            self._say(f"run <code>{run_id}</code>: {html.escape(verdict.says)}")
        except Exception as exc:  # noqa: BLE001 - said in the panel (a thread has nowhere else to say it)
            why = exc.message if isinstance(exc, ReprobookError) else f"{type(exc).__name__}: {exc}"
            self._say(f"run <code>{run_id}</code> ended, but it cannot be judged: {html.escape(why)}", error=True)

    def _say(self, message_html: str, *, error: bool = False) -> None:
        colour = ' style="color:#b00"' if error else ""
        self.status.value = f'<span class="reprobook-status-text"{colour}>{message_html}</span>'


def panel(key: str | Claim, *, poll_s: float = 1.0) -> Panel:
    """The claim's control panel in JupyterLab: host, parameters, launch / attach / cancel, progress, plot and verdict.

    See `Panel`. In a notebook, show it by making it the cell's value; on the website (no kernel)
    it is a note saying it needs JupyterLab.

    Examples
    --------
    >>> rb.panel(claim)  # the last line of a cell
    """
    return Panel(api.claim(key) if isinstance(key, str) else key, poll_s=poll_s)


# --------------------------------------------------------------------------- CloudLab

def _classed(widget, css: str):
    """``widget`` with the CSS class the tests and the page's styles find it by."""
    widget.add_class(css)
    return widget


class CloudLabPanel(w.VBox):
    """From a CloudLab account to a checked cluster, in JupyterLab: what ``reprobook cloudlab`` does.

    Pick a claim (or a paper) and a scale: its profile (a geni-lib script the portal runs) is shown,
    with the nodes it asks for, and offered as a file to download. Upload the experiment's manifest
    (the portal's "Manifest" tab, saved as XML), name the cluster: it is written into ``hosts.yaml``
    and the SSH config, each host's key is recorded once its fingerprint is confirmed, and every
    host is checked at once. The import runs in a background thread; its report is shown below.
    """

    def __init__(self, claim: str | None = None):
        from reprobook import cloudlab
        self.project = api.project()
        live = [c.key for c in cloudlab.live_claims(self.project)]
        papers = sorted({k.split("/")[0] for k in live})
        self.target = w.Dropdown(options=[*live, *papers], value=claim if claim in live else (live[0] if live else None),
                                 description="claim", layout=w.Layout(width="34em"))
        self.scale = w.ToggleButtons(options=["paper", "rehearsal"], description="scale")
        self.profile_button = Panel._button("profile", "write the CloudLab profile of the claim or paper",
                                            self.profile, "reprobook-cloudlab-profile", style="primary")
        self.nodes = _classed(w.HTML(), "reprobook-cloudlab-nodes")
        self.download = _classed(w.HTML(), "reprobook-cloudlab-download")
        self.script = w.Textarea(layout=w.Layout(width="60em", height="14em"), disabled=True)
        self.upload = w.FileUpload(accept=".xml", multiple=False, description="manifest")
        self.upload.add_class("reprobook-cloudlab-upload")
        self.cluster = w.Text(value="cloudlab", description="cluster", layout=w.Layout(width="24em"))
        self.user = w.Text(placeholder="your CloudLab user name (when the project has several)", description="user",
                           layout=w.Layout(width="34em"))
        self.for_claim = w.Dropdown(options=["(roles from the node names)", *live], description="roles of",
                                    layout=w.Layout(width="34em"))
        self.confirmed = w.Checkbox(description="record the host keys shown (I checked them on the portal)",
                                    indent=False, layout=w.Layout(width="40em"))
        self.import_button = Panel._button("import and check", "write the cluster into hosts.yaml and check every host",
                                           self.import_manifest, "reprobook-cloudlab-import", style="primary")
        self.status = _classed(w.HTML(), "reprobook-status")
        self.report = _classed(w.HTML(), "reprobook-cloudlab-report")
        self._worker: threading.Thread | None = None
        super().__init__([
            w.HTML("<b>CloudLab</b>: a profile for the portal, and the experiment's manifest back into hosts.yaml"),
            w.HBox([self.target, self.scale, self.profile_button]), self.nodes, self.download, self.script,
            w.HTML("<hr>"), self.upload, w.HBox([self.cluster, self.for_claim]), self.user, self.confirmed,
            self.import_button, self.status, self.report])
        self.add_class("reprobook-cloudlab")

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        note = "The CloudLab panel needs JupyterLab with a running kernel (make lab)."
        bundle["text/plain"] = note
        bundle["text/html"] = f'<p class="reprobook-panel-note"><em>{html.escape(note)}</em></p>'
        return bundle

    _say = Panel._say   # the same status line as the claim's panel

    def profile(self) -> str | None:
        """Write the chosen target's profile: shown, summarised node by node, and offered for download."""
        import base64
        from reprobook import cloudlab
        try:
            text, nodes = cloudlab.make_profile(self.project, self.target.value, self.scale.value)
        except ReprobookError as exc:
            self._say(html.escape(exc.message), error=True)
            return None
        rows = "".join(f"<tr><td>{html.escape(n.role)}</td><td>{len(n.names)}</td><td>{html.escape(', '.join(n.names))}"
                       f"</td><td>{html.escape(n.hardware_type)}</td><td><code>{html.escape(n.disk_image)}</code></td></tr>"
                       for n in nodes)
        self.nodes.value = ("<table><tr><th>role</th><th>nodes</th><th>names</th><th>hardware</th><th>disk image</th></tr>"
                            f"{rows}</table>")
        name = self.target.value.replace("/", "-") + f"-{self.scale.value}.py"
        data = base64.b64encode(text.encode()).decode()
        self.download.value = (f'<a download="{html.escape(name)}" href="data:text/x-python;base64,{data}">'
                               f"download {html.escape(name)}</a>: on the portal, Experiments → Create Experiment "
                               f"Profile → Source → upload it; then instantiate it")
        self.script.value = text
        self._say(f"profile of {html.escape(self.target.value)} at {self.scale.value} scale: "
                  f"{sum(len(n.names) for n in nodes)} nodes")
        return text

    def _uploaded(self) -> tuple[str, bytes] | None:
        value = self.upload.value
        items = list(value.values()) if isinstance(value, dict) else list(value)   # ipywidgets 7 and 8
        if not items:
            return None
        item = items[0]
        name = item.get("name") or (item.get("metadata") or {}).get("name") or "manifest.xml"
        return name, bytes(item["content"])

    def import_manifest(self) -> threading.Thread | None:
        """Save the uploaded manifest under its own name, then import and check it in a background thread."""
        import io
        import re
        from contextlib import redirect_stdout
        from pathlib import Path
        from reprobook import cloudlab
        got = self._uploaded()
        if got is None:
            self._say("upload the experiment's manifest first (the portal's Manifest tab, saved as an .xml file)",
                      error=True)
            return None
        if self._worker is not None and self._worker.is_alive():
            self._say("an import is still going on", error=True)
            return None
        name, content = got
        keep = Path(self.project.settings.runs_dir) / "cloudlab-manifests" / re.sub(r"[^A-Za-z0-9._-]", "_", Path(name).name)
        keep.parent.mkdir(parents=True, exist_ok=True)
        keep.write_bytes(content)        # kept: the manifest is what the cluster was written from
        claim = None if self.for_claim.value.startswith("(") else self.for_claim.value
        lines: list[str] = []
        self._say(f"importing {html.escape(name)} as cluster <code>{html.escape(self.cluster.value)}</code> "
                  "and checking every host …")
        self.import_button.disabled = True

        def work():
            buf = io.StringIO()
            try:
                with redirect_stdout(buf):
                    code = cloudlab.import_manifest(self.project, keep, self.cluster.value.strip(),
                                                    user=self.user.value.strip() or None, claim_key=claim,
                                                    assume_yes=self.confirmed.value, out=lines.append)
                said = [*lines, *buf.getvalue().splitlines()]
                if any("no terminal to confirm on" in line for line in said):   # the command line's words
                    said.append("In this panel: check the hosts' key fingerprints on the portal (each node's page), "
                                "tick the box to record them, and import again.")
                self.report.value = "<pre>" + html.escape("\n".join(said)) + "</pre>"
                self._say(f"cluster <code>{html.escape(self.cluster.value)}</code>: "
                          + ("every host answers" + (" and meets its roles' requirements" if claim else "")
                             if code == 0 else "see the report: some hosts did not answer or fall short"),
                          error=code != 0)
                self.project = api.project()   # hosts.yaml changed: the next import or panel sees the cluster
            except ReprobookError as exc:
                self.report.value = "<pre>" + html.escape("\n".join(lines)) + "</pre>" if lines else ""
                self._say(f"{html.escape(name)}: {html.escape(exc.message)}", error=True)
            except Exception as exc:  # noqa: BLE001 - said in the panel (a thread has nowhere else to say it)
                self._say(html.escape(f"{type(exc).__name__}: {exc}"), error=True)
            finally:
                self.import_button.disabled = False
        self._worker = threading.Thread(target=work, name="reprobook-cloudlab-import", daemon=True)
        self._worker.start()
        return self._worker


def cloudlab_panel(claim: str | None = None) -> CloudLabPanel:
    """The CloudLab panel in JupyterLab: a claim's profile to download, a manifest to upload and check.

    Examples
    --------
    >>> rb.cloudlab_panel("pesto/sample-runs")  # the last line of a cell
    """
    return CloudLabPanel(claim)
