"""The install hint names the source prefixscan was installed from, and every
message about a missing optional dependency uses it; ``prefixscan check``,
``bench`` and ``tune`` with ``--device cuda`` and no torch print it in one line
and exit 2."""

from __future__ import annotations

import shlex
import sys

import pytest

from prefixscan import _install_hint
from prefixscan._install_hint import install_command
from prefixscan.backends import triton as triton_backend
from prefixscan.cli import info_lines, main


#: What the metadata of an installed prefixscan lists (importlib.metadata.requires).
REQUIRES = ['numpy>=1.23', 'torch>=2.4; extra == "gpu"', 'triton>=3.2; extra == "gpu"',
            'numcodecs>=0.12; extra == "codecs"', 'zarr>=3; python_version >= "3.11" and extra == "codecs"',
            'dask[array,distributed]>=2024.12; extra == "dask"']


@pytest.fixture
def origin(monkeypatch):
    """Set what pip recorded (direct_url.json), whether a checkout is around and
    what the installed metadata requires (None: no metadata)."""

    def set_origin(direct_url=None, checkout=None, requires=REQUIRES):
        monkeypatch.setattr(_install_hint, "_direct_url", lambda: direct_url)
        monkeypatch.setattr(_install_hint, "_checkout_root", lambda: checkout)

        def fake_requires(name):
            if requires is None:
                raise _install_hint.metadata.PackageNotFoundError(name)
            return list(requires)

        monkeypatch.setattr(_install_hint.metadata, "requires", fake_requires)

    return set_origin


def test_unknown_source_installs_the_extras_requirements(origin):
    """prefixscan is not on PyPI: 'pip install prefixscan[gpu]' cannot work.  Where
    the source is unknown, the hint installs what the extra needs."""
    origin()
    assert install_command("gpu") == "pip install 'torch>=2.4' 'triton>=3.2'"
    command = install_command("codecs")
    assert command == """pip install 'numcodecs>=0.12' 'zarr>=3; python_version >= "3.11"'"""
    assert shlex.split(command)[2:] == ["numcodecs>=0.12", 'zarr>=3; python_version >= "3.11"']
    assert install_command("dask") == "pip install 'dask[array,distributed]>=2024.12'"
    assert "prefixscan[" not in install_command()


def test_nothing_known_names_the_checkout(origin):
    origin(requires=None)
    assert install_command("gpu") == "pip install -e '.[gpu]' (in a checkout of prefixscan: it is not on PyPI)"
    origin()
    assert install_command("nonesuch").startswith("pip install -e '.[nonesuch]' (in a checkout")


def test_editable_checkout(origin, tmp_path):
    checkout = tmp_path / "my code" / "prefixscan"
    checkout.mkdir(parents=True)
    origin({"url": checkout.as_uri(), "dir_info": {"editable": True}})
    command = install_command("gpu")
    assert "%20" in checkout.as_uri() and command == f"pip install -e '{checkout}[gpu]'"
    assert shlex.split(command) == ["pip", "install", "-e", f"{checkout}[gpu]"]


def test_local_directory_wheel_and_vcs(origin, tmp_path):
    source = tmp_path / "src" / "prefixscan"
    source.mkdir(parents=True)
    origin({"url": source.as_uri(), "dir_info": {}})
    assert install_command("bench") == f"pip install '{source}[bench]'"
    origin({"url": (tmp_path / "removed-clone").as_uri(), "dir_info": {}})
    assert install_command("gpu") == "pip install 'torch>=2.4' 'triton>=3.2'"  # the directory is gone
    wheel = tmp_path / "prefixscan-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    origin({"url": wheel.as_uri(), "archive_info": {}})
    assert install_command("gpu") == f"pip install '{wheel}[gpu]'"
    origin({"url": (tmp_path / "gone.whl").as_uri(), "archive_info": {}}, checkout=None)
    assert install_command("gpu") == "pip install 'torch>=2.4' 'triton>=3.2'"  # the wheel is gone
    origin({"url": "https://example.org/prefixscan.git",
            "vcs_info": {"vcs": "git", "commit_id": "abc", "requested_revision": "v0.1"}})
    assert install_command("gpu") == "pip install 'prefixscan[gpu] @ git+https://example.org/prefixscan.git@v0.1'"


def test_checkout_on_the_path_without_install(origin, tmp_path):
    origin(None, checkout=tmp_path)
    assert install_command("gpu") == f"pip install -e '{tmp_path}[gpu]'"


def test_this_install():
    """The test suite runs from a checkout (installed editable or on the path)."""
    command = install_command("gpu")
    assert command.startswith("pip install ") and command.endswith("[gpu]'")


def test_triton_backend_reason_names_the_command(monkeypatch):
    triton_backend._unavailable_reason.cache_clear()
    monkeypatch.setattr(triton_backend.importlib.util, "find_spec", lambda name: None)
    try:
        reason = triton_backend.unavailable_reason("cuda")
    finally:
        triton_backend._unavailable_reason.cache_clear()
    assert reason == f"torch and triton not installed: {install_command('gpu')}"


@pytest.fixture
def without_torch(monkeypatch):
    """``import torch`` fails as it does where torch is not installed."""
    monkeypatch.setitem(sys.modules, "torch", None)
    triton_backend._unavailable_reason.cache_clear()
    yield
    triton_backend._unavailable_reason.cache_clear()


def test_check_cuda_without_torch(without_torch, capsys):
    assert main(["check", "--device", "cuda", "--quick"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith("prefixscan check: --device cuda needs torch: ")
    assert install_command("gpu") in err


def test_bench_and_tune_cuda_without_torch(without_torch, capsys):
    assert main(["bench", "--device", "cuda", "--quick", "--out", "unused"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and install_command("gpu") in err, err
    assert main(["tune", "--device", "cuda"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and install_command("gpu") in err, err


def test_info_without_torch(without_torch):
    assert f"  GPU: torch not installed ({install_command('gpu')})" in info_lines()
