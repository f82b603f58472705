#!/usr/bin/env python
"""What a GPU machine without a package registry needs to run a config's stages: one folder to copy.

    .venv/bin/python scripts/gpu_bundle.py [--config configs/biored-gpu.yaml] [--python 3.12]
        [--out build/gpu-bundle] [--check PYTHON]
    make gpu-bundle                       # the same, for configs/biored-gpu.yaml

The lent GPU machines (docs/PIPELINE.md, "On a GPU") hold PyTorch, numpy, scikit-learn, pandas,
pyarrow and most of the scientific stack, but not spaCy, scispaCy, rdflib, pyoxigraph, curies,
pydantic, omegaconf or Dask, and they reach no package registry. The bundle is, in ``--out``:

* ``site.tar.xz``: the :data:`PACKAGES` that machine lacks, as wheels for its Python (``--python``,
  manylinux x86-64), each at the version this checkout's environment runs (so the code meets the
  versions its tests ran against), unpacked into one folder to put on ``PYTHONPATH``. Test suites,
  Cython and C sources and compiled caches are left out and the extensions stripped of their
  symbols: on 2026-12-04, 224 MB unpacked became 88 MB, 19 MB packed (the machine's numpy 2 runs
  them);
* ``shared/``: every file or folder under ``../shared`` that the config names (corpus, seed KG,
  relation and gold files, vocabularies), in the same layout, for a machine without ``../shared``;
* ``env.sh``: sourced there in the checkout, it unpacks the packages to ``/tmp/graphmert-site``,
  links ``../shared`` to the bundle's copy when none exists, and sets ``PYTHONPATH``.

The bundle is built in ``--out`` + ``.partial`` and put in place whole, so an interrupted build
leaves no half bundle; an existing ``--out`` is replaced only when it holds nothing but a bundle's
own files. With
``--check PYTHON`` (a local interpreter of that version with numpy installed) the bundle's
packages are imported by it before the bundle is called done. Building needs pip's access to the
package registry; nothing here runs at a stage's run time. Written here rather than with a packaging
tool because what it does is pip's own download and install for another platform, plus the pruning
a size-limited copy needs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Iterable, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graphmert.config.loading import load_config, to_dict  # noqa: E402
from graphmert.errors import GraphmertError  # noqa: E402

__all__ = ["PACKAGES", "PLATFORMS", "IMPORTS", "BundleError", "pins", "download_command", "install_command",
           "prune", "shared_paths", "copy_shared", "env_script", "build_site", "main"]

# The runtime dependencies (pyproject.toml) and their own that the lent H200's image lacks (its list:
# the device library's KINDS.md, read 2026-11-17), by distribution name. gensim is left out: only
# the recognizer's word vectors (the ``ner`` stage, CPU work) read it, and its 4.3 wheels need numpy<2.
PACKAGES = (
    # spaCy and scispaCy (the recognizer and the text analyzer, imported by the extract stage)
    "spacy", "spacy-legacy", "spacy-loggers", "thinc", "blis", "cymem", "preshed", "murmurhash", "srsly",
    "wasabi", "weasel", "catalogue", "confection", "cloudpathlib", "smart-open", "scispacy", "pysbd",
    # configs, prefixes, RDF and the SPARQL store
    "omegaconf", "curies", "pydantic", "pydantic-core", "annotated-types", "typing-inspection", "rdflib",
    "pyoxigraph",
    # Dask, so that the default scheduler runs there too (--scheduler synchronous needs none of it)
    "dask", "distributed", "partd", "locket", "tblib", "tornado", "zict",
)

# what pip matches a manylinux x86-64 machine's wheels by (pip matches each tag exactly)
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64")

# what --check imports, one module per top-level need
IMPORTS = ("spacy", "scispacy.abbreviation", "thinc.api", "omegaconf", "curies", "rdflib", "pyoxigraph",
           "dask", "distributed")

# what a bundle folder holds (main replaces a folder of these alone)
_BUNDLE_FILES = {"site.tar.xz", "shared", "env.sh"}

# removed from the unpacked packages: nothing imports them at run time
_PRUNED_DIRS = {"tests", "test", "__pycache__"}
_PRUNED_SUFFIXES = {".pyx", ".pxd", ".pxi", ".c", ".cc", ".cpp", ".h", ".hpp", ".pyc"}


class BundleError(GraphmertError):
    """The bundle cannot be built as asked (a package not installed here, a config path missing)."""


def pins(names: Sequence[str] = PACKAGES) -> list[str]:
    """``name==version`` for each of ``names`` at the version this interpreter's environment holds."""
    out, missing = [], []
    for name in names:
        try:
            out.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        raise BundleError(f"not installed in {sys.prefix}: {', '.join(missing)} (run `make install` first; "
                          "the bundle carries the versions this environment runs)")
    return out


def _target_flags(python: str) -> list[str]:
    return ["--only-binary=:all:", "--python-version", python, "--implementation", "cp",
            *(f for p in PLATFORMS for f in ("--platform", p))]


def download_command(requirements: Sequence[str], python: str, wheels: Path) -> list[str]:
    """pip downloading each pinned requirement's wheel for ``python`` (no dependencies: the list is whole)."""
    return [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", *_target_flags(python),
            "-d", str(wheels), *requirements]


def install_command(wheel_files: Sequence[Path], python: str, site: Path) -> list[str]:
    """pip unpacking ``wheel_files`` into ``site`` for ``python``, offline and without byte-compiling."""
    return [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-compile",
            *_target_flags(python), "--target", str(site), *map(str, wheel_files)]


