"""Safe output files: check an output path before any work, then write it atomically (``NAME.tmp``, flushed,
renamed over the target, so an interrupted run leaves the old file whole)."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import math
import os
import re
import shlex
import signal
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository this package lives in (the folder holding mi_core)


ON_STOP: list[str] = []  # what a stopped run keeps and how it goes on, for the command line's "interrupted" line


def note_on_stop(text: str | None) -> None:
    """Say ``text`` (e.g. where a checkpoint is and how to resume from it) if the run is stopped from now on."""
    ON_STOP[:] = [text] if text else []


def note_checkpoint(path: str | Path, at: str, default_out: str | Path | None = None) -> None:
    """:func:`note_on_stop` of a trainer's checkpoint ``path`` holding its run at ``at`` (``"step 200"``);
    ``default_out``: the weights path the command chose itself (no ``--out`` given), which ``--resume`` needs."""
    resume = "--resume" if default_out is None else f"--resume --out {shlex.quote(str(default_out))}"
    note_on_stop(f"{path} holds {at}: add {resume} to the same command to continue from there")


@contextlib.contextmanager
def stops_held():
    """Inside, Ctrl-C and SIGTERM wait (they are taken as soon as the block ends), so a checkpoint and the stop
    line's note of it change together: a stop between the two named an older step, or no checkpoint at all."""
    stops = (signal.SIGINT, signal.SIGTERM)
    if threading.current_thread() is not threading.main_thread() or None in map(signal.getsignal, stops):
        yield  # only the main thread takes signals; a handler set outside Python could not be put back
        return
    held: list[int] = []
    before = {sig: signal.signal(sig, lambda signum, frame: held.append(signum)) for sig in stops}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        if held:
            signal.raise_signal(held[0])


def write_checkpoint(path: str | Path, state: dict, at: str, default_out: str | Path | None = None) -> None:
    """:func:`atomic_torch_save` of a trainer's ``state`` to ``path``, then :func:`note_checkpoint`, as one step
    that a stop cannot split."""
    with stops_held():
        atomic_torch_save(path, state)
        note_checkpoint(path, at, default_out)


class OutputPathError(ValueError):
    """An output path that cannot or may not be written."""


TYPED_AS_FOLDER: set[Path] = set()  # paths typed with a trailing "/", which Path drops ("runs/" is Path("runs"))


def user_path(text: str) -> Path:
    """A path as typed: a leading ``~`` or ``~user`` is that home folder, as a shell would read it unquoted (a
    quoted ``"~/runs/x.json"`` used to make a folder named ``~`` in the working folder)."""
    path = Path(os.path.expanduser(text))
    if text.endswith(("/", os.sep)) and path != Path(os.sep):
        TYPED_AS_FOLDER.add(path)
    return path


def missing_file(path: Path, missing: str) -> str:
    """The line for an input ``path`` that is no regular file nor folder: ``"{missing}: {path}"``, naming what
    stands there instead (a link to nothing, a named pipe, a device)."""
    if path.is_symlink() and not path.exists():
        return f"{missing}: {path} is a link to {os.readlink(path)}, which does not exist"
    if path.exists():
        return f"{path} is not a regular file (a named pipe, socket or device): give a file"
    return f"{missing}: {path}"


UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")  # what a UTF-16 file starts with (Excel's "Unicode Text", Notepad's "Unicode")


