"""Shared test settings: hypothesis profiles, grstats imported by its name."""

from __future__ import annotations

import importlib.abc
import os
import sys

from hypothesis import HealthCheck, settings

# 200 examples a property, in CI too. The strategies draw from small domains on purpose (a
# few UUIDs and tags, GNOs near 1 and near GNO_MAX: tests/agent/gtid/model.py), so 200
# examples reach every case class the properties exist for, and each CI run (a fresh clone, no
# example database) draws new ones. 600 took the GTID properties 97 s on 2 cores, 200 a third.
settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# HYPOTHESIS_PROFILE chooses one (.ci/floors runs its tests with "dev": the versions are
# what it proves, and the main run has had the ci profile's examples).
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


class _BareFolderImports(importlib.abc.MetaPathFinder):
    """Refuses ``import agent`` and the like, so code and examples import ``grstats.agent``.

    The tests put the checkout on sys.path (for ``tests.*``), where the folders would otherwise
    import as top-level packages beside grstats.X, as no installed grstats allows.
    """

    FOLDERS = frozenset({"agent", "collector", "spark", "proto"})

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        """Raise ImportError for a folder of the checkout imported by its bare name."""
        del path, target
        if fullname in self.FOLDERS:
            message = (
                f"import grstats.{fullname}, not {fullname} (the folder is grstats.{fullname})"
            )
            raise ImportError(message, name=fullname)


sys.meta_path.insert(0, _BareFolderImports())
