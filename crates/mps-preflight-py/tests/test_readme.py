"""The README's Python examples run as written (from the repository root)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from conftest import REPO

README = Path(__file__).parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_readme_has_examples() -> None:
    assert len(BLOCKS) == 3


@pytest.mark.parametrize("block", BLOCKS, ids=["native", "doctor", "compat"])
def test_a_readme_example_runs(block: str, host: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    exec(compile(block, str(README), "exec"), {})  # noqa: S102 - our own README
    assert os.getcwd() == str(REPO)
