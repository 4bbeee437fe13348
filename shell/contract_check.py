"""Independent validator of the provider-wire contracts (docs/loop.md#wire-contracts).

Shares no code with the wire modules: it reads manifests, hashes files, collects the event types the
streams use, and compares released folders against git history. Run as
``python -m metaharness.shell.contract_check [VECTORS_DIR]``; exit 0 when every contract holds.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

MANIFEST_KEYS = ("wire", "version", "endpoint_path", "terminal", "accepted_events", "files")
TERMINALS = ("done-sentinel", "message-stop")
PACKAGE_MARKER = "__init__.py"


def contract_folders(root: Path) -> list[Path]:
    """Every ``<wire>/<version>/`` folder holding a manifest."""
    return sorted(path.parent for path in root.glob("*/*/manifest.json"))


def stream_event_types(data: bytes) -> set[str]:
    """The ``type`` of every JSON ``data:`` payload of an SSE byte stream (blank-line separated events)."""
    types: set[str] = set()
    text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    for block in text.split("\n\n"):
        payload = "\n".join(
            line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")
        )
        if not payload or payload == "[DONE]":
            continue
        value = json.loads(payload)
        if isinstance(value, dict) and isinstance(value.get("type"), str):
            types.add(value["type"])
    return types


def check_folder(folder: Path, declared: set[str] | None) -> list[str]:
    """Problems of one contract folder: manifest shape, digests, inventory, stream/event pairs."""
    problems: list[str] = []
    where = f"{folder.parent.name}/{folder.name}"
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return [f"{where}: manifest.json cannot be read: {error}"]
    missing = [key for key in MANIFEST_KEYS if key not in manifest]
    if missing:
        return [f"{where}: manifest lacks {', '.join(missing)}"]
    if manifest["wire"] != folder.parent.name or manifest["version"] != folder.name:
        problems.append(f"{where}: manifest names {manifest['wire']}/{manifest['version']}")
    if manifest["terminal"] not in TERMINALS:
        problems.append(f"{where}: terminal {manifest['terminal']!r} is not one of {', '.join(TERMINALS)}")
    files: dict[str, str] = manifest["files"]
    on_disk = {p.name for p in folder.iterdir() if p.is_file() and p.name not in ("manifest.json", PACKAGE_MARKER)}
    for name in sorted(on_disk - set(files)):
        problems.append(f"{where}: {name} is not listed in the manifest")
    for required in ("request.body", "request.headers.json"):
        if required not in files:
            problems.append(f"{where}: {required} is missing")
    used: set[str] = set()
    for name, digest in sorted(files.items()):
        path = folder / name
        if not path.is_file():
            problems.append(f"{where}: {name} is listed but absent")
            continue
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != digest:
            problems.append(f"{where}: {name} does not match its sha256")
        if name.endswith(".sse"):
            used |= stream_event_types(data)
            if name.removesuffix(".sse") + ".events.jsonl" not in files:
                problems.append(f"{where}: {name} has no .events.jsonl")
    if not any(name.endswith(".sse") for name in files):
        problems.append(f"{where}: no stream-*.sse")
    body = folder / "request.body"
    if "request.body" in files and body.is_file() and not body.read_bytes().endswith(b"\n"):
        problems.append(f"{where}: request.body lacks its trailing newline")
    accepted = manifest["accepted_events"]
    if accepted != sorted(set(accepted)):
        problems.append(f"{where}: accepted_events is not sorted and unique")
    expected = used | (declared if declared is not None else set(accepted))
    if set(accepted) != expected:
        problems.append(
            f"{where}: accepted_events differs from the streams and the decoder by {sorted(set(accepted) ^ expected)}"
        )
    return problems


def _git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    return result.stdout if result.returncode == 0 else ""


def check_released(folder: Path, repo: Path, branch: str = "main") -> list[str]:
    """A folder already on ``branch`` must equal its first released form, byte for byte."""
    relative = folder.resolve().relative_to(repo.resolve()).as_posix()
    first = _git(repo, "log", branch, "--diff-filter=A", "--format=%H", "--", f"{relative}/manifest.json").split()
    if not first:
        return []
    release = first[-1]
    problems: list[str] = []
    released = set(_git(repo, "ls-tree", "-r", "--name-only", release, "--", relative).split())
    present = {p.relative_to(repo.resolve()).as_posix() for p in folder.resolve().iterdir() if p.is_file()}
    for name in sorted(released | present):
        blob = subprocess.run(["git", "-C", str(repo), "show", f"{release}:{name}"], capture_output=True, check=False)
        path = repo / name
        if name not in present:
            problems.append(f"{name} was released in {release[:12]} and is gone")
        elif blob.returncode != 0:
            problems.append(f"{name} was added to a released contract (released in {release[:12]})")
        elif blob.stdout != path.read_bytes():
            problems.append(f"{name} changed after its release in {release[:12]}; cut a new version folder")
    tip = _git(repo, "ls-tree", "-r", "--name-only", branch, "--", relative).split()
    for name in tip:
        if name not in released:
            problems.append(f"{name} was added on {branch} to a released contract")
    return problems


def check_all(root: Path, repo: Path, declared: Callable[[str], set[str] | None]) -> list[str]:
    """Every problem of every contract under ``root``."""
    problems: list[str] = []
    folders = contract_folders(root)
    if not folders:
        return [f"{root}: no contract folders"]
    for folder in folders:
        problems += check_folder(folder, declared(folder.parent.name))
        problems += check_released(folder, repo)
    return problems


def _declared_by_decoder(wire: str) -> set[str] | None:
    """The decoder's declared inventory, read as data from the module named after the wire."""
    try:
        module = importlib.import_module(f"metaharness.pure.wires.{wire.replace('-', '_')}")
    except ImportError:
        return None
    return set(getattr(module, "ACCEPTED_EVENTS", set()))


def main(argv: list[str] | None = None) -> int:
    """Check every contract; print problems; exit 1 if any."""
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent / "vectors" / "provider-wires"
    repo = Path(_git(root, "rev-parse", "--show-toplevel").strip() or ".")
    problems = check_all(root, repo, _declared_by_decoder)
    for problem in problems:
        print(f"contract: {problem}", file=sys.stderr)
    if not problems:
        print(f"contract: {len(contract_folders(root))} contract(s) hold")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
