"""Published numbers as data: the paper's values a claim is judged against, as rows of a table.

The numbers themselves are `reprobook.core.model.PublishedNumber` records made from a paper file;
this is the one place they become a DataFrame (for plots, checks and a paper's loaders).
"""

from __future__ import annotations

from typing import Iterable

import pandas as pd

from reprobook.core.model import PublishedNumber


def published_frame(numbers: Iterable[PublishedNumber], *, y: str, sources: str = "target") -> pd.DataFrame:
    """The published numbers as rows: their labels as columns, the value as ``y``, and provenance.

    Numbers about another measured column (``measure`` not ``y``) are left out.
    ``sources="others"`` gives the values of the non-target sources instead.
    """
    rows = []
    for n in numbers:
        if n.measure and n.measure != y:
            continue
        values = n.sources[:1] if sources == "target" else n.others
        if sources == "target" and not values:
            values = (None,)
        for pv in values:
            rows.append({**dict(n.labels), y: n.value if pv is None else pv.value, "published_id": n.id,
                         "precision": n.precision if pv is None else pv.precision,
                         "source": n.source if pv is None else pv.source,
                         "source_name": "" if pv is None else pv.name})
    return pd.DataFrame(rows)
