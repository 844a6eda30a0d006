"""Heavy libraries imported when first used, not when a module that uses them is imported.

pandas and numpy take a third of a second of CPU to import. Reading the configuration imports the check kinds and
every paper's loaders (they register themselves by name), and those compute with pandas; but ``reprobook claims``,
``plan`` or ``run --dry-run`` never computes a table. A module writes::

    from reprobook.lazy import lazy
    pd = lazy("pandas")

and uses ``pd`` as it would the module: the first attribute asked for (``pd.DataFrame``) imports pandas, and from
then on the names are the module's own. ``sys.modules`` is not touched, so no other code sees a stand-in.
With ``from __future__ import annotations``, annotations such as ``-> pd.DataFrame`` import nothing.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType


class LazyModule(ModuleType):
    """A module's stand-in: imports the module on the first attribute asked for, then holds its names."""

    def __getattr__(self, name: str):
        module = importlib.import_module(self.__name__)
        self.__dict__.update(module.__dict__)
        return getattr(module, name)


def lazy(name: str) -> ModuleType:
    """The module ``name`` if it is imported already, else a stand-in that imports it when first used."""
    return sys.modules.get(name) or LazyModule(name)