def prune(site: Path) -> tuple[int, int]:
    """Remove test suites, sources and caches from ``site`` and strip its extensions' symbols (where
    ``strip`` exists); the size before and after, in bytes. Metadata (``*.dist-info``) stays: spaCy
    finds its registered functions through it."""
    before = _size(site)
    for path in sorted(site.rglob("*"), key=lambda p: -len(p.parts)):
        if path.is_dir() and path.name in _PRUNED_DIRS and not path.parent.name.endswith(".dist-info"):
            shutil.rmtree(path)
        elif path.is_file() and path.suffix in _PRUNED_SUFFIXES:
            path.unlink()
    strip = shutil.which("strip")
    libraries = [str(p) for p in site.rglob("*.so*") if p.is_file()]
    if strip and libraries:
        subprocess.run([strip, "--strip-unneeded", *libraries], check=True)
    return before, _size(site)


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def shared_paths(config: str | Path, root: Path = ROOT) -> list[Path]:
    """Every path under ``../shared`` that ``config`` names (any section, lists and typed sources
    included), relative to ``root``'s parent's ``shared`` folder, sorted; each must exist."""
    found: set[str] = set()

    def walk(value) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)
        elif isinstance(value, str) and Path(value).parts[:2] == ("..", "shared"):
            found.add(value)

    walk(to_dict(load_config(config)))
    out = []
    for value in sorted(found):
        rel = Path(*Path(value).parts[2:])
        if not (root.parent / "shared" / rel).exists():
            raise BundleError(f"{config}: names {value}, which does not exist beside this checkout")
        out.append(rel)
    return out


def copy_shared(paths: Iterable[Path], shared: Path, out: Path) -> int:
    """Copy each of ``paths`` (relative to ``shared``) to ``out`` in the same layout; bytes copied."""
    total = 0
    for rel in paths:
        src, dst = shared / rel, out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
            total += _size(dst)
        else:
            shutil.copy2(src, dst)
            total += dst.stat().st_size
    return total


def env_script(bundle: str) -> str:
    """The ``env.sh`` a GPU machine sources in the checkout (``bundle``: the bundle's folder, relative)."""
    return f"""# source {bundle}/env.sh   (on the GPU machine, in the repository's root; scripts/gpu_bundle.py wrote it)
here=$(pwd)
site=/tmp/graphmert-site
if [ ! -e "$site/.unpacked" ]; then
  mkdir -p "$site" && tar -xJf "$here/{bundle}/site.tar.xz" -C "$site" && touch "$site/.unpacked" || return 1
fi
if [ ! -e ../shared ] && [ -d "$here/{bundle}/shared" ]; then ln -s "$here/{bundle}/shared" ../shared; fi
export PYTHONPATH="$site:$here${{PYTHONPATH:+:$PYTHONPATH}}"
"""


def build_site(python: str, out: Path, check: str | None) -> tuple[int, int]:
    """Download, unpack, prune, (check) and pack :data:`PACKAGES` into ``out/site.tar.xz``."""
    with tempfile.TemporaryDirectory(prefix="gpu-bundle-") as tmp:
        wheels, site = Path(tmp) / "wheels", Path(tmp) / "site"
        subprocess.run(download_command(pins(), python, wheels), check=True)
        subprocess.run(install_command(sorted(wheels.glob("*.whl")), python, site), check=True)
        sizes = prune(site)
        if check:
            env = {**os.environ, "PYTHONPATH": str(site)}
            code = "import importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in IMPORTS)
            subprocess.run([check, "-c", code], check=True, env=env)
        with tarfile.open(out / "site.tar.xz", "w:xz") as tar:
            for path in sorted(site.iterdir()):
                tar.add(path, arcname=path.name)
    return sizes


def _check_replaceable(out: Path) -> None:
    """Refuse to replace ``out`` unless it holds only what a bundle writes."""
    other = sorted(p.name for p in out.iterdir() if p.name not in _BUNDLE_FILES) if out.is_dir() else [out.name]
    if other:
        raise BundleError(f"--out {out}: exists and is not a bundle (holds {', '.join(other[:5])}); "
                          "name an empty or new folder")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="configs/biored-gpu.yaml", help="the config whose ../shared data to copy")
    ap.add_argument("--python", default="3.12", help="the GPU machine's Python (major.minor)")
    ap.add_argument("--out", default="build/gpu-bundle", help="the bundle's folder (replaced)")
    ap.add_argument("--check", metavar="PYTHON", help="a local interpreter of --python with numpy, to import "
                    "the bundle's packages with")
    args = ap.parse_args(argv)
    out = Path(args.out)
    staging = out.with_name(out.name + ".partial")             # built here, then put in place whole
    rel = os.path.relpath(out.resolve(), ROOT)
    try:
        data = shared_paths(args.config)
        if out.exists():
            _check_replaceable(out)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        before, after = build_site(args.python, staging, args.check)
        copied = copy_shared(data, ROOT.parent / "shared", staging / "shared")
        (staging / "env.sh").write_text(env_script(rel))
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except (BundleError, GraphmertError, subprocess.CalledProcessError) as e:
        print(f"gpu_bundle: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(staging, ignore_errors=True)             # an interrupted build leaves nothing
    mb = lambda n: f"{n / 2**20:.1f} MB"                      # noqa: E731
    print(f"{out}/site.tar.xz: {len(PACKAGES)} packages for Python {args.python} ({mb(before)} unpacked, "
          f"{mb(after)} pruned, {mb((out / 'site.tar.xz').stat().st_size)} packed)")
    print(f"{out}/shared: {len(data)} paths named by {args.config} ({mb(copied)})")
    print(f"On the GPU machine, with {rel} copied to the same place in the checkout there, and the run directory:\n"
          f"  source {rel}/env.sh && python3 -m pipelines.cli run --config {args.config} --run-dir RUN "
          "--to evaluate train.device=cuda")
    return 0


if __name__ == "__main__":
    sys.exit(main())
