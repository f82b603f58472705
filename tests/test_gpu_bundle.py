"""scripts/gpu_bundle.py: the pinned download, the pruning, the config's shared paths, and the env.sh a
GPU machine sources (no network: the pip calls themselves are not run here)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("gpu_bundle", ROOT / "scripts" / "gpu_bundle.py")
gb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gb)


def test_pins_are_this_environments_versions_and_a_missing_package_is_named():
    assert gb.pins(["numpy", "spacy"]) == [f"numpy=={metadata.version('numpy')}",
                                           f"spacy=={metadata.version('spacy')}"]
    with pytest.raises(gb.BundleError, match="not installed in .*: no-such-package-xyz"):
        gb.pins(["numpy", "no-such-package-xyz"])


def test_every_package_the_bundle_carries_is_installed_here():
    """The bundle pins what this environment runs, so each name must be one `make install` installs."""
    assert len(gb.pins()) == len(gb.PACKAGES) == len(set(gb.PACKAGES))


def test_download_and_install_commands_target_the_other_python_and_platform(tmp_path):
    cmd = gb.download_command(["spacy==3.8.0", "rdflib==7.0.0"], "3.12", tmp_path / "w")
    assert cmd[1:4] == ["-m", "pip", "download"]
    assert "--no-deps" in cmd and "--only-binary=:all:" in cmd
    assert cmd[cmd.index("--python-version") + 1] == "3.12" and cmd[cmd.index("--implementation") + 1] == "cp"
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--platform"] == list(gb.PLATFORMS)
    assert cmd[cmd.index("-d") + 1] == str(tmp_path / "w") and cmd[-2:] == ["spacy==3.8.0", "rdflib==7.0.0"]
    inst = gb.install_command([tmp_path / "a.whl"], "3.12", tmp_path / "site")
    assert {"--no-index", "--no-deps", "--no-compile"} <= set(inst)
    assert inst[inst.index("--target") + 1] == str(tmp_path / "site") and inst[-1] == str(tmp_path / "a.whl")
    assert inst[inst.index("--python-version") + 1] == "3.12"


def _write(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_prune_removes_tests_sources_and_caches_and_keeps_code_and_metadata(tmp_path, monkeypatch):
    monkeypatch.setattr(gb.shutil, "which", lambda name: None)          # no .so here to strip
    site = tmp_path / "site"
    kept = [_write(site / "pkg" / "__init__.py"), _write(site / "pkg" / "sub" / "mod.py"),
            _write(site / "pkg-1.0.dist-info" / "METADATA"), _write(site / "pkg" / "data.json")]
    gone = [_write(site / "pkg" / "tests" / "test_a.py", "y" * 100), _write(site / "pkg" / "sub" / "test" / "t.py"),
            _write(site / "pkg" / "fast.pyx"), _write(site / "pkg" / "fast.cpp"), _write(site / "pkg" / "fast.h"),
            _write(site / "pkg" / "__pycache__" / "mod.cpython-312.pyc")]
    before, after = gb.prune(site)
    assert all(p.exists() for p in kept) and not any(p.exists() for p in gone)
    assert not (site / "pkg" / "tests").exists() and not (site / "pkg" / "__pycache__").exists()
    assert before - after == 100 + 5                                    # the removed files' bytes


@pytest.mark.skipif(shutil.which("strip") is None, reason="no strip on this machine")
def test_prune_strips_an_extension_and_it_stays_an_elf_library(tmp_path):
    import numpy

    src = next(Path(numpy.__file__).parent.glob("core/_multiarray_tests*.so"), None) or \
        next(Path(numpy.__file__).parent.rglob("_multiarray_tests*.so"))
    site = tmp_path / "site"
    so = site / src.name
    site.mkdir()
    shutil.copy2(src, so)
    before, after = gb.prune(site)
    assert so.exists() and 0 < after <= before and so.read_bytes()[:4] == b"\x7fELF"


def test_shared_paths_are_the_configs_paths_under_shared_and_must_exist(tmp_path):
    repo, shared = tmp_path / "repo", tmp_path / "shared"
    repo.mkdir()
    config = _write(repo / "c.yaml", "extract:\n  paths: [../shared/datasets/a/docs.txt, data/local.txt]\n"
                                     "evaluate:\n  gold: [../shared/datasets/a/docs.txt]\n"
                                     "kg:\n  path: ../shared/datasets/kg\n")
    with pytest.raises(gb.BundleError, match=r"c\.yaml: names \.\./shared/datasets/a/docs\.txt, which does not exist"):
        gb.shared_paths(config, root=repo)
    _write(shared / "datasets" / "a" / "docs.txt", "abc")
    _write(shared / "datasets" / "kg" / "nodes.tsv", "id\n")
    _write(shared / "datasets" / "kg" / "sub" / "edges.tsv", "s\to\n")
    paths = gb.shared_paths(config, root=repo)
    assert paths == [Path("datasets/a/docs.txt"), Path("datasets/kg")]
    out = tmp_path / "bundle" / "shared"
    assert gb.copy_shared(paths, shared, out) == 3 + 3 + 4
    assert (out / "datasets" / "a" / "docs.txt").read_text() == "abc"
    assert (out / "datasets" / "kg" / "sub" / "edges.tsv").read_text() == "s\to\n"


@pytest.mark.shared
def test_the_gpu_configs_shared_paths():
    if not (ROOT.parent / "shared" / "datasets").is_dir():
        pytest.skip("../shared/datasets is absent")
    paths = {str(p) for p in gb.shared_paths(ROOT / "configs" / "biored-gpu.yaml")}
    assert {"datasets/biored/Dev.PubTator", "datasets/biored/Train.PubTator",
            "datasets/seed_kg_hetionet_disgenet_mesh", "datasets/biomed_abstracts_corpus/abstracts.jsonl.gz"} <= paths
    assert all(p.startswith("datasets/") for p in paths)


def test_env_script_unpacks_the_packages_links_shared_and_sets_pythonpath(tmp_path):
    """Sourced in a checkout beside no ../shared: the bundle's module imports and ../shared is the
    bundle's copy; sourced again, it unpacks nothing anew (a marker) and keeps the link."""
    checkout = tmp_path / "work" / "repo"
    bundle = checkout / "build" / "gpu-bundle"
    _write(bundle / "shared" / "datasets" / "x.txt", "data")
    pkg = _write(tmp_path / "pkg" / "bundled_mod_for_test.py", "VALUE = 42\n")
    with tarfile.open(bundle / "site.tar.xz", "w:xz") as tar:
        tar.add(pkg, arcname=pkg.name)
    site = tmp_path / "site"
    script = gb.env_script("build/gpu-bundle").replace("/tmp/graphmert-site", str(site))
    (bundle / "env.sh").write_text(script)
    run = f"source build/gpu-bundle/env.sh && {sys.executable} -c 'import bundled_mod_for_test as m; print(m.VALUE)'"
    for _ in range(2):
        r = subprocess.run(["bash", "-c", run], cwd=checkout, capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.strip() == "42", r.stderr
    assert (site / ".unpacked").exists()
    assert (tmp_path / "work" / "shared" / "datasets" / "x.txt").read_text() == "data"


def test_an_existing_folder_that_is_not_a_bundle_is_never_replaced(tmp_path, capsys):
    out = tmp_path / "build"
    _write(out / "other-work.txt")
    assert gb.main(["--config", str(ROOT / "configs" / "demo.yaml"), "--out", str(out)]) == 1
    assert "exists and is not a bundle (holds other-work.txt)" in capsys.readouterr().err
    assert (out / "other-work.txt").exists()
    gb._check_replaceable(_write(tmp_path / "b" / "env.sh").parent)        # a bundle's own files: replaceable


def _fake_site(python, out, check):
    """build_site without pip: a one-module site.tar.xz."""
    module = _write(out / "src" / "m.py", "X = 1\n")
    with tarfile.open(out / "site.tar.xz", "w:xz") as tar:
        tar.add(module, arcname=module.name)
    shutil.rmtree(out / "src")
    return 10, 5


def test_a_bundle_replaces_the_old_one_whole_and_a_failed_build_leaves_nothing(tmp_path, monkeypatch, capsys):
    out = tmp_path / "build" / "gpu-bundle"
    _write(out / "env.sh", "old")
    monkeypatch.setattr(gb, "build_site", _fake_site)
    assert gb.main(["--config", str(ROOT / "configs" / "demo.yaml"), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["env.sh", "site.tar.xz"]     # the demo names no ../shared
    assert "PYTHONPATH" in (out / "env.sh").read_text() and not out.with_name("gpu-bundle.partial").exists()

    def broken(python, staging, check):
        _write(staging / "site.tar.xz", "half")
        raise subprocess.CalledProcessError(1, ["pip", "download"])

    monkeypatch.setattr(gb, "build_site", broken)
    fresh = tmp_path / "new-bundle"
    assert gb.main(["--config", str(ROOT / "configs" / "demo.yaml"), "--out", str(fresh)]) == 1
    assert "gpu_bundle: Command '['pip', 'download']'" in capsys.readouterr().err
    assert not fresh.exists() and not fresh.with_name("new-bundle.partial").exists()