def decode_text(data: bytes, name: str, error: type[Exception] = ValueError) -> str:
    """``data`` as UTF-8 text (without the byte-order mark a spreadsheet's "CSV UTF-8" starts with), line ends as
    ``\n``; ``error`` naming ``name`` and why it is not (:func:`undecodable`)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise error(undecodable(name, data, err)) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def undecodable(name: str, data: bytes, err: UnicodeDecodeError) -> str:
    """Why ``data`` (of file ``name``; at least up to ``err``'s byte) is not UTF-8 text, and what to do."""
    if data[:2] in UTF16_BOMS:
        return (f"{name} starts as UTF-16 text does (Excel's \"Unicode Text\" and Notepad's \"Unicode\" write it): "
                "save it as UTF-8")
    if b"\0" in data[: err.end + 1]:
        return f"{name} is not a text file (it holds zero bytes)"
    return (f"{name} is not UTF-8 text (byte {err.start + 1}, {data[err.start:err.start + 1]!r}: written in Latin-1 or "
            "Windows-1252?): save it as UTF-8")


def not_text(path: str | Path) -> str:
    """:func:`undecodable` of the file at ``path``, for a reader that streamed it (its error's byte counts from the
    chunk it decoded, not from the file's start)."""
    data = Path(path).read_bytes()
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        return undecodable(str(path), data, err)
    return f"{path} is not text"


MISSING_CELLS = frozenset({"na", "n/a", "#n/a", "nan", "none", "null", "-"})  # an empty CSV cell as R, pandas or Excel write it


def csv_problem(err: Exception) -> str:
    """A ``csv.Error`` in a reader's words: what in the file causes it and how to fix it."""
    text = str(err)
    if "field larger than field limit" in text:  # the rest of the file read as one quoted field
        return ("a field over 131,072 characters, longer than any input here: most often a quote mark (\") that no "
                "quote closes, which runs the rest of the file into one field; close or remove it")
    if "new-line character seen in unquoted field" in text:
        return "lines that end in a lone carriage return (an old Mac format): save it with ordinary line ends"
    return f"not readable as CSV ({text})"


def quotes_closed(lines, error: type[Exception], name: str):
    """CSV ``lines``, passed through; at their end ``error`` (naming ``name`` and the line) when a quote mark that
    opens a field is never closed: the csv module then reads the rest of the file as that one field, and its rows
    are lost without a word. A closed field holds an even number of quote marks (``""`` included); a quote inside
    an unquoted field (``5" tag``) opens none."""
    opened = None
    for no, line in enumerate(lines, start=1):
        if line.count('"') % 2:
            opened = None if opened else no
            if opened and not re.search(r'(^|,)\s*"', line):
                opened = None  # an odd quote mid-field is a literal one
        yield line
    if opened:
        raise error(f"{name}, line {opened}: a quote mark (\") opens a field that no quote closes, so the rest of "
                    "the file would be read as that one field: close or remove it")


def display_path(path: str | Path) -> str:
    """``path`` for JSON records: relative to the repository root, or to site-packages, else as given."""
    p = Path(path)
    try:
        return p.resolve().relative_to(ROOT).as_posix()
    except (ValueError, OSError):
        pass
    parts = p.parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            return Path(*parts[parts.index(marker) + 1:]).as_posix()
    return str(p)


def _check_parents(path: Path, option: str, inside: bool = False) -> None:
    """OutputPathError unless ``path`` can be made: no file among its parents, and a file can be made in the
    nearest existing one (``inside``: in ``path`` itself when it is an existing folder)."""
    parent = next((p for p in path.parents if p.exists()), None)  # None for ".", "" and "/": no parents
    if inside and path.is_dir():
        parent = path
    if parent is not None and not parent.is_dir():
        raise OutputPathError(f"{option} {path}: {parent} is a file, not a directory")
    folder = parent if parent is not None else Path(".")
    try:  # a file made and removed at once: os.access says yes to root even where nothing can be made (/proc); one
        with tempfile.TemporaryFile(dir=folder) as fh:  # byte written to disk, so a full one fails now, not after the work
            fh.write(b"\0")
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as err:
        why = f" ({err.strerror})" if err.strerror and err.errno != errno.ENOENT else ""
        raise OutputPathError(f"{option} {path}: cannot write in {folder}{why}") from None


def check_output(path: str | Path | None, force: bool = False, option: str = "--json",
                 in_place: bool = False) -> Path | None:
    """``path`` (None stays None); OutputPathError when it cannot be written or would overwrite a file without
    ``force``. ``in_place``: a file opened and written line by line (a log), where a pipe or device is written to,
    not replaced."""
    if path is None:
        return None
    path = Path(path)
    _check_parents(path, option)
    if path.is_dir():
        raise OutputPathError(f"{option} {path} is a directory; give a file name")
    if path in TYPED_AS_FOLDER:  # written as a file named "runs", as if the slash were not there
        raise OutputPathError(f"{option} {path}{os.sep} ends in {os.sep}, a folder's name; give a file name")
    if path.exists() and not path.is_file() and not in_place:  # the atomic write would replace the pipe or device with a file
        raise OutputPathError(f"{option} {path} is not a regular file (a named pipe, socket or device); give a file")
    if path.is_symlink() and not path.exists() and not force:  # the write would replace the link itself
        raise OutputPathError(f"{option} {path} already exists, a link to {os.readlink(path)} (which does not "
                              "exist); pass --force to overwrite the link")
    if path.exists() and not force:
        raise OutputPathError(f"{option} {path} already exists; pass --force to overwrite it")
    return path


def check_weights_output(path: str | Path | None, force: bool = False, beside: tuple[str, ...] = ()) -> Path | None:
    """:func:`check_output` for a weights file: it ends in ``.safetensors``, and the files a run writes beside it (its
    ``.json`` and those named ``<stem><tail>`` for each tail in ``beside``) are not overwritten without ``force``."""
    path = check_output(path, force, "--out")
    if path is None:  # the command names one of its own in runs/ later
        return None
    if path.suffix != ".safetensors":
        raise OutputPathError(f"--out {path}: a weights file ends in .safetensors (its config goes beside it in "
                              f"{path.stem}.json)")
    for tail in (".json", *beside):
        other = path.with_name(path.stem + tail)
        if other.exists() and not force:
            raise OutputPathError(f"--out {path}: {other}, which this run writes beside it, already exists; pass "
                                  "--force to overwrite it")
    return path


def check_writable(path: str | Path, option: str = "--out") -> Path:
    """``path`` (a file a run goes on writing, such as a resumed run's weights); OutputPathError when its folder
    cannot be written (read-only, no permission)."""
    _check_parents(Path(path), option)
    return Path(path)


def check_output_dir(path: str | Path, option: str = "--out") -> Path:
    """``path``; OutputPathError when it is or lies under a file (an existing folder is fine: commands resume)."""
    path = Path(path)
    _check_parents(path, option, inside=True)
    if path.exists() and not path.is_dir():
        raise OutputPathError(f"{option} {path} is a file; give a folder")
    return path


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, owned by another user
        return True
    return True


@contextlib.contextmanager
def run_lock(out: str | Path, option: str = "--out", lock: Path | None = None):
    """Hold ``<out>.lock`` (the process id) while a run writes ``out`` and the files beside it. A second run of the
    same ``out`` passes the output checks while the first has written nothing yet (or with ``--force``, or as a
    second ``--resume``); it is refused here, naming the first's process. A lock whose process is gone (a killed
    run) is taken over. Under torchrun only rank 0 takes it. ``lock``: another lock file (a folder's, inside it)."""
    if os.environ.get("RANK", "0") != "0":
        yield
        return
    lock = lock or Path(out).with_name(Path(out).name + ".lock")
    made = [folder for folder in (lock.parent, *lock.parent.parents) if not folder.exists()]  # deepest first
    lock.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(3):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            break
        except FileExistsError:
            text = lock.read_text(errors="replace").strip() if lock.is_file() else ""
            just_made = not text and lock.is_file() and time.time() - lock.stat().st_mtime < 10  # its id comes next
            if (text.isdigit() and _running(int(text))) or just_made:
                raise OutputPathError(f"{option} {out}: another run (process {text or '?'}) is writing it and the files "
                                      f"beside it; wait for it or stop it, or give another {option} (no such run: "
                                      f"delete {lock})") from None
            lock.unlink(missing_ok=True)  # left by a run that is gone
    else:
        raise OutputPathError(f"{option} {out}: cannot take its lock {lock}")
    with os.fdopen(fd, "w") as handle:
        handle.write(str(os.getpid()))
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)
        for folder in made:  # made for the lock alone: a run that stopped before writing leaves no empty folder
            try:
                folder.rmdir()
            except OSError:
                break


