"""spark.worker_daemon: local workers import the installed pyspark ahead of the zips."""

from __future__ import annotations

from typing import TYPE_CHECKING

from grstats.spark.worker_daemon import installed_first

if TYPE_CHECKING:
    from pathlib import Path


def _installed_pyspark(site: Path) -> tuple[str, str]:
    """Make ``site/pyspark`` with its two zips; return the zips' paths."""
    lib = site / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    pyspark_zip, py4j_zip = lib / "pyspark.zip", lib / "py4j-0.10.9.9-src.zip"
    pyspark_zip.write_bytes(b"")
    py4j_zip.write_bytes(b"")
    return str(pyspark_zip), str(py4j_zip)


def test_the_installed_package_moves_ahead_of_its_zips(tmp_path: Path) -> None:
    """The zips' site directory comes just before the first zip; the rest keep their order."""
    site = tmp_path / "site-packages"
    pyspark_zip, py4j_zip = _installed_pyspark(site)
    path = ["/work", pyspark_zip, py4j_zip, "/usr/lib/python3.11", str(site)]
    assert installed_first(path) == [
        "/work",
        str(site),
        pyspark_zip,
        py4j_zip,
        "/usr/lib/python3.11",
    ]


def test_a_site_already_ahead_stays_where_it_is(tmp_path: Path) -> None:
    """When the site directory already comes first nothing moves."""
    site = tmp_path / "site-packages"
    pyspark_zip, py4j_zip = _installed_pyspark(site)
    path = [str(site), pyspark_zip, py4j_zip]
    assert installed_first(path) == path


def test_zips_of_a_spark_distribution_are_left_alone(tmp_path: Path) -> None:
    """A zip not inside a pyspark package (``$SPARK_HOME/python/lib``) keeps its place."""
    lib = tmp_path / "spark-4.0.0-bin" / "python" / "lib"
    lib.mkdir(parents=True)
    path = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip"), "/usr/lib"]
    assert installed_first(path) == path


def test_a_directory_named_pyspark_without_a_package_is_left_alone(tmp_path: Path) -> None:
    """Without ``pyspark/__init__.py`` beside the zips nothing is known to match them."""
    lib = tmp_path / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    path = [str(lib / "pyspark.zip"), "/usr/lib"]
    assert installed_first(path) == path
