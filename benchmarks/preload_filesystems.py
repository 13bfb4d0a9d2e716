"""A module for ``[core] mp_forkserver_preload``: importing it registers Airflow's filesystems
(the installed providers' ``ObjectStoragePath`` schemes) in the fork server, so every worker and
task forked from it finds them registered instead of discovering them again.

Used by ``worker_preload.py``; a deployment would keep such a module of its own on the
workers' path.
"""

from __future__ import annotations

from airflow.sdk.io.fs import has_fs

has_fs("file")
