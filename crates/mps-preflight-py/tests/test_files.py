"""`write_manifest` goes through the one atomic writer, and its error says
what failed and the file's state, as the command line's does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import mps_preflight

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "hosts" / "healthy-socket-with-server.json"


def _evidence() -> mps_preflight.Evidence:
    return mps_preflight.check(
        FIXTURE, "mps", "cuda:0", "cuda:0", backend="mjwarp"
    )


def test_a_failed_write_says_the_files_state(tmp_path: Path) -> None:
    evidence = _evidence()
    with pytest.raises(mps_preflight.ManifestError, match=r"; no file was created$"):
        mps_preflight.write_manifest(tmp_path / "missing" / "m.json", evidence)
    target = tmp_path / "target.json"
    target.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with pytest.raises(mps_preflight.ManifestError, match=r"symbolic link.*; it was left unchanged$"):
        mps_preflight.write_manifest(link, evidence)
    assert target.read_text() == "{}"


def test_a_written_manifest_never_carries_set_id_bits(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text("{}")
    path.chmod(0o6755)
    mps_preflight.write_manifest(path, _evidence())
    assert os.stat(path).st_mode & 0o7777 == 0o755
