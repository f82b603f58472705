"""The Python file PyG writes for each message-passing layer class, removed once it is imported.

PyG's :class:`~torch_geometric.nn.MessagePassing` compiles a layer class's ``propagate`` from a
Jinja template the first time the class is built in a process: it renders the source, writes it to
a file in the temp directory (``torch_geometric.template.module_from_template``, with
``delete=False``) and imports it, and never removes the file. Every process that builds a model (a
``graphmert`` command, each Dask worker, each test worker) left one behind: 548 had gathered in
``/tmp`` on the machine the project is developed on. The imported module needs its file no more
(the project never scripts a layer with TorchScript, which would read the source again), so the
layer removes it. Hand-written because PyG has no option to keep the file elsewhere or delete it.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

__all__ = ["remove_propagate_file"]


def remove_propagate_file(cls: type) -> None:
    """Remove the file PyG rendered ``cls.propagate`` into, if it is still in the temp directory.

    Call it after ``MessagePassing.__init__`` (which renders and imports the module the first time);
    later calls find nothing to remove. Only a file named as PyG names it, in the temp directory, is
    ever removed; one that cannot be removed (gone already, a read-only temp dir) is left, since the
    layer works without it either way."""
    name = f"{cls.__module__}_{cls.__name__}_propagate"
    path = getattr(sys.modules.get(name), "__file__", None)
    if not path:
        return
    path = Path(path)
    if path.parent == Path(tempfile.gettempdir()) and path.name.startswith(name + "_") and path.suffix == ".py":
        try:
            os.unlink(path)
        except OSError:
            pass