def tmp_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".tmp")


def write_tmp_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path``'s temporary name, flushed to disk; return that name."""
    tmp = tmp_path(path)
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    return tmp


def commit(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` over ``path`` (atomic on one file system) and flush the folder entry."""
    os.replace(tmp, path)
    with contextlib.suppress(OSError):
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def cannot_write(path: str | Path, err: OSError) -> OutputPathError:
    """The one line for a write of ``path`` that failed: a full disk, a read-only folder, a size limit."""
    return OutputPathError(f"cannot write {path}: {err.strerror or err}")


def atomic_write_text(path: str | Path, text: str) -> None:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one, never a part; an interrupted write
    (Ctrl-C) leaves no temporary file either."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        commit(write_tmp_bytes(path, data), path)
    except OSError as err:  # named by the path asked for, not its temporary name
        raise cannot_write(path, err) from None
    finally:
        with contextlib.suppress(OSError):  # only left when the write failed; gone or unreachable otherwise
            tmp_path(path).unlink(missing_ok=True)


def append_text(path: str | Path, text: str) -> None:
    """Append ``text`` to the file ``path`` in one write, flushed to disk (a kill cuts only its end short); a failed
    write (a full disk) raises OutputPathError naming ``path``."""
    try:
        with open(path, "ab") as fh:
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as err:
        raise cannot_write(path, err) from None


def json_ready(obj):
    """``obj`` for strict JSON: NaN and infinity become None (``json.dumps`` wrote ``NaN``, which strict readers
    refuse), numpy arrays lists and its scalars Python numbers."""
    if type(obj).__module__ == "numpy":
        obj = obj.tolist()
    if isinstance(obj, dict):
        return {json_ready(k): json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(v) for v in obj]
    return None if isinstance(obj, float) and not math.isfinite(obj) else obj


def atomic_write_json(path: str | Path, obj, indent: int | None = 2) -> None:
    """:func:`atomic_write_text` of ``obj`` as strict JSON (:func:`json_ready`)."""
    atomic_write_text(path, json.dumps(json_ready(obj), indent=indent, allow_nan=False) + "\n")


def atomic_torch_save(path: str | Path, obj) -> None:
    """``torch.save`` of ``obj`` into ``path`` by :func:`atomic_write_bytes`: whole or not at all, and a full disk
    is one OutputPathError naming ``path`` (torch.save into a file raised a RuntimeError and left part of it)."""
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    atomic_write_bytes(path, buffer.getvalue())


@contextlib.contextmanager
def line_log(path: str | Path):
    """A function that writes one line to ``path`` (replaced) and flushes it; a write that fails (a full disk)
    raises OutputPathError naming ``path``. The file is opened at the first line: a run stopped before it leaves
    no empty log that would make the same command ask for --force (and keeps an old log it would replace)."""
    handle = []

    def write(line: str) -> None:
        try:
            if not handle:
                handle.append(open(path, "w"))
            handle[0].write(line + "\n")
            handle[0].flush()
        except OSError as err:
            raise cannot_write(path, err) from None

    try:
        yield write
    finally:
        with contextlib.suppress(OSError):  # a line the disk refused is still buffered: closing cannot flush it
            for fh in handle:
                fh.close()


def default_run_path(stem: str, suffix: str = ".safetensors") -> Path:
    """``runs/STEM_YYYYmmdd-HHMMSS.safetensors``: a trainer's default ``--out`` (never the shipped weights)."""
    return Path("runs") / f"{stem}_{time.strftime('%Y%m%d-%H%M%S')}{suffix}"


_SHA256: dict[tuple[str, float, int], str] = {}


def file_sha256(path: str | Path) -> str:
    """The sha256 of a file, computed once per (path, modification time, size)."""
    stat = Path(path).stat()
    key = (str(Path(path).resolve()), stat.st_mtime, stat.st_size)
    if key not in _SHA256:
        _SHA256[key] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return _SHA256[key]


class UnreadableFile(ValueError):
    """A file ``torch.load`` cannot read as tensors; its text is torch's reason in one line."""


def torch_load(path: str | Path, device="cpu"):
    """``torch.load`` of ``path``, tensors only (never unpickles code). A cut, foreign or garbage file (torch
    raises OSError, EOFError, UnpicklingError, RuntimeError...) raises :class:`UnreadableFile`."""
    import torch

    try:
        return torch.load(path, map_location=device, weights_only=True)
    except Exception as err:  # noqa: BLE001
        # torch's text runs over lines and suggests weights_only=False (never for a file of unknown origin):
        # its reason is the line after "WeightsUnpickler error:", else the first
        lines = [line.strip() for line in str(err).splitlines() if line.strip()]
        after = [b for a, b in zip(lines, lines[1:]) if a.endswith("WeightsUnpickler error:")]
        raise UnreadableFile((after or lines or [type(err).__name__])[0][:160]) from None


def read_checkpoint(path: Path, keys: tuple[str, ...], device="cpu") -> dict:
    """A trainer's ``--resume`` checkpoint at ``path``; ValueError naming the file when it is not one whole
    checkpoint of this trainer (a dict with every name in ``keys``)."""
    try:
        state = torch_load(path, device)
    except UnreadableFile as err:
        raise ValueError(f"--resume: {path} is not a readable checkpoint (torch.load: {err}): a run writes it "
                         "whole or not at all, so it was cut or replaced after: restore a whole copy, or start "
                         "again with --force") from None
    missing = [k for k in keys if k not in state] if isinstance(state, dict) else list(keys)
    if missing:
        raise ValueError(f"--resume: {path} is not a checkpoint of this trainer (it has no {', '.join(missing)})")
    return state
