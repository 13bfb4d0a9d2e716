"""Sphinx extension: the source pages' "[docs]" links lead to where an object is indexed.

``sphinx.ext.viewcode`` links each object of a source page to the last page that described
it, even where the description is marked ``:no-index:`` and so has no anchor to land on.
After viewcode reads a page, this points such objects back at the page that indexes them
(or, when no page does yet, drops both the link and the signature's "[source]" link, whose
back-link could land nowhere; viewcode adds them again when an indexing page is read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sphinx import addnodes
from sphinx.ext.viewcode import viewcode_anchor

if TYPE_CHECKING:
    from docutils import nodes
    from sphinx.application import Sphinx


def _relink(app: Sphinx, doctree: nodes.document) -> None:
    env = app.env
    modules: dict[str, Any] = getattr(env, "_viewcode_modules", {})
    indexed: dict[str, str] = env.domaindata.setdefault("viewcode_anchors", {})
    for signature in doctree.findall(addnodes.desc_signature):
        fullname, module = signature.get("fullname"), signature.get("module")
        if not fullname or not module:
            continue
        key = f"{module}.{fullname}"
        entry = modules.get(module)
        if signature["ids"]:
            indexed[key] = env.docname
            continue
        if not isinstance(entry, tuple) or entry[2].get(fullname) != env.docname:
            continue
        used = entry[2]
        if key in indexed:
            used[fullname] = indexed[key]
        else:
            del used[fullname]
            for anchor in list(signature.findall(viewcode_anchor)):
                anchor.parent.remove(anchor)


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("sphinx.ext.viewcode")
    app.connect("doctree-read", _relink, priority=600)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}
