"""The JupyterLab panel lists the claim's sources and shows the same verdict as the notebook."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")


def test_explore_lists_sources_and_builds_panel(mirror):
    from reprobook import widgets
    box = widgets.explore("aardvark/archive-throughput")
    title, dropdown, out = box.children
    assert "Archive throughput" in title.value
    assert list(dropdown.options) == ["reference"]
    assert dropdown.value == "reference"
