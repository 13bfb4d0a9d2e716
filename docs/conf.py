"""Sphinx configuration of the provider's documentation (``make docs``)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))
# Importing the operators for autodoc imports Airflow, which would otherwise create its
# configuration under the user's home.
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="analytics-docs-airflow-"))

# autodoc imports modules with typing.TYPE_CHECKING set; pydantic and Airflow (whose settings
# build pydantic models) are imported first, as they would be at run time.
import airflow  # noqa: E402, F401
import pydantic  # noqa: E402, F401
from emulator_facts import substitutions  # noqa: E402

from airflow_provider_analytics import __version__  # noqa: E402
from airflow_provider_analytics.client.config import connection_table  # noqa: E402

project = "airflow-provider-analytics"
author = "airflow-provider-analytics contributors"
copyright = "the airflow-provider-analytics contributors; Apache License 2.0"
release = version = __version__

# figures: the site's charts and diagrams, drawn when the build starts (docs/_ext/figures.py)
extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
    "viewcode_anchors",
    "figures",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]

myst_enable_extensions = ["colon_fence", "substitution"]
# The emulator's sizes and dates, from its code: {{ emulator_cohort_range }} and the others.
# The connection page's table of settings, from their one declaration (ClientConfig and
# ConnectionSettings), as the connection form is: {{ connection_settings }}.
myst_substitutions = {**substitutions(), "connection_settings": connection_table()}
myst_heading_anchors = 3
# Pages that include README sections start below the page's own title level.
suppress_warnings = ["myst.header"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"show-inheritance": True}

html_theme = "furo"
html_title = f"airflow-provider-analytics {release}"
html_short_title = "airflow-provider-analytics"
html_static_path = ["_static"]
html_css_files = ["site.css"]
html_theme_options = {
    "navigation_with_keys": True,
    "source_repository": "https://github.com/airflow-provider-analytics/airflow-provider-analytics/",
    "source_branch": "main",
    "source_directory": "docs/",
}
html_permalinks_icon = "#"
pygments_style = "friendly"
