# Type stubs of the extension module (src/module.rs). Each function answers with a tagged
# tuple that mps_preflight/__init__.py unwraps: ("ok", payload...), ("rejected", code,
# message, findings), or (kind, message) for an input that cannot be read.
from collections.abc import Callable
from typing import Any, Optional, Union

SCHEMA: str
__version__: str

_Spec = dict[str, Any]
_Answer = tuple[Any, ...]
_Adapter = Optional[Callable[..., tuple[str, int, bytes, bytes, str]]]

def probe(spec: _Spec, run_command: _Adapter = None) -> _Answer: ...
def check(spec: _Spec, *, path: Optional[str] = None, text: Optional[str] = None) -> _Answer: ...
def doctor(
    spec: _Spec,
    *,
    path: Optional[str] = None,
    text: Optional[str] = None,
    run_command: _Adapter = None,
) -> _Answer: ...
def capture(
    learner_uuid: Optional[str], timeout: float, run_command: _Adapter = None
) -> dict[str, Any]: ...
def write_manifest(path: str, evidence_json: str) -> _Answer: ...
def merge(paths: list[str]) -> _Answer: ...
def canonicalize_gpu_uuid(value: str) -> str: ...
def run_cli(argv: list[str]) -> int: ...
def run_captured(argv: list[str]) -> tuple[int, str, list[str]]: ...
